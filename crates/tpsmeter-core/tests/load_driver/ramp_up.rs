//! Ramp-up: streams opened evenly over the ramp, on shards interleaved, inside a timed
//! level.

use super::*;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

/// A stream that lasts `ms` (a TTFT of 10 ms, then one token per ms).
fn lasting(start: f64, ms: u32) -> (Outcome, f64) {
    stream(start, ms - 10)
}

/// The start times of `shard`'s part of a run of `o` whose every request lasts `ms`.
fn start_times(o: &BenchOptions, shard: Shard, ms: u32) -> Vec<f64> {
    let mut d = LoadDriver::new_shard(o, shard, Redactor::default()).unwrap();
    let (starts, _) = simulate(&mut d, |_, t| lasting(t, ms));
    starts.iter().map(|s| s.0).collect()
}

#[test]
fn ramp_up_opens_the_streams_evenly_then_runs_closed_loop() {
    let o = options(|o| {
        o.concurrency = vec![4];
        o.requests = Some(8);
        o.ramp_up_s = Some(1.0);
    });
    let mut d = LoadDriver::new(&o, Redactor::default()).unwrap();
    // Requests last 2 s, longer than the ramp: every stream opens before any ends.
    let (starts, max_inflight) = simulate(&mut d, |_, t| lasting(t, 2000));
    assert_eq!(max_inflight, 4);
    let times: Vec<f64> = starts.iter().map(|s| s.0).collect();
    // One stream every 250 ms, then each stream's next request as its last one ends.
    assert_eq!(
        times,
        [0.0, 250.0, 500.0, 750.0, 2000.0, 2250.0, 2500.0, 2750.0]
    );
}

#[test]
fn without_ramp_up_every_stream_starts_at_once() {
    let o = options(|o| {
        o.concurrency = vec![4];
        o.requests = Some(4);
    });
    let starts = start_times(&o, Shard::WHOLE, 2000);
    assert!(starts.iter().all(|&t| t == 0.0), "{starts:?}");
}

#[test]
fn ramp_up_spreads_the_warm_up_and_the_measured_phase_each() {
    let o = options(|o| {
        o.concurrency = vec![2];
        o.requests = Some(2);
        o.warmup = 2;
        o.ramp_up_s = Some(1.0);
    });
    let mut d = LoadDriver::new(&o, Redactor::default()).unwrap();
    let (starts, _) = simulate(&mut d, |_, t| lasting(t, 2000));
    let trace: Vec<(f64, bool)> = starts.iter().map(|s| (s.0, s.1.warmup)).collect();
    // Warm-up streams at 0 and 500 (ending at 2500); the measured phase opens its own
    // streams over the ramp again from its start.
    assert_eq!(
        trace,
        [(0.0, true), (500.0, true), (2500.0, false), (3000.0, false)]
    );
    let (_, records) = d.into_parts();
    assert_eq!(records.iter().filter(|r| !r.warmup && r.ok()).count(), 2);
}

#[test]
fn ramp_up_on_shards_interleaves_their_streams() {
    // c=4 over 2 shards, a 1 s ramp: the whole level's streams open every 250 ms, shard 0
    // taking the even ones and shard 1 the odd ones.
    let o = options(|o| {
        o.concurrency = vec![4];
        o.requests = Some(4);
        o.ramp_up_s = Some(1.0);
    });
    let mut opened = Vec::new();
    for i in 0..2 {
        let times = start_times(&o, Shard::new(i, 2).unwrap(), 2000);
        assert_eq!(times, [250.0 * f64::from(i), 250.0 * f64::from(i) + 500.0]);
        opened.extend(times);
    }
    opened.sort_by(f64::total_cmp);
    assert_eq!(opened, [0.0, 250.0, 500.0, 750.0]);
}

#[test]
fn a_timed_level_ramps_inside_its_duration() {
    let o = options(|o| {
        o.concurrency = vec![2];
        o.duration_s = Some(1.0);
        o.ramp_up_s = Some(0.8);
    });
    let times = start_times(&o, Shard::WHOLE, 300);
    // Stream 0 runs back to back from 0; stream 1 opens at 400 ms; nothing starts at 1 s.
    assert_eq!(times, [0.0, 300.0, 400.0, 600.0, 700.0, 900.0]);
}
