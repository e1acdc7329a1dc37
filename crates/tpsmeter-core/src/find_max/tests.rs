//! The search rule against synthetic level results: servers whose goodput rises then
//! flattens, whose SLO breaks at a known load, that never meet it, that fail, and the caps.
#![allow(clippy::unwrap_used)]

use super::*;

fn c(n: u32) -> LoadLevel {
    LoadLevel::Concurrency(n)
}

fn config(start: LoadLevel) -> FindMaxConfig {
    FindMaxOptions::default().resolve(start).unwrap()
}

/// A level of 20 requests: `met` of them met the SLO, `failed` failed, at `goodput`/s.
fn level(load: LoadLevel, met: u64, failed: u64, goodput: f64) -> LevelResult {
    LevelResult {
        level: load,
        completed: 20,
        failed,
        met,
        goodput_per_s: Some(goodput),
    }
}

/// Runs the search to its end against `server`; returns it and the loads it ran, in order.
fn run(cfg: FindMaxConfig, server: impl Fn(LoadLevel) -> LevelResult) -> (FindMax, Vec<LoadLevel>) {
    let mut search = FindMax::new(cfg);
    let mut load = Some(search.first());
    let mut ran = Vec::new();
    while let Some(l) = load {
        assert!(ran.len() < 64, "the search does not end: {ran:?}");
        ran.push(l);
        load = search.observe(&server(l));
    }
    assert!(search.is_over());
    (search, ran)
}

/// A server with `slots` streams: below them each request meets the SLO and goodput grows
/// with the load; above them the waiting requests miss it (K of c meet it).
fn slots(k: u32) -> impl Fn(LoadLevel) -> LevelResult {
    move |l| {
        let n = l.value() as u32;
        let met = if n <= k {
            20
        } else {
            20 * u64::from(k) / u64::from(n)
        };
        level(l, met, 0, f64::from(n.min(k)))
    }
}

/// A server that meets the SLO up to `k` streams and misses it beyond, goodput rising with
/// the load: `k` is exactly the answer.
fn cliff(k: u32) -> impl Fn(LoadLevel) -> LevelResult {
    move |l| {
        let n = l.value() as u32;
        level(l, if n <= k { 20 } else { 10 }, 0, f64::from(n.min(k)))
    }
}

#[test]
fn rises_then_flattens_stops_where_goodput_stopped_rising() {
    let goodput = |n: u32| match n {
        1 => 1.0,
        2 => 2.0,
        4 => 3.9,
        _ => 4.1,
    };
    let (search, ran) = run(config(c(1)), |l| level(l, 20, 0, goodput(l.value() as u32)));
    assert_eq!(ran, [c(1), c(2), c(4), c(8)]);
    let v = search.verdict();
    assert_eq!(v.stop, FindMaxStop::GoodputFlat);
    // c=8 met the SLO, so it is the highest load that did; c=4 is where goodput stopped
    // paying for the load.
    assert_eq!(v.max_load, Some(c(8)));
    assert_eq!(v.knee, Some(c(4)));
    assert_eq!(v.best_goodput_per_s, Some(4.1));
    assert_eq!(v.lowest_failing, None);
    let gain = v.steps[3].gain_pct.unwrap();
    assert!((gain - 5.128).abs() < 0.01, "{gain}");
    assert!(
        v.message.contains("goodput stopped rising"),
        "{}",
        v.message
    );
}

#[test]
fn slo_breaks_at_a_level_and_bisection_finds_the_last_load_that_met_it() {
    let (search, ran) = run(config(c(1)), slots(6));
    // Doubling until c=8 misses (6 of 8 met it: 75%), then bisecting 4..8 and 6..8.
    assert_eq!(ran, [c(1), c(2), c(4), c(8), c(6), c(7)]);
    let v = search.verdict();
    assert_eq!(v.stop, FindMaxStop::SloBroken);
    assert_eq!(v.max_load, Some(c(6)));
    assert_eq!(v.max_load_goodput_per_s, Some(6.0));
    assert_eq!(v.lowest_failing, Some(c(7)));
    assert!(
        v.steps
            .iter()
            .filter(|s| !s.passed)
            .all(|s| s.level.value() > 6.0)
    );
    assert!(
        v.message.contains("c=6 is the highest load"),
        "{}",
        v.message
    );
    assert!(v.message.contains("c=7 missed it"), "{}", v.message);
}

