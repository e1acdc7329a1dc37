//! What load to offer: the levels of a run, when each stops, warm-up, and open-loop arrival
//! schedules.
//!
//! A *level* is either a fixed concurrency (closed loop: a new request starts as soon as one
//! of the `c` in flight ends) or an arrival rate (open loop: requests start on a Poisson
//! schedule whether or not earlier ones have finished, as vLLM's `--request-rate` does).
//! The plan only describes the load; the caller drives the clock and the network.
//!
//! Arrival schedules come from a seeded ChaCha8 generator, so a seed reproduces the same
//! schedule on every platform, wasm32 included (no OS entropy involved). ChaCha8 rather than
//! `StdRng` or `SmallRng`: `StdRng`'s algorithm may change between `rand` releases and
//! `SmallRng` differs between 32- and 64-bit targets, either of which would silently change
//! a published schedule.
//!
//! Gaps are drawn by inverse transform, `−ln(1 − u) / λ`, rather than with `rand_distr`'s
//! ziggurat `Exp`: the ziggurat accepts or rejects draws by comparing against `exp()`, and a
//! last-bit difference between two platforms' maths libraries at such a comparison would
//! desynchronise every later gap. With inverse transform each gap consumes exactly one draw,
//! so platforms can differ at most in a gap's last bit, never in the sequence.

use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::error::{CoreError, Result};

/// Cap on a level list's length and each level's concurrency: bounds what one spec string
/// can make the caller allocate or spawn.
pub const MAX_LEVELS: usize = 64;
pub const MAX_CONCURRENCY: u32 = 100_000;
/// Cap on the length of one arrival schedule (80 MB of offsets at most).
pub const MAX_ARRIVALS: usize = 10_000_000;
/// Slowest accepted arrival rate (one request per ~11.6 days): far below it the mean gap in
/// ms overflows towards infinity, and such a schedule means nothing anyway.
pub const MIN_RATE_PER_S: f64 = 1e-6;
/// Fastest accepted open-loop rate, requests per second.
pub const MAX_RATE_PER_S: f64 = 1e6;
/// Cap on a level spec string.
const MAX_SPEC_LEN: usize = 1024;

/// One load level of a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LoadLevel {
    /// Closed loop: this many requests in flight at all times.
    Concurrency(u32),
    /// Open loop: Poisson arrivals at this many requests per second.
    Rate(f64),
}

impl LoadLevel {
    /// The level as a number: the concurrency, or the rate in requests per second.
    pub fn value(self) -> f64 {
        match self {
            LoadLevel::Concurrency(c) => f64::from(c),
            LoadLevel::Rate(r) => r,
        }
    }

    /// `"concurrency"` or `"rate"`: the CSV column value and table heading.
    pub fn kind(self) -> &'static str {
        match self {
            LoadLevel::Concurrency(_) => "concurrency",
            LoadLevel::Rate(_) => "rate",
        }
    }
}

impl std::fmt::Display for LoadLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadLevel::Concurrency(c) => write!(f, "c={c}"),
            LoadLevel::Rate(r) => write!(f, "rate={r}/s"),
        }
    }
}

/// When one level's measured phase ends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopCondition {
    /// After this many measured (non-warm-up) requests have been started.
    Requests(u64),
    /// After this many seconds; requests still in flight then are let finish (or time out)
    /// but only those completed inside the phase count towards its throughput.
    DurationS(f64),
}

/// The load a run offers: levels in the order run, each stopped by `stop`, each preceded by
/// `warmup` requests that are recorded but excluded from every summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadPlan {
    pub levels: Vec<LoadLevel>,
    pub stop: StopCondition,
    pub warmup: u32,
}

impl LoadPlan {
    /// A closed-loop plan from a concurrency list such as `"1,10,25,50"`.
    pub fn concurrency(spec: &str, stop: StopCondition, warmup: u32) -> Result<LoadPlan> {
        validate_stop(stop)?;
        let levels = parse_concurrency_levels(spec)?
            .into_iter()
            .map(LoadLevel::Concurrency)
            .collect();
        Ok(LoadPlan {
            levels,
            stop,
            warmup,
        })
    }

    /// An open-loop plan from a rate list such as `"0.5,2,8"` (requests per second).
    pub fn rates(spec: &str, stop: StopCondition, warmup: u32) -> Result<LoadPlan> {
        validate_stop(stop)?;
        let levels = parse_rates(spec)?
            .into_iter()
            .map(LoadLevel::Rate)
            .collect();
        Ok(LoadPlan {
            levels,
            stop,
            warmup,
        })
    }
}

