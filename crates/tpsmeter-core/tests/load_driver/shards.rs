//! Shards: each machine's share of a level, its own arrival schedule, and a shard with no
//! share of a timed level that still lasts it.

use super::*;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

#[test]
fn shards_take_their_share_of_each_level_and_skip_an_empty_one() {
    // Concurrency 6 then 1, 12 requests per level, 3 warm-ups, over 3 shards.
    let o = options(|o| {
        o.concurrency = vec![6, 1];
        o.requests = Some(12);
        o.warmup = 3;
    });
    let mut total_measured = [0usize; 2];
    for i in 0..3 {
        let shard = Shard::new(i, 3).unwrap();
        let mut d = LoadDriver::new_shard(&o, shard, Redactor::default()).unwrap();
        let (_, max_inflight) = simulate(&mut d, |_, t| stream(t, 5));
        assert_eq!(max_inflight, 2, "2 streams each at c=6");
        let (levels, records) = d.into_parts();
        assert_eq!(levels.len(), 2, "shard {i}: a report for every level");
        assert_eq!(levels[0].level, LoadLevel::Concurrency(2));
        // 3 warm-ups per level: 1 each at c=6, all 3 on shard 0 at c=1.
        let warmups = records.iter().filter(|r| r.warmup).count();
        assert_eq!(warmups, if i == 0 { 4 } else { 1 });
        for (j, l) in levels.iter().enumerate() {
            let mine = records
                .iter()
                .filter(|r| !r.warmup && r.level_index == Some(j as u32));
            let n = mine.count();
            assert_eq!(l.summary.completed as usize, n);
            total_measured[j] += n;
        }
        assert_eq!(
            records
                .iter()
                .filter(|r| r.level_index == Some(0) && !r.warmup)
                .count(),
            4
        );
        if i > 0 {
            // One stream over three shards: only shard 0 runs it.
            assert_eq!(levels[1].level, LoadLevel::Concurrency(0));
            assert_eq!(levels[1].summary.completed, 0);
        }
    }
    assert_eq!(total_measured, [12, 12], "the shards add up to the whole");
}

#[test]
fn an_idle_shard_still_lasts_a_timed_level() {
    // Shard 1 of 2 has no share of c=1; with --duration it waits the level out so that it
    // enters c=4 with shard 0.
    let o = options(|o| {
        o.concurrency = vec![1, 4];
        o.duration_s = Some(0.1);
    });
    let mut d = LoadDriver::new_shard(&o, Shard::new(1, 2).unwrap(), Redactor::default()).unwrap();
    let (starts, _) = simulate(&mut d, |_, t| stream(t, 5));
    let first = starts.first().unwrap();
    assert_eq!(first.1.level_index, 1);
    assert!(first.0 >= 100.0, "started c=4 at {} ms", first.0);
}

#[test]
fn open_loop_shards_divide_the_rate_with_schedules_of_their_own() {
    let o = options(|o| {
        o.rate = vec![30.0];
        o.requests = Some(9);
        o.seed = Some(5);
    });
    let mut schedules = Vec::new();
    for i in 0..3 {
        let mut d =
            LoadDriver::new_shard(&o, Shard::new(i, 3).unwrap(), Redactor::default()).unwrap();
        let (starts, _) = simulate(&mut d, |_, t| stream(t, 2));
        assert_eq!(starts.len(), 3);
        assert_eq!(starts[0].1.level, LoadLevel::Rate(10.0));
        schedules.push(
            starts
                .iter()
                .map(|s| s.1.scheduled_ms.unwrap())
                .collect::<Vec<_>>(),
        );
    }
    assert_ne!(
        schedules[0], schedules[1],
        "N copies of one schedule would arrive in bursts"
    );
}
