//! What a find-max search may do: [`FindMaxOptions`] as the caller asks for it (the CLI's
//! `--find-max` flags, `bench({ findMax })`), and [`FindMaxConfig`], the same resolved
//! against the run's first level, as the report's config records it.

use serde::{Deserialize, Serialize};

use crate::error::{CoreError, Result};
use crate::load::{LoadLevel, MAX_CONCURRENCY, MAX_LEVELS, MAX_RATE_PER_S};

/// Levels a search runs at most, unless told otherwise: doubling from 1 reaches 64 in 7,
/// which leaves 5 to bisect between the last load that met the SLO and the first that did
/// not.
pub const DEFAULT_MAX_LEVELS: u32 = 12;
/// The highest load tried, unless told otherwise: 1024 streams, or 1024 requests/s.
pub const DEFAULT_MAX_LOAD: f64 = 1024.0;
/// Goodput must rise by more than this, in percent, over every lower load that met the SLO,
/// or the search stops: more load then buys latency, not answers.
pub const DEFAULT_MIN_GAIN_PCT: f64 = 10.0;
/// The share of a level's requests, in percent, that must meet every SLO for the level to
/// meet it (GuideLLM's goodput profile uses the same 95%: a p95 within each limit).
pub const DEFAULT_ATTAINMENT_PCT: f64 = 95.0;
/// Bisection stops once the lowest load that missed the SLO is within this many percent
/// (or one stream) of the highest that met it.
pub const RESOLUTION_PCT: f64 = 10.0;
/// Largest accepted `min_gain_pct`: beyond 1000% (11 ×) no doubling could ever pass.
const MAX_GAIN_PCT: f64 = 1000.0;

/// `--find-max` / `findMax`: the search's limits; unset ones take the defaults above. In
/// `bench()`, `findMax: true` is all defaults and `false` is no search.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
// `bench()`'s name for them (`findMax: { ... }`), in the generated TypeScript.
#[schemars(rename = "FindMaxLimits")]
pub struct FindMaxOptions {
    /// The highest load tried: streams, or requests/s with `rate` (default 1024).
    pub max_load: Option<f64>,
    /// Levels run at most, every level counted (default 12, at most 64).
    pub max_levels: Option<u32>,
    /// Goodput must rise by more than this percentage for the load to keep doubling
    /// (default 10).
    pub min_gain_pct: Option<f64>,
    /// Percentage of a level's requests that must meet every SLO for the level to meet it
    /// (default 95).
    pub attainment_pct: Option<f64>,
}

/// The search as it ran: the report's `config.find_max`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FindMaxConfig {
    /// The first level run (`--concurrency` or `--rate`, 1 stream by default).
    pub start: LoadLevel,
    /// The highest load tried (streams, or requests/s).
    pub max_load: f64,
    /// Levels run at most.
    pub max_levels: u32,
    /// Goodput had to rise by more than this percentage to go on.
    pub min_gain_pct: f64,
    /// Percent of a level's requests that had to meet every SLO.
    pub attainment_pct: f64,
    /// Bisection stopped once the bracket was this narrow, in percent (or one stream).
    pub resolution_pct: f64,
}

impl FindMaxOptions {
    /// The search from `start` with these limits; errors name the offending option.
    pub fn resolve(&self, start: LoadLevel) -> Result<FindMaxConfig> {
        let bad = |input: String, reason: String| CoreError::InvalidSpec {
            what: "find-max",
            input,
            reason,
        };
        let ceiling = match start {
            LoadLevel::Concurrency(_) => f64::from(MAX_CONCURRENCY),
            LoadLevel::Rate(_) => MAX_RATE_PER_S,
        };
        let max_load = self.max_load.unwrap_or(DEFAULT_MAX_LOAD.max(start.value()));
        if !(max_load.is_finite() && max_load >= start.value() && max_load <= ceiling) {
            return Err(bad(
                format!("max load {max_load}"),
                format!(
                    "must be at least the start ({}) and at most {ceiling}",
                    start.value()
                ),
            ));
        }
        if matches!(start, LoadLevel::Concurrency(_)) && max_load.fract() != 0.0 {
            return Err(bad(
                format!("max load {max_load}"),
                "must be a whole number of streams".into(),
            ));
        }
        let max_levels = self.max_levels.unwrap_or(DEFAULT_MAX_LEVELS);
        if max_levels == 0 || max_levels as usize > MAX_LEVELS {
            return Err(bad(
                format!("max levels {max_levels}"),
                format!("must be between 1 and {MAX_LEVELS}"),
            ));
        }
        let min_gain_pct = self.min_gain_pct.unwrap_or(DEFAULT_MIN_GAIN_PCT);
        if !(min_gain_pct.is_finite() && (0.0..=MAX_GAIN_PCT).contains(&min_gain_pct)) {
            return Err(bad(
                format!("min gain {min_gain_pct}%"),
                format!("must be between 0 and {MAX_GAIN_PCT} percent"),
            ));
        }
        let attainment_pct = self.attainment_pct.unwrap_or(DEFAULT_ATTAINMENT_PCT);
        if !(attainment_pct.is_finite() && attainment_pct > 0.0 && attainment_pct <= 100.0) {
            return Err(bad(
                format!("attainment {attainment_pct}%"),
                "must be above 0 and at most 100 percent".into(),
            ));
        }
        Ok(FindMaxConfig {
            start,
            max_load,
            max_levels,
            min_gain_pct,
            attainment_pct,
            resolution_pct: RESOLUTION_PCT,
        })
    }
}