fn validate_stop(stop: StopCondition) -> Result<()> {
    let ok = match stop {
        StopCondition::Requests(n) => n > 0,
        StopCondition::DurationS(s) => s.is_finite() && s > 0.0,
    };
    if ok {
        Ok(())
    } else {
        Err(CoreError::InvalidSpec {
            what: "stop condition",
            input: format!("{stop:?}"),
            reason: "must be a positive request count or duration".into(),
        })
    }
}

/// Parses a comma-separated list of concurrencies, e.g. `"1,10,25,50"`, kept in the order
/// given. Each must be an integer in `1..=MAX_CONCURRENCY`.
pub fn parse_concurrency_levels(spec: &str) -> Result<Vec<u32>> {
    parse_list(spec, "concurrency list", |part| {
        let c: u32 = part
            .parse()
            .map_err(|_| format!("{part:?} is not a whole number"))?;
        if c == 0 || c > MAX_CONCURRENCY {
            return Err(format!("{c} is outside 1..={MAX_CONCURRENCY}"));
        }
        Ok(c)
    })
}

/// Parses a comma-separated list of positive, finite arrival rates in requests per second.
pub fn parse_rates(spec: &str) -> Result<Vec<f64>> {
    parse_list(spec, "rate list", |part| {
        let r: f64 = part
            .parse()
            .map_err(|_| format!("{part:?} is not a number"))?;
        if !(r.is_finite() && r >= MIN_RATE_PER_S) {
            return Err(format!(
                "{part:?} must be a rate of at least {MIN_RATE_PER_S}/s"
            ));
        }
        Ok(r)
    })
}

fn parse_list<T>(
    spec: &str,
    what: &'static str,
    item: impl Fn(&str) -> std::result::Result<T, String>,
) -> Result<Vec<T>> {
    let bad = |reason: String| CoreError::InvalidSpec {
        what,
        input: spec.chars().take(80).collect(),
        reason,
    };
    if spec.len() > MAX_SPEC_LEN {
        return Err(bad(format!("longer than {MAX_SPEC_LEN} bytes")));
    }
    if spec.trim().is_empty() {
        return Err(bad("empty".into()));
    }
    let parts: Vec<&str> = spec.split(',').map(str::trim).collect();
    if parts.len() > MAX_LEVELS {
        return Err(bad(format!("more than {MAX_LEVELS} levels")));
    }
    parts
        .into_iter()
        .map(|p| {
            if p.is_empty() {
                Err(bad("empty entry".into()))
            } else {
                item(p).map_err(&bad)
            }
        })
        .collect()
}

/// How long an arrival schedule runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArrivalLimit {
    /// Exactly this many arrivals.
    Count(usize),
    /// Every arrival before this offset (ms).
    HorizonMs(f64),
}

/// Open-loop arrival offsets (ms from the level's start, ascending) of a Poisson process of
/// `rate_per_s` requests per second: gaps are independent exponential draws with mean
/// `1000 / rate_per_s` ms. The first arrival is one gap after 0, as in a Poisson process.
/// The same `seed` gives the same schedule on every platform. At most [`MAX_ARRIVALS`].
pub fn poisson_arrivals(rate_per_s: f64, limit: ArrivalLimit, seed: u64) -> Result<Vec<f64>> {
    let bad = |input: String, reason: &str| CoreError::InvalidSpec {
        what: "arrival schedule",
        input,
        reason: reason.into(),
    };
    if !(rate_per_s.is_finite() && rate_per_s >= MIN_RATE_PER_S) {
        return Err(bad(
            rate_per_s.to_string(),
            "rate must be finite and at least MIN_RATE_PER_S",
        ));
    }
    let mean_gap_ms = 1000.0 / rate_per_s;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // `random::<f64>()` is uniform on [0, 1), so 1 − u is in (0, 1] and the gap is finite
    // and non-negative.
    let mut gap = move || -(1.0 - rng.random::<f64>()).ln() * mean_gap_ms;
    let mut out = Vec::new();
    let mut t = 0.0;
    match limit {
        ArrivalLimit::Count(n) => {
            if n > MAX_ARRIVALS {
                return Err(bad(n.to_string(), "more arrivals than MAX_ARRIVALS"));
            }
            out.reserve(n);
            for _ in 0..n {
                t += gap();
                out.push(t);
            }
        }
        ArrivalLimit::HorizonMs(h) => {
            if !(h.is_finite() && h >= 0.0) {
                return Err(bad(
                    h.to_string(),
                    "horizon must be finite and non-negative",
                ));
            }
            loop {
                t += gap();
                if t >= h {
                    break;
                }
                if out.len() == MAX_ARRIVALS {
                    return Err(bad(
                        format!("{rate_per_s}/s over {h} ms"),
                        "more arrivals than MAX_ARRIVALS",
                    ));
                }
                out.push(t);
            }
        }
    }
    Ok(out)
}
