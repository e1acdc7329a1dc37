//! Where a run stands, for progress displays.

/// Where the run stands, for progress displays.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    pub level_index: usize,
    pub levels: usize,
    pub warmup: bool,
    pub started: u64,
    pub completed: u64,
    pub failed: u64,
    pub in_flight: u32,
    /// The phase's request target, when count-limited.
    pub target: Option<u64>,
}
