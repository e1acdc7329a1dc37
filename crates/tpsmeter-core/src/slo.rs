//! Service-level objectives a request must meet to count towards goodput.
//!
//! Spec syntax (the CLI's `--slo`): comma-separated `name=value` pairs (`name:value` is
//! accepted too, as vLLM's `--goodput ttft:500` writes it), value a positive number with a
//! unit `us`, `ms` or `s`, e.g. `ttft=500ms,tpot=50ms,itl=200ms,e2e=2s`. A bare number is
//! rejected: a missing unit is the classic way to ask for 500 seconds when 500 ms was meant.
//!
//! | name | limit applies to | undefined metric |
//! |---|---|---|
//! | `ttft` | [`RequestMetrics::ttft_ms`] | fails (no answer arrived) |
//! | `tpot` | [`RequestMetrics::tpot_ms`] | passes (fewer than 2 tokens: no decode step) |
//! | `itl` | the longest per-chunk gap, [`RequestMetrics::max_itl_chunk_ms`] | passes (fewer than 2 chunks) |
//! | `e2e` | [`RequestMetrics::e2e_ms`] | fails (request never ended) |
//!
//! `itl` bounds the worst stall rather than a mean, because a mean per-token ITL is almost
//! the same number as TPOT while one long pause is what a reader notices.

use serde::{Deserialize, Serialize};

use crate::error::{CoreError, Result};
use crate::metrics::RequestMetrics;

/// Cap on the length of an SLO spec: it comes from a command line or a URL.
const MAX_SPEC_LEN: usize = 1024;

/// Latency limits in milliseconds; `None` means no limit on that metric.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Slo {
    pub ttft_ms: Option<f64>,
    pub tpot_ms: Option<f64>,
    pub itl_ms: Option<f64>,
    pub e2e_ms: Option<f64>,
}

impl Slo {
    /// Parses `"ttft=500ms,tpot=50ms,itl=200ms,e2e=2s"`. Errors name the offending part.
    pub fn parse(spec: &str) -> Result<Slo> {
        let bad = |reason: String| CoreError::InvalidSpec {
            what: "SLO",
            input: truncate(spec),
            reason,
        };
        if spec.len() > MAX_SPEC_LEN {
            return Err(bad(format!("longer than {MAX_SPEC_LEN} bytes")));
        }
        if spec.trim().is_empty() {
            return Err(bad("empty; expected e.g. ttft=500ms,tpot=50ms".into()));
        }
        let mut slo = Slo::default();
        for part in spec.split(',') {
            let part = part.trim();
            let Some((name, value)) = part.split_once(['=', ':']) else {
                return Err(bad(format!("{part:?} is not name=value")));
            };
            let name = name.trim();
            let slot = match name.to_ascii_lowercase().as_str() {
                "ttft" => &mut slo.ttft_ms,
                "tpot" => &mut slo.tpot_ms,
                "itl" => &mut slo.itl_ms,
                "e2e" | "e2el" => &mut slo.e2e_ms,
                _ => {
                    return Err(bad(format!(
                        "unknown metric {name:?} (expected ttft, tpot, itl or e2e)"
                    )));
                }
            };
            if slot.is_some() {
                return Err(bad(format!("{name:?} given twice")));
            }
            *slot =
                Some(parse_duration_ms(value.trim()).map_err(|r| bad(format!("{part:?}: {r}")))?);
        }
        Ok(slo)
    }

    /// Whether no limit is set.
    pub fn is_empty(&self) -> bool {
        *self == Slo::default()
    }

    /// Whether `m` meets every limit (see the module table for undefined metrics).
    pub fn check(&self, m: &RequestMetrics) -> bool {
        let required = |limit: Option<f64>, v: Option<f64>| match (limit, v) {
            (None, _) => true,
            (Some(l), Some(v)) => v <= l,
            (Some(_), None) => false,
        };
        let optional = |limit: Option<f64>, v: Option<f64>| match (limit, v) {
            (Some(l), Some(v)) => v <= l,
            _ => true,
        };
        required(self.ttft_ms, m.ttft_ms)
            && required(self.e2e_ms, m.e2e_ms)
            && optional(self.tpot_ms, m.tpot_ms)
            && optional(self.itl_ms, m.max_itl_chunk_ms())
    }
}

impl std::fmt::Display for Slo {
    /// Writes the spec back in the parse syntax, in milliseconds.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts = [
            ("ttft", self.ttft_ms),
            ("tpot", self.tpot_ms),
            ("itl", self.itl_ms),
            ("e2e", self.e2e_ms),
        ];
        let mut sep = "";
        for (name, v) in parts {
            if let Some(v) = v {
                write!(f, "{sep}{name}={v}ms")?;
                sep = ",";
            }
        }
        Ok(())
    }
}

/// Parses `500ms`, `2s`, `1.5s`, `250us` (also `µs`) into milliseconds.
fn parse_duration_ms(value: &str) -> std::result::Result<f64, String> {
    let split = value
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("{value:?} has no unit (use us, ms or s)"))?;
    let (num, unit) = value.split_at(split);
    let scale = match unit.trim() {
        "ms" => 1.0,
        "s" => 1000.0,
        "us" | "µs" => 0.001,
        other => return Err(format!("unknown unit {other:?} (use us, ms or s)")),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{num:?} is not a number"))?;
    if !(n.is_finite() && n > 0.0) {
        return Err(format!("{value:?} must be positive"));
    }
    Ok(n * scale)
}

/// Keeps error messages short when someone pastes something huge.
fn truncate(s: &str) -> String {
    crate::cap::cap_chars(s, 80)
}
