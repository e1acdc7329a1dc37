//! What a find-max search concluded, as the report's `find_max` holds it: the highest load
//! that met the SLO, why the search stopped, and every level's judgement (the curve).

use serde::{Deserialize, Serialize};

use crate::load::LoadLevel;

/// Why the search stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FindMaxStop {
    /// A load missed the SLO, and the highest load that met it is within the resolution of
    /// the lowest that missed it.
    SloBroken,
    /// A load met the SLO but its goodput rose by no more than `min_gain_pct` over a lower
    /// load's: more load bought latency, not answers.
    GoodputFlat,
    /// The highest load allowed (`max_load`) met the SLO: the server may take more.
    MaxLoad,
    /// The search ran `max_levels` levels before it converged.
    MaxLevels,
    /// More than half of a level's requests failed: the server fails rather than slows, so
    /// the search goes neither higher nor between.
    Errors,
    /// The first load already missed the SLO: no load met it.
    NeverMet,
    /// The run was interrupted; the level cut short is not judged.
    Cancelled,
}

impl FindMaxStop {
    /// The snake_case name, as the report writes it.
    pub fn name(self) -> &'static str {
        match self {
            FindMaxStop::SloBroken => "slo_broken",
            FindMaxStop::GoodputFlat => "goodput_flat",
            FindMaxStop::MaxLoad => "max_load",
            FindMaxStop::MaxLevels => "max_levels",
            FindMaxStop::Errors => "errors",
            FindMaxStop::NeverMet => "never_met",
            FindMaxStop::Cancelled => "cancelled",
        }
    }
}

/// One level as the search judged it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FindMaxStep {
    pub level: LoadLevel,
    /// Requests that ended in the level's phase, failed, and met every SLO.
    pub completed: u64,
    pub failed: u64,
    pub met: u64,
    /// `met / completed` (failed requests count as not met); null when none completed.
    pub attainment: Option<f64>,
    /// Requests meeting every SLO per second of the level's phase.
    pub goodput_per_s: Option<f64>,
    /// Whether the level met the SLO: `attainment ≥ attainment_pct / 100`.
    pub passed: bool,
    /// A level that passed: how much its goodput rose over the best of the lower levels
    /// that passed, in percent; null for the first to pass.
    pub gain_pct: Option<f64>,
}

/// The search's conclusion: the report's `find_max`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FindMaxVerdict {
    /// The highest load that met the SLO; null when none did.
    pub max_load: Option<LoadLevel>,
    /// Goodput at `max_load`, requests/s.
    pub max_load_goodput_per_s: Option<f64>,
    /// The lowest load that met the SLO with a goodput within `min_gain_pct` of the best:
    /// where adding load stopped paying.
    pub knee: Option<LoadLevel>,
    /// The highest goodput of a level that met the SLO, requests/s.
    pub best_goodput_per_s: Option<f64>,
    /// The lowest load that missed the SLO, when one did.
    pub lowest_failing: Option<LoadLevel>,
    pub stop: FindMaxStop,
    /// The verdict in one sentence, as the CLI and the page print it.
    pub message: String,
    /// Every judged level, in run order (`levels[i]` of the report is `steps[i]`, except a
    /// last level cut short by an interruption, which is not judged).
    pub steps: Vec<FindMaxStep>,
}
