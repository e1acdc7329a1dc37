//! `max_duration_s`: a request-count level stops starting requests at its time cap, lets
//! those in flight finish, and the driver warns which level was cut.

use super::*;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

/// A stream that lasts `ms` (a TTFT of 10 ms, then one token per ms).
fn lasting(start: f64, ms: u32) -> (Outcome, f64) {
    stream(start, ms - 10)
}

#[test]
fn a_closed_loop_level_stops_starting_at_its_cap_and_says_so() {
    let o = options(|o| {
        o.concurrency = vec![2, 4];
        o.requests = Some(10);
        o.max_duration_s = Some(1.0);
        o.warmup = 1;
    });
    let mut d = LoadDriver::new(&o, Redactor::default()).unwrap();
    // 300 ms requests: 2 streams start 4 rounds before the 1 s cap (0, 300, 600, 900) and
    // none after it; at 4 streams, 3 rounds fit 12 > 10 requests, so the cap never bites.
    let (starts, _) = simulate(&mut d, |_, t| lasting(t, 300));
    let measured: Vec<(f64, usize)> = starts
        .iter()
        .filter(|s| !s.1.warmup)
        .map(|s| (s.0, s.1.level_index))
        .collect();
    let first: Vec<f64> = measured.iter().filter(|s| s.1 == 0).map(|s| s.0).collect();
    assert_eq!(
        first,
        [300.0, 300.0, 600.0, 600.0, 900.0, 900.0, 1200.0, 1200.0]
    );
    assert_eq!(measured.iter().filter(|s| s.1 == 1).count(), 10);
    let warnings = d.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].code, "max_duration");
    assert!(
        warnings[0].message.starts_with(
            "level c=2 reached its time cap (1 s, max duration) after starting 8 of 10 requests"
        ),
        "{}",
        warnings[0].message
    );
    // Every request started finished and counts: the level's figures are its 8.
    let (levels, records) = d.into_parts();
    assert_eq!(
        records
            .iter()
            .filter(|r| !r.warmup && r.level_index == Some(0))
            .count(),
        8
    );
    assert_eq!(levels[0].summary.completed, 8);
}

#[test]
fn an_open_loop_level_schedules_nothing_past_its_cap() {
    let o = options(|o| {
        o.rate = vec![20.0];
        o.requests = Some(100);
        o.max_duration_s = Some(1.0);
        o.seed = Some(3);
    });
    let mut d = LoadDriver::new(&o, Redactor::default()).unwrap();
    let (starts, _) = simulate(&mut d, |_, t| lasting(t, 50));
    assert!(!starts.is_empty() && starts.len() < 100, "{}", starts.len());
    assert!(starts.iter().all(|s| s.0 < 1000.0), "{:?}", starts.last());
    assert_eq!(d.warnings().len(), 1);
}

#[test]
fn without_a_cap_or_within_it_nothing_is_cut() {
    for cap in [None, Some(60.0)] {
        let o = options(|o| {
            o.concurrency = vec![2];
            o.requests = Some(6);
            o.max_duration_s = cap;
        });
        let mut d = LoadDriver::new(&o, Redactor::default()).unwrap();
        let (starts, _) = simulate(&mut d, |_, t| lasting(t, 300));
        assert_eq!(starts.len(), 6);
        assert!(d.warnings().is_empty());
    }
}
