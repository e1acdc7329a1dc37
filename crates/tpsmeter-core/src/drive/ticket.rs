//! What the driver tells its caller to do next.

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