#[test]
fn the_knee_is_found_within_the_resolution_for_every_capacity() {
    for k in 1..=300 {
        let (search, ran) = run(config(c(1)), cliff(k));
        let v = search.verdict();
        let found = v.max_load.unwrap().value();
        let missed = v.lowest_failing.unwrap().value();
        assert!(
            found <= f64::from(k) && missed > f64::from(k),
            "k={k}: {found}..{missed}"
        );
        let mut unique = ran.clone();
        unique.sort_by(|a, b| a.value().total_cmp(&b.value()));
        unique.dedup();
        assert_eq!(unique.len(), ran.len(), "k={k}: a load ran twice: {ran:?}");
        match v.stop {
            // The bracket is within 10% or one stream, and the capacity is inside it.
            FindMaxStop::SloBroken => {
                assert!(
                    missed <= found * 1.1 || missed - found <= 1.0,
                    "k={k}: {found}..{missed}"
                );
                assert!(ran.len() <= DEFAULT_MAX_LEVELS as usize, "k={k}: {ran:?}");
            }
            FindMaxStop::MaxLevels => assert_eq!(ran.len(), DEFAULT_MAX_LEVELS as usize),
            other => panic!("k={k}: {other:?}"),
        }
    }
}

#[test]
fn never_met_when_the_first_load_misses() {
    let (search, ran) = run(config(c(1)), |l| level(l, 10, 0, 1.0));
    assert_eq!(ran, [c(1)]);
    let v = search.verdict();
    assert_eq!(v.stop, FindMaxStop::NeverMet);
    assert_eq!(v.max_load, None);
    assert_eq!(v.knee, None);
    assert_eq!(v.lowest_failing, Some(c(1)));
    assert!(
        v.message.starts_with("no load met the SLO"),
        "{}",
        v.message
    );
    assert!(v.message.contains("50% of its requests"), "{}", v.message);
}

#[test]
fn the_max_load_cap_stops_a_server_that_never_saturates() {
    let cfg = FindMaxOptions {
        max_load: Some(12.0),
        ..FindMaxOptions::default()
    }
    .resolve(c(1))
    .unwrap();
    let (search, ran) = run(cfg, |l| level(l, 20, 0, l.value()));
    // Doubling stops at the cap, not at 16.
    assert_eq!(ran, [c(1), c(2), c(4), c(8), c(12)]);
    let v = search.verdict();
    assert_eq!(v.stop, FindMaxStop::MaxLoad);
    assert_eq!(v.max_load, Some(c(12)));
}

#[test]
fn the_level_cap_stops_the_search_before_it_converges() {
    let cfg = FindMaxOptions {
        max_levels: Some(5),
        ..FindMaxOptions::default()
    }
    .resolve(c(1))
    .unwrap();
    let (search, ran) = run(cfg, slots(40));
    assert_eq!(ran, [c(1), c(2), c(4), c(8), c(16)]);
    let v = search.verdict();
    assert_eq!(v.stop, FindMaxStop::MaxLevels);
    assert_eq!(v.max_load, Some(c(16)));
    assert!(v.message.contains("5 levels"), "{}", v.message);
}

#[test]
fn a_level_where_most_requests_fail_stops_the_search() {
    let (search, ran) = run(config(c(1)), |l| {
        if l.value() < 4.0 {
            level(l, 20, 0, l.value())
        } else {
            level(l, 5, 11, 1.0)
        }
    });
    assert_eq!(ran, [c(1), c(2), c(4)]);
    let v = search.verdict();
    assert_eq!(v.stop, FindMaxStop::Errors);
    assert_eq!(v.max_load, Some(c(2)));
    assert!(
        v.message.contains("11 of 20 requests failed"),
        "{}",
        v.message
    );
    // Half failing is not "most": the level is judged like any other.
    let (search, _) = run(config(c(1)), |l| level(l, 10, 10, 1.0));
    assert_eq!(search.verdict().stop, FindMaxStop::NeverMet);
}

#[test]
fn attainment_is_compared_exactly_and_failures_count_as_missed() {
    let mut s = FindMax::new(config(c(1)));
    assert_eq!(
        s.observe(&level(c(1), 19, 1, 1.0)),
        Some(c(2)),
        "19 of 20 is 95%"
    );
    let next = s.observe(&level(c(2), 18, 0, 2.0));
    assert!(!s.steps()[1].passed, "18 of 20 is 90%");
    assert_eq!(next, None, "c=1..2 is within one stream");
    assert_eq!(s.verdict().stop, FindMaxStop::SloBroken);
    // A stricter target: 19 of 20 misses 100%.
    let strict = FindMaxOptions {
        attainment_pct: Some(100.0),
        ..FindMaxOptions::default()
    }
    .resolve(c(1))
    .unwrap();
    let mut s = FindMax::new(strict);
    assert_eq!(s.observe(&level(c(1), 19, 1, 1.0)), None);
    assert_eq!(s.verdict().stop, FindMaxStop::NeverMet);
}

