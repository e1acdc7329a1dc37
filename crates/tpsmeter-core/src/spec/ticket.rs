//! What the load driver tells its caller to do next ([`Action`]), and the request it hands
//! out ([`Ticket`]): the run's protocol between the driver and whoever sends requests (the
//! CLI's HTTP loop, the page's `fetch` loop), on the floor so that the request and
//! conversation code that reads a ticket does not import the driver.

use crate::load::LoadLevel;

/// A request the caller is to start now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ticket {
    /// Unique in the run, in start order; the record's `id`.
    pub id: u64,
    /// Position of the level in the run (0-based).
    pub level_index: usize,
    pub level: LoadLevel,
    pub warmup: bool,
    /// Open loop: when the schedule wanted it sent (ms on the run's clock).
    pub scheduled_ms: Option<f64>,
}

/// What the caller does next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    /// Start this request now, then call `next` again.
    Start(Ticket),
    /// Nothing to start before `until_ms`; wake then or when a request finishes.
    Sleep { until_ms: f64 },
    /// Wait for a request to finish.
    Wait,
    /// The run is over: build the report.
    Done,
}
