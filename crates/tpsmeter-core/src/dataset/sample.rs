//! Which dataset entry each request sends.
//!
//! Requests draw entries **without replacement**: request `i` (the driver's ticket, warm-ups
//! included) takes position `i mod n` of a permutation of the `n` entries, so the first `n`
//! requests send every entry once. A run that needs more requests than the dataset has
//! goes through a fresh permutation each time round (pass `i / n`), so no entry is sent a
//! second time before every other has been, and no two passes repeat one order.
//!
//! The permutation is keyed by `--seed` (the same seed, the same requests, natively and in
//! the browser), else by the run's random id. On a shard of a seeded run the shards share
//! one permutation and take its positions in turn (shard `s` of `c` takes `i·c + s`), so
//! the machines of one run send disjoint entries until the dataset is used up.
//!
//! Each permutation is a keyed Feistel network over the smallest power of 4 that holds
//! `n`, walked in cycles until it lands below `n` (fewer than 4 steps on average): any
//! position's entry is computed on its own, in constant memory and with integer arithmetic
//! alone, so every platform agrees bit for bit, and no per-pass table is stored.

use crate::seed::mix;
use crate::shard::Shard;

/// Salt of the order's key, so that it is not the prompts' run id (the same seed feeds both).
const SALT: u64 = 0x6461_7461_7365_7421; // "dataset!"
/// Feistel rounds: four make a keyed permutation indistinguishable from a random one for
/// a bench's purposes (Luby–Rackoff).
const ROUNDS: u64 = 4;

/// The order a run draws a dataset's entries in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Order {
    key: u64,
    /// Entries in the dataset (at least 1).
    len: u64,
    /// Shards sharing the permutation, and this one's place among them.
    stride: u64,
    offset: u64,
}

impl Order {
    /// The order over `len` entries: keyed by `seed` when given (shared by the shards of
    /// one run), else by `random`.
    pub fn new(seed: Option<u64>, random: u64, len: usize, shard: Option<Shard>) -> Order {
        let (key, stride, offset) = match (seed, shard) {
            (Some(seed), Some(s)) => (seed, u64::from(s.count()), u64::from(s.index())),
            (Some(seed), None) => (seed, 1, 0),
            // Unseeded shards draw apart, each by its own random key.
            (None, _) => (random, 1, 0),
        };
        Order {
            key: mix(key ^ SALT),
            len: (len as u64).max(1),
            stride,
            offset,
        }
    }

    /// The entry (its index in file order) that request `index` sends.
    pub fn entry(&self, index: u64) -> usize {
        let global = index.wrapping_mul(self.stride).wrapping_add(self.offset);
        let (pass, position) = (global / self.len, global % self.len);
        permute(mix(self.key ^ pass), position, self.len) as usize
    }
}

/// Position `x` (below `n`) under the permutation of `0..n` keyed by `key`.
fn permute(key: u64, x: u64, n: u64) -> u64 {
    if n <= 1 {
        return 0;
    }
    // Bits of the largest position, split into two halves of equal width.
    let half = (64 - (n - 1).leading_zeros()).div_ceil(2);
    let mask = (1u64 << half) - 1;
    let mut y = x;
    loop {
        let (mut left, mut right) = (y >> half, y & mask);
        for round in 0..ROUNDS {
            let f = mix(right ^ mix(key ^ round)) & mask;
            (left, right) = (right, left ^ f);
        }
        y = (left << half) | right;
        if y < n {
            return y;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn each_pass_sends_every_entry_once_and_passes_differ() {
        for n in [1usize, 2, 3, 7, 64, 1000, 1001] {
            let o = Order::new(Some(9), 0, n, None);
            let pass = |p: u64| -> Vec<usize> {
                (p * n as u64..(p + 1) * n as u64)
                    .map(|i| o.entry(i))
                    .collect()
            };
            let (a, b) = (pass(0), pass(1));
            let set: HashSet<usize> = a.iter().copied().collect();
            assert_eq!(set.len(), n, "a permutation of {n}");
            assert!(a.iter().all(|&e| e < n));
            assert_eq!(b.iter().copied().collect::<HashSet<_>>(), set);
            if n >= 7 {
                assert_ne!(a, b, "a fresh permutation each pass");
                assert_ne!(a, (0..n).collect::<Vec<_>>(), "shuffled");
            }
        }
    }

    #[test]
    fn a_seed_fixes_the_order_and_another_changes_it() {
        let n = 1000;
        let order = |seed, random| {
            let o = Order::new(seed, random, n, None);
            (0..50).map(|i| o.entry(i)).collect::<Vec<_>>()
        };
        assert_eq!(
            order(Some(5), 1),
            order(Some(5), 2),
            "the seed, not the entropy"
        );
        assert_ne!(order(Some(5), 1), order(Some(6), 1));
        assert_ne!(order(None, 1), order(None, 2), "unseeded: the run's own");
    }

    #[test]
    fn seeded_shards_take_turns_in_one_permutation() {
        let n = 30;
        let whole = Order::new(Some(3), 0, n, None);
        let shards: Vec<Order> = (0..3)
            .map(|i| Order::new(Some(3), i, n, Some(Shard::new(i as u32, 3).unwrap())))
            .collect();
        let mut sent: Vec<usize> = Vec::new();
        for i in 0..10 {
            for (s, o) in shards.iter().enumerate() {
                assert_eq!(o.entry(i), whole.entry(i * 3 + s as u64));
                sent.push(o.entry(i));
            }
        }
        assert_eq!(
            sent.iter().copied().collect::<HashSet<_>>().len(),
            n,
            "disjoint"
        );
    }

    #[test]
    fn draws_are_spread_over_the_dataset() {
        // The first 100 of 10,000 entries: drawn from the whole file, not its start.
        let o = Order::new(Some(1), 0, 10_000, None);
        let firsts: Vec<usize> = (0..100).map(|i| o.entry(i)).collect();
        let high = firsts.iter().filter(|&&e| e >= 5_000).count();
        assert!((30..=70).contains(&high), "{high} of 100 in the upper half");
    }
}
