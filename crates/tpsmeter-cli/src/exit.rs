//! The process exit statuses, for scripts and CI (also listed in `tpsmeter bench --help`).

use std::process::ExitCode;

/// What the run concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Every SLO held, or none was given.
    Ok,
    /// Usage or set-up error (bad arguments, unreadable prompt file, unwritable output).
    Usage,
    /// Some level's goodput was below 100% of its requests: an SLO failed.
    SloFailed,
    /// Some level finished without a single successful request: nothing was measured.
    AllFailed,
    /// Interrupted by Ctrl-C; the report of what finished was still written.
    Interrupted,
}

impl Status {
    pub fn code(self) -> u8 {
        match self {
            Status::Ok => 0,
            Status::Usage => 1,
            Status::SloFailed => 2,
            Status::AllFailed => 3,
            Status::Interrupted => 130,
        }
    }
}

impl From<Status> for ExitCode {
    fn from(s: Status) -> ExitCode {
        ExitCode::from(s.code())
    }
}
