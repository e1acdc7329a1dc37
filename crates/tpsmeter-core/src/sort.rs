//! `sort_floats`: the ascending sort percentiles are read from.

/// Sorts `v` ascending in `f64::total_cmp` order: the same result as
/// `v.sort_unstable_by(f64::total_cmp)`.
///
/// A heapsort written out instead of the standard library's pattern-defeating quicksort:
/// that one (with its insertion-sort networks and heapsort fallback) is 2.5 KB of wasm, a
/// twentieth of the real-user meter's size budget, while summaries sort a few thousand
/// values at most, once per report, where O(n log n) without the constant-factor tuning
/// costs nothing a user sees.
pub(crate) fn sort_floats(v: &mut [f64]) {
    let n = v.len();
    for root in (0..n / 2).rev() {
        sift_down(v, root, n);
    }
    for end in (1..n).rev() {
        v.swap(0, end);
        sift_down(v, 0, end);
    }
}

/// Restores the max-heap property of `v[..end]` below `root`.
fn sift_down(v: &mut [f64], mut root: usize, end: usize) {
    loop {
        let mut child = 2 * root + 1;
        if child >= end {
            return;
        }
        if child + 1 < end && v[child].total_cmp(&v[child + 1]).is_lt() {
            child += 1;
        }
        if v[root].total_cmp(&v[child]).is_ge() {
            return;
        }
        v.swap(root, child);
        root = child;
    }
}

#[cfg(test)]
mod tests {
    use super::sort_floats;
    use proptest::prelude::*;

    fn check(values: Vec<f64>) {
        let mut ours = values.clone();
        sort_floats(&mut ours);
        let mut std = values;
        std.sort_unstable_by(f64::total_cmp);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&ours), bits(&std));
    }

    #[test]
    fn edge_cases() {
        check(vec![]);
        check(vec![1.0]);
        check(vec![2.0, 1.0]);
        check(vec![0.0, -0.0, 0.0, -0.0]);
        check(vec![3.0; 17]);
        check((0..100).map(f64::from).collect());
        check((0..100).rev().map(f64::from).collect());
    }

    proptest! {
        #[test]
        fn matches_the_standard_sort(values in prop::collection::vec(-1e6f64..1e6, 0..300)) {
            check(values);
        }

        #[test]
        fn matches_with_many_ties(values in prop::collection::vec(0u8..4, 0..300)) {
            check(values.into_iter().map(f64::from).collect());
        }
    }
}
