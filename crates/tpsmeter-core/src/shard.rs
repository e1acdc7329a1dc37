//! [`Shard`]: one machine's part of a run spread over several load generators, for a
//! target that needs more load than one machine can offer.
//!
//! Every machine runs the same command with `--shard I/N` (I from 0, so Kubernetes'
//! `JOB_COMPLETION_INDEX` is the index as it is) and takes its share of each load level:
//! - closed loop: the streams in flight are split as evenly as integers allow (the first
//!   `c % N` shards take one more), and the level's requests and warm-up requests in
//!   proportion to each shard's streams, so the shards finish the level at about the same
//!   time and a shard without a stream gets no request;
//! - open loop: the arrival rate is divided by N (each shard with its own seed), the
//!   requests, warm-up and in-flight cap split evenly;
//! - durations are not split: every shard runs each level for the whole time.
//!
//! Every split adds up to the whole exactly. The shards' reports are then merged
//! (`report::merge`) into the report of the whole.

use crate::error::{CoreError, Result};
use crate::load::{LoadLevel, MAX_CONCURRENCY, StopCondition};

/// The most shards of one run: as many as the most streams one level may hold, since a
/// shard beyond that could only ever be idle.
pub const MAX_SHARDS: u32 = MAX_CONCURRENCY;

/// Cap on a `--shard` spec string: two numbers and a slash.
const MAX_SPEC_LEN: usize = 32;

/// Odd 64-bit constant (2⁶⁴ / φ) that spreads shard indices over the seed space.
const SEED_STRIDE: u64 = 0x9E37_79B9_7F4A_7C15;

/// Shard `index` of `count` (0 ≤ index < count), valid by construction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    index: u32,
    count: u32,
}

impl Shard {
    /// The whole run on one machine: every share is the whole.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Shard `index` of `count`, checked.
    pub fn new(index: u32, count: u32) -> Result<Shard> {
        let bad = |reason: String| CoreError::InvalidSpec {
            what: "shard",
            input: format!("{index}/{count}"),
            reason,
        };
        if count == 0 {
            return Err(bad("the shard count must be at least 1".into()));
        }
        if count > MAX_SHARDS {
            return Err(bad(format!("at most {MAX_SHARDS} shards")));
        }
        if index >= count {
            return Err(bad(format!(
                "the index must be below the count: {count} shards are numbered 0 to {} \
                 (as Kubernetes' JOB_COMPLETION_INDEX)",
                count - 1
            )));
        }
        Ok(Shard { index, count })
    }

    /// Parses `I/N`, e.g. `0/4`.
    pub fn parse(spec: &str) -> Result<Shard> {
        let bad = |reason: &str| CoreError::InvalidSpec {
            what: "shard",
            input: spec.chars().take(MAX_SPEC_LEN).collect(),
            reason: reason.into(),
        };
        if spec.len() > MAX_SPEC_LEN {
            return Err(bad("longer than 32 bytes; expected I/N, e.g. 0/4"));
        }
        let Some((i, n)) = spec.trim().split_once('/') else {
            return Err(bad(
                "expected I/N: this shard's index from 0 and the shard count, e.g. 0/4",
            ));
        };
        let number = |s: &str| s.trim().parse::<u32>().ok();
        match (number(i), number(n)) {
            (Some(i), Some(n)) => Shard::new(i, n),
            _ => Err(bad(
                "expected I/N with two whole numbers: this shard's index from 0 and the \
                 shard count, e.g. 0/4",
            )),
        }
    }

    pub fn index(self) -> u32 {
        self.index
    }

    pub fn count(self) -> u32 {
        self.count
    }

    /// This shard's share of `total` things: `total / N`, plus one for the first
    /// `total % N` shards, so the shares add up to `total` exactly.
    pub fn share(self, total: u64) -> u64 {
        let n = u64::from(self.count);
        total / n + u64::from(u64::from(self.index) < total % n)
    }

    /// [`Shard::share`] of a `u32` count.
    pub fn share_u32(self, total: u32) -> u32 {
        // The share is at most the total, so it fits.
        u32::try_from(self.share(u64::from(total))).unwrap_or(total)
    }

    /// This shard's part of a level, of its stop condition and of its warm-up requests.
    /// A concurrency share may be 0 (fewer streams than shards): the shard then runs
    /// nothing at that level.
    pub fn level(self, whole: LoadLevel, stop: StopCondition, warmup: u32) -> LevelShare {
        let stop_share = |split: &dyn Fn(u64) -> u64| match stop {
            StopCondition::Requests(n) => StopCondition::Requests(split(n)),
            StopCondition::DurationS(s) => StopCondition::DurationS(s),
        };
        match whole {
            LoadLevel::Concurrency(c) => LevelShare {
                load: LoadLevel::Concurrency(self.share_u32(c)),
                stop: stop_share(&|n| self.by_streams(n, c)),
                warmup: u32::try_from(self.by_streams(u64::from(warmup), c)).unwrap_or(warmup),
            },
            LoadLevel::Rate(r) => LevelShare {
                load: LoadLevel::Rate(r / f64::from(self.count)),
                stop: stop_share(&|n| self.share(n)),
                warmup: self.share_u32(warmup),
            },
        }
    }

    /// This shard's part of `total` things split in proportion to the shards' shares of
    /// `streams`: with the streams of shards `0..i` summing to `b` and this shard's to `s`,
    /// `⌊total·(b+s)/streams⌋ − ⌊total·b/streams⌋`, so the parts add up to `total`.
    fn by_streams(self, total: u64, streams: u32) -> u64 {
        if streams == 0 {
            return self.share(total);
        }
        let (i, n, c) = (
            u128::from(self.index),
            u128::from(self.count),
            u128::from(streams),
        );
        let before = i * (c / n) + i.min(c % n);
        let upto = before + u128::from(self.share_u32(streams));
        let part = |k: u128| u128::from(total) * k / c;
        // At most `total`, so it fits.
        u64::try_from(part(upto) - part(before)).unwrap_or(total)
    }