#[test]
fn rates_double_and_bisect_to_ten_percent() {
    let capacity = 7.3;
    let (search, ran) = run(config(LoadLevel::Rate(0.5)), |l| {
        let r = l.value();
        level(l, if r <= capacity { 20 } else { 10 }, 0, r.min(capacity))
    });
    let rates: Vec<f64> = ran.iter().map(|l| l.value()).collect();
    assert_eq!(rates[..6], [0.5, 1.0, 2.0, 4.0, 8.0, 6.0]);
    let v = search.verdict();
    assert_eq!(v.stop, FindMaxStop::SloBroken);
    let (found, missed) = (
        v.max_load.unwrap().value(),
        v.lowest_failing.unwrap().value(),
    );
    assert!(
        found <= capacity && capacity < missed && missed <= found * 1.1,
        "{rates:?}"
    );
}

#[test]
fn an_interrupted_search_keeps_what_it_judged() {
    let mut s = FindMax::new(config(c(1)));
    assert_eq!(s.observe(&level(c(1), 20, 0, 1.0)), Some(c(2)));
    s.interrupt();
    assert_eq!(
        s.observe(&level(c(2), 20, 0, 2.0)),
        None,
        "nothing after the end"
    );
    let v = s.verdict();
    assert_eq!(v.stop, FindMaxStop::Cancelled);
    assert_eq!(v.steps.len(), 1);
    assert_eq!(v.max_load, Some(c(1)));
    // An interruption after the end changes nothing.
    let (mut done, _) = run(config(c(1)), slots(3));
    done.interrupt();
    assert_eq!(done.verdict().stop, FindMaxStop::SloBroken);
}

#[test]
fn a_search_may_start_above_one_and_stays_in_whole_streams() {
    let (search, ran) = run(config(c(3)), slots(10));
    assert_eq!(ran, [c(3), c(6), c(12), c(9), c(10), c(11)]);
    assert_eq!(search.verdict().max_load, Some(c(10)));
}

#[test]
fn options_resolve_with_defaults_and_name_what_is_wrong() {
    let cfg = config(c(1));
    assert_eq!(cfg.max_load, DEFAULT_MAX_LOAD);
    assert_eq!(cfg.max_levels, DEFAULT_MAX_LEVELS);
    assert_eq!(cfg.min_gain_pct, DEFAULT_MIN_GAIN_PCT);
    assert_eq!(cfg.attainment_pct, DEFAULT_ATTAINMENT_PCT);
    assert_eq!(cfg.resolution_pct, RESOLUTION_PCT);
    // A start above the default cap raises the cap to it.
    assert_eq!(config(c(2000)).max_load, 2000.0);
    let bad: [(FindMaxOptions, &str); 6] = [
        (
            FindMaxOptions {
                max_load: Some(0.5),
                ..Default::default()
            },
            "max load",
        ),
        (
            FindMaxOptions {
                max_load: Some(8.5),
                ..Default::default()
            },
            "whole number",
        ),
        (
            FindMaxOptions {
                max_levels: Some(0),
                ..Default::default()
            },
            "max levels",
        ),
        (
            FindMaxOptions {
                max_levels: Some(65),
                ..Default::default()
            },
            "max levels",
        ),
        (
            FindMaxOptions {
                min_gain_pct: Some(-1.0),
                ..Default::default()
            },
            "min gain",
        ),
        (
            FindMaxOptions {
                attainment_pct: Some(101.0),
                ..Default::default()
            },
            "attainment",
        ),
    ];
    for (o, says) in bad {
        let e = o.resolve(c(1)).unwrap_err().to_string();
        assert!(e.contains(says) && e.contains("find-max"), "{o:?}: {e}");
    }
    assert_eq!(
        FindMaxOptions {
            max_load: Some(8.5),
            ..Default::default()
        }
        .resolve(LoadLevel::Rate(1.0))
        .unwrap()
        .max_load,
        8.5
    );
}
