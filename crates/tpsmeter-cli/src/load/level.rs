//! What one level of the sweep runs, and what it hands back.

use std::time::Duration;

use crate::runner::Outcome;
use tpsmeter_core::plan::{LoadLevel, StopCondition};

/// Longest pause a worker takes after a 429 before its next request, whatever
/// `Retry-After` asks for: a benchmark should not sit idle for an hour.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// One level of the sweep.
#[derive(Debug, Clone)]
pub struct LevelSpec {
    /// Position in the sweep (0-based).
    pub index: usize,
    pub load: LoadLevel,
    /// Requests in flight (closed loop) or the cap on them (open loop).
    pub concurrency: u32,
    pub stop: StopCondition,
    /// Warm-up requests: recorded, excluded from summaries.
    pub warmup: bool,
}

/// One finished request.
#[derive(Debug, Clone)]
pub struct Completed {
    /// The level's index in the sweep.
    pub level: usize,
    pub warmup: bool,
    /// Order in which the request was started within its level (0-based).
    pub seq: u64,
    /// Open loop: when the schedule wanted it sent (ms from the run's origin); the gap to
    /// the actual start is queueing in the client (the concurrency cap was reached).
    pub scheduled_ms: Option<f64>,
    pub outcome: Outcome,
}

/// When a level ran, on the run's clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelTiming {
    pub start_ms: f64,
    pub end_ms: f64,
    /// Whether Ctrl-C stopped it early.
    pub interrupted: bool,
}

/// How long a worker should pause after `outcome`: the server's `Retry-After` on a 429
/// (capped at [`MAX_BACKOFF`]), else not at all.
pub fn backoff_after(outcome: &Outcome) -> Option<Duration> {
    let secs = outcome.failure.as_ref()?.retry_after_s()?;
    Some(Duration::from_secs_f64(secs.min(MAX_BACKOFF.as_secs_f64())))
}
