//! [`Ramp`]: when each stream of a closed-loop level may start its first request, so that a
//! level's streams open spread over a ramp-up time instead of in one burst (Locust's spawn
//! rate, k6's `ramping-vus` stages).
//!
//! A burst of `c` new connections meets a server's listen backlog all at once: connections
//! beyond it have their SYN dropped and retry 1 s, 3 s, 7 s ... later, or time out (at
//! c=100 against a small backlog, 8 of 300 requests failed; GuideLLM, which ramps, lost
//! none). With a ramp of `R` over a level of `c` streams, stream `g` (0-based, in the whole
//! run's numbering) opens `g · R / c` after its phase starts: the first at once, the last at
//! `R · (c − 1) / c`, a steady `c / R` new streams per second. Once open, a stream runs as
//! any closed-loop stream does (its next request as soon as its last one ends).
//!
//! On a shard (`--shard k/n`), the shard's streams are the whole level's streams
//! `k, k + n, k + 2n, ...` (the first `c % n` shards hold one more, as [`crate::shard`]
//! splits them), so the shards together open the level's streams at the whole run's pace,
//! interleaved rather than `n` at a time.

use crate::shard::Shard;

/// The opening times of a phase's streams (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ramp {
    /// Time between two consecutive streams of the whole level: `R / c`.
    step_ms: f64,
    /// The shard count: this shard's streams are every `stride`-th of the level's.
    stride: u32,
    /// This shard's index: its first stream is the level's stream `offset`.
    offset: u32,
}

impl Ramp {
    /// The ramp of a level of `whole_streams` streams (the whole run's concurrency, not a
    /// shard's share) over `ramp_ms`, for `shard`'s streams. `None` when there is nothing
    /// to spread (no ramp, or a single stream that opens at once anyway).
    pub fn new(ramp_ms: f64, whole_streams: u32, shard: Shard) -> Option<Ramp> {
        (ramp_ms > 0.0 && ramp_ms.is_finite() && whole_streams > 1).then(|| Ramp {
            step_ms: ramp_ms / f64::from(whole_streams),
            stride: shard.count(),
            offset: shard.index(),
        })
    }

    /// When this shard's stream `j` (0-based) opens, for a phase started at `start_ms`.
    pub fn opens_at(&self, start_ms: f64, j: u32) -> f64 {
        start_ms + (f64::from(j) * f64::from(self.stride) + f64::from(self.offset)) * self.step_ms
    }

    /// How many of a phase's `streams` streams are open at `now_ms`, the phase having
    /// started at `start_ms`. Every comparison is against [`Ramp::opens_at`] itself, so a
    /// caller that sleeps until the next opening time finds that stream open on waking.
    pub fn open_streams(&self, start_ms: f64, now_ms: f64, streams: u32) -> u32 {
        if streams == 0 || self.opens_at(start_ms, 0) > now_ms {
            return 0;
        }
        // An estimate of the last stream open, then corrected by the exact formula (the
        // division may land a hair off an opening time).
        let level_index = ((now_ms - start_ms) / self.step_ms).floor() - f64::from(self.offset);
        // Saturating float-to-int cast: a huge elapsed time opens every stream.
        let mut j =
            ((level_index / f64::from(self.stride)).floor().max(0.0) as u32).min(streams - 1);
        while j > 0 && self.opens_at(start_ms, j) > now_ms {
            j -= 1;
        }
        while j + 1 < streams && self.opens_at(start_ms, j + 1) <= now_ms {
            j += 1;
        }
        j + 1
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn streams_open_evenly_from_the_start() {
        let r = Ramp::new(1000.0, 4, Shard::WHOLE).unwrap();
        let opens: Vec<f64> = (0..4).map(|j| r.opens_at(0.0, j)).collect();
        assert_eq!(opens, [0.0, 250.0, 500.0, 750.0]);
        assert_eq!(r.open_streams(0.0, 0.0, 4), 1);
        assert_eq!(r.open_streams(0.0, 249.9, 4), 1);
        assert_eq!(r.open_streams(0.0, 250.0, 4), 2);
        assert_eq!(r.open_streams(0.0, 750.0, 4), 4);
        assert_eq!(r.open_streams(0.0, 1e12, 4), 4);
        // A phase with fewer streams than the level (a warm-up) opens its own at the same pace.
        assert_eq!(r.open_streams(0.0, 600.0, 2), 2);
        assert_eq!(r.open_streams(0.0, 600.0, 0), 0);
    }

    #[test]
    fn shards_interleave_the_levels_streams() {
        // c = 10 over 3 shards: 4, 3 and 3 streams.
        let mut all = Vec::new();
        for (k, share) in [(0, 4), (1, 3), (2, 3)] {
            let r = Ramp::new(1000.0, 10, Shard::new(k, 3).unwrap()).unwrap();
            all.extend((0..share).map(|j| r.opens_at(0.0, j)));
            assert_eq!(
                r.open_streams(0.0, r.opens_at(0.0, share - 1), share),
                share
            );
            if k > 0 {
                assert_eq!(r.open_streams(0.0, r.opens_at(0.0, 0) - 1.0, share), 0);
            }
        }
        all.sort_by(f64::total_cmp);
        let expected: Vec<f64> = (0..10).map(|g| f64::from(g) * 100.0).collect();
        assert_eq!(all, expected, "every opening time of the whole level, once");
    }

    #[test]
    fn waking_at_an_opening_time_finds_that_stream_open() {
        // Start times and steps whose sums round: the count must agree with `opens_at`.
        for (ramp, c, start) in [
            (1000.0, 3, 0.1),
            (10_000.0, 7, 12_345.678_9),
            (333.3, 100, 0.3),
        ] {
            let r = Ramp::new(ramp, c, Shard::WHOLE).unwrap();
            for j in 0..c {
                let at = r.opens_at(start, j);
                assert_eq!(r.open_streams(start, at, c), j + 1, "stream {j} at {at}");
            }
        }
    }

    #[test]
    fn nothing_to_spread_is_no_ramp() {
        assert!(Ramp::new(0.0, 10, Shard::WHOLE).is_none());
        assert!(Ramp::new(1000.0, 1, Shard::WHOLE).is_none());
        assert!(Ramp::new(f64::NAN, 10, Shard::WHOLE).is_none());
    }
}