    /// The arrival-schedule seed of this shard. Each shard needs its own: N copies of one
    /// Poisson schedule at rate r/N would send N requests at once at every arrival, where
    /// N independent ones add up to a Poisson process of rate r. Shard 0 keeps the seed, so
    /// `0/1` is the unsharded run.
    pub fn seed(self, seed: u64) -> u64 {
        seed.wrapping_add(u64::from(self.index).wrapping_mul(SEED_STRIDE))
    }
}

/// One level as one shard runs it (see [`Shard::level`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelShare {
    pub load: LoadLevel,
    pub stop: StopCondition,
    /// Warm-up requests before the level.
    pub warmup: u32,
}

impl LevelShare {
    /// Whether the shard sends no measured request at this level.
    pub fn runs_nothing(&self) -> bool {
        self.load == LoadLevel::Concurrency(0) || self.stop == StopCondition::Requests(0)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn parses_i_of_n_and_names_what_is_wrong() {
        assert_eq!(Shard::parse("2/3").unwrap(), Shard::new(2, 3).unwrap());
        assert_eq!(Shard::parse(" 0 / 1 ").unwrap(), Shard::WHOLE);
        for (spec, says) in [
            ("3/3", "numbered 0 to 2"),
            ("0/0", "at least 1"),
            ("1", "expected I/N"),
            ("a/b", "two whole numbers"),
            ("-1/3", "two whole numbers"),
            ("0/100001", "at most 100000"),
        ] {
            let e = Shard::parse(spec).unwrap_err().to_string();
            assert!(e.contains(says), "{spec}: {e}");
        }
    }

    #[test]
    fn shares_add_up_to_the_whole_and_differ_by_at_most_one() {
        for count in 1..=7u32 {
            for total in 0..=20u64 {
                let shares: Vec<u64> = (0..count)
                    .map(|i| Shard::new(i, count).unwrap().share(total))
                    .collect();
                assert_eq!(shares.iter().sum::<u64>(), total, "{total} over {count}");
                let (lo, hi) = (shares.iter().min(), shares.iter().max());
                assert!(hi.unwrap() - lo.unwrap() <= 1, "{shares:?}");
            }
        }
        // Concurrency 6, 12 requests over 3: 2+2+2 streams, 4+4+4 requests.
        let s = Shard::new(1, 3).unwrap();
        let share = s.level(LoadLevel::Concurrency(6), StopCondition::Requests(12), 3);
        assert_eq!(share.load, LoadLevel::Concurrency(2));
        assert_eq!(share.stop, StopCondition::Requests(4));
        assert_eq!(share.warmup, 1);
        // One stream over three shards: only shard 0 runs it, with every request.
        let idle = s.level(LoadLevel::Concurrency(1), StopCondition::Requests(8), 2);
        assert!(idle.runs_nothing());
        assert_eq!(idle.warmup, 0);
        let busy = Shard::new(0, 3).unwrap().level(
            LoadLevel::Concurrency(1),
            StopCondition::Requests(8),
            2,
        );
        assert_eq!((busy.stop, busy.warmup), (StopCondition::Requests(8), 2));
        let rate = s.level(LoadLevel::Rate(9.0), StopCondition::DurationS(5.0), 0);
        assert_eq!(rate.load, LoadLevel::Rate(3.0));
        assert_eq!(rate.stop, StopCondition::DurationS(5.0));
    }

    #[test]
    fn requests_follow_the_streams_and_add_up() {
        let requests = |l: &LevelShare| match l.stop {
            StopCondition::Requests(k) => k,
            StopCondition::DurationS(_) => unreachable!(),
        };
        for count in 1..=5u32 {
            for c in 1..=9u32 {
                for n in [0u64, 1, 7, 12, 100, u64::MAX] {
                    let shares: Vec<LevelShare> = (0..count)
                        .map(|i| {
                            let stop = StopCondition::Requests(n);
                            let s = Shard::new(i, count).unwrap();
                            s.level(LoadLevel::Concurrency(c), stop, 0)
                        })
                        .collect();
                    let sum = shares.iter().map(requests).fold(0u64, u64::wrapping_add);
                    assert_eq!(sum, n, "{n} requests, c={c}, {count} shards");
                    for l in shares
                        .iter()
                        .filter(|l| l.load == LoadLevel::Concurrency(0))
                    {
                        assert_eq!(requests(l), 0, "no stream, no request");
                    }
                }
            }
        }
        // 4 streams over 3 shards (2+1+1): 12 requests as 6+3+3.
        let split: Vec<u64> = (0..3)
            .map(|i| {
                let stop = StopCondition::Requests(12);
                let s = Shard::new(i, 3).unwrap();
                requests(&s.level(LoadLevel::Concurrency(4), stop, 0))
            })
            .collect();
        assert_eq!(split, [6, 3, 3], "in proportion to the streams");
    }

    #[test]
    fn each_shard_draws_its_own_schedule_and_shard_zero_keeps_the_seed() {
        assert_eq!(Shard::new(0, 4).unwrap().seed(7), 7);
        let seeds: std::collections::HashSet<u64> =
            (0..4).map(|i| Shard::new(i, 4).unwrap().seed(7)).collect();
        assert_eq!(seeds.len(), 4);
    }
}
