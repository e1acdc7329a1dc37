//! Descriptive statistics of one metric over many requests.
//!
//! Method, stated once so every figure tpsmeter prints means the same thing:
//! - **Non-finite values are skipped.** NaN and ±∞ cannot come from a well-formed timeline
//!   (metrics that are undefined are `None`, not NaN), so one that reaches here is a caller
//!   bug or a division by a zero duration; skipping it keeps one bad value from poisoning a
//!   whole level's summary. `count` is the number of finite values actually summarised.
//! - **Percentiles interpolate linearly between closest ranks**: Hyndman & Fan type 7, the
//!   default of numpy (`method="linear"`), R and Excel `PERCENTILE.INC`. With the values
//!   sorted as `x[0] ≤ … ≤ x[n-1]` and `h = (n − 1)·p`, the p-quantile is
//!   `x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋])`. vLLM's `bench serve` uses `np.percentile`, so
//!   our p50/p99 agree with its figures for the same values.
//! - **`stddev` is the sample standard deviation** (Bessel's correction, divisor `n − 1`,
//!   numpy `ddof=1`): the requests of a run are a sample of the server's behaviour, not the
//!   whole population. It is 0 for a single value.

use serde::{Deserialize, Serialize};

/// Summary statistics of a set of values (all in the unit of the metric summarised).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Summary {
    /// Number of finite values summarised.
    pub count: usize,
    pub mean: f64,
    /// Sample standard deviation (divisor `count − 1`); 0 when `count == 1`.
    pub stddev: f64,
    pub min: f64,
    pub max: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
}

impl Summary {
    /// Summarises `values`, skipping non-finite ones. `None` when no finite value remains.
    pub fn from_values(values: &[f64]) -> Option<Summary> {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        if sorted.is_empty() {
            return None;
        }
        crate::sort::sort_floats(&mut sorted);
        let n = sorted.len();
        let mean = sorted.iter().sum::<f64>() / n as f64;
        // Two-pass variance: numerically stable enough for latencies (no catastrophic
        // cancellation of a one-pass sum of squares).
        let stddev = if n > 1 {
            let ss: f64 = sorted.iter().map(|v| (v - mean) * (v - mean)).sum();
            (ss / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Some(Summary {
            count: n,
            mean,
            stddev,
            min: sorted[0],
            max: sorted[n - 1],
            p50: percentile_sorted(&sorted, 0.50),
            p90: percentile_sorted(&sorted, 0.90),
            p95: percentile_sorted(&sorted, 0.95),
            p99: percentile_sorted(&sorted, 0.99),
        })
    }
}

/// The `p`-quantile (`p` in `[0, 1]`, clamped) of ascending-sorted finite values, by linear
/// interpolation between closest ranks (Hyndman–Fan type 7). `None` for an empty slice.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        None
    } else {
        Some(percentile_sorted(sorted, p))
    }
}

fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    let p = if p.is_nan() { 0.5 } else { p.clamp(0.0, 1.0) };
    let h = (n - 1) as f64 * p;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    let frac = h - lo as f64;
    sorted[lo] + frac * (sorted[hi] - sorted[lo])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn interpolates_between_ranks() {
        let v = [10.0, 20.0, 30.0, 40.0];
        // h = 3·0.9 = 2.7 → 30 + 0.7·10 = 37.
        assert!((percentile(&v, 0.9).unwrap() - 37.0).abs() < 1e-12);
        assert_eq!(percentile(&v, 0.0), Some(10.0));
        assert_eq!(percentile(&v, 1.0), Some(40.0));
        assert_eq!(percentile(&[], 0.5), None);
    }
}
