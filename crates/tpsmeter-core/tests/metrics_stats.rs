//! Statistics against hand-computed values, load-plan parsing, Poisson schedules, and
//! phase summaries of synthetic records.
#![allow(clippy::unwrap_used)]

// In the browser (`cargo xtask browser-test`) the same `#[test]` functions run in headless
// Chromium through wasm-bindgen-test.
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

use proptest::prelude::*;
use tpsmeter_core::event::StreamEvent;
use tpsmeter_core::level_summary::{PhaseSummary, per_user_tps_degradation};
use tpsmeter_core::load::{
    ArrivalLimit, StopCondition, parse_concurrency_levels, parse_rates, poisson_arrivals,
};
use tpsmeter_core::metrics::TokenCountSource;
use tpsmeter_core::report::{ErrorClass, ErrorRecord, LevelReport, RequestRecord};
use tpsmeter_core::{CoreError, LoadLevel, LoadPlan, Slo, Summary, Timeline};

fn approx(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn summary_of_one_to_five() {
    let s = Summary::from_values(&[3.0, 1.0, 5.0, 2.0, 4.0]).unwrap();
    assert_eq!((s.count, s.min, s.max), (5, 1.0, 5.0));
    assert!(approx(s.mean, 3.0));
    // Sample variance: (4 + 1 + 0 + 1 + 4) / 4 = 2.5.
    assert!(approx(s.stddev, 2.5f64.sqrt()));
    // Type 7: h = 4p. p50 → x[2]; p90 → 4 + 0.6; p95 → 4 + 0.8; p99 → 4 + 0.96.
    assert!(approx(s.p50, 3.0));
    assert!(approx(s.p90, 4.6));
    assert!(approx(s.p95, 4.8));
    assert!(approx(s.p99, 4.96));
}

#[test]
fn summary_of_one_to_ten_interpolates() {
    let v: Vec<f64> = [7, 2, 9, 1, 10, 4, 3, 8, 6, 5]
        .iter()
        .map(|&x| f64::from(x))
        .collect();
    let s = Summary::from_values(&v).unwrap();
    // h = 9p: p50 → 4.5 → 5.5; p90 → 8.1 → 9.1; p95 → 8.55 → 9.55; p99 → 8.91 → 9.91.
    assert!(approx(s.p50, 5.5));
    assert!(approx(s.p90, 9.1));
    assert!(approx(s.p95, 9.55));
    assert!(approx(s.p99, 9.91));
    // Sum of squared deviations of 1..=10 around 5.5 is 82.5; / 9.
    assert!(approx(s.stddev, (82.5f64 / 9.0).sqrt()));
}

#[test]
fn summary_edge_cases() {
    assert_eq!(Summary::from_values(&[]), None);
    assert_eq!(Summary::from_values(&[f64::NAN, f64::INFINITY]), None);
    let one = Summary::from_values(&[7.0]).unwrap();
    assert_eq!(
        (one.count, one.stddev, one.p50, one.p99),
        (1, 0.0, 7.0, 7.0)
    );
    // Non-finite values are skipped, not propagated.
    let s = Summary::from_values(&[f64::NAN, 1.0, f64::NEG_INFINITY, 3.0]).unwrap();
    assert_eq!(s.count, 2);
    assert!(approx(s.mean, 2.0) && approx(s.p50, 2.0));
}

proptest! {
    #[test]
    fn percentiles_are_ordered_and_bounded(v in prop::collection::vec(-1e6f64..1e6, 1..200)) {
        let s = Summary::from_values(&v).unwrap();
        prop_assert_eq!(s.count, v.len());
        prop_assert!(s.min <= s.p50 && s.p50 <= s.p90 && s.p90 <= s.p95);
        prop_assert!(s.p95 <= s.p99 && s.p99 <= s.max);
        prop_assert!(s.mean >= s.min - 1e-6 && s.mean <= s.max + 1e-6);
        prop_assert!(s.stddev >= 0.0);
    }
}

#[test]
fn concurrency_and_rate_lists_parse() {
    assert_eq!(
        parse_concurrency_levels("1,10,25,50").unwrap(),
        vec![1, 10, 25, 50]
    );
    assert_eq!(parse_concurrency_levels(" 4 , 2 ").unwrap(), vec![4, 2]);
    assert_eq!(parse_rates("0.5,2").unwrap(), vec![0.5, 2.0]);
    for bad in ["", "1,,2", "0", "a", "1.5", "100001", "-1", "1,"] {
        assert!(
            matches!(
                parse_concurrency_levels(bad),
                Err(CoreError::InvalidSpec { .. })
            ),
            "{bad:?}"
        );
    }
    for bad in ["0", "-2", "inf", "NaN", "x"] {
        assert!(parse_rates(bad).is_err(), "{bad:?}");
    }
    let plan = LoadPlan::concurrency("1,2", StopCondition::Requests(20), 3).unwrap();
    assert_eq!(
        plan.levels,
        vec![LoadLevel::Concurrency(1), LoadLevel::Concurrency(2)]
    );
    assert!(LoadPlan::concurrency("1", StopCondition::Requests(0), 0).is_err());
    assert!(LoadPlan::rates("1", StopCondition::DurationS(-1.0), 0).is_err());
    let open = LoadPlan::rates("2.5", StopCondition::DurationS(30.0), 0).unwrap();
    assert_eq!(open.levels, vec![LoadLevel::Rate(2.5)]);
}

#[test]
fn poisson_schedule_has_the_requested_rate_and_exponential_gaps() {
    let n = 20_000;
    let t = poisson_arrivals(10.0, ArrivalLimit::Count(n), 42).unwrap();
    assert_eq!(t.len(), n);
    assert!(t.windows(2).all(|w| w[0] <= w[1]));
    let gaps: Vec<f64> = std::iter::once(t[0])
        .chain(t.windows(2).map(|w| w[1] - w[0]))
        .collect();
    let s = Summary::from_values(&gaps).unwrap();
    // Mean gap 100 ms; its standard error is 100/√20000 ≈ 0.7 ms, so ±3 ms is > 4σ.
    assert!((s.mean - 100.0).abs() < 3.0, "mean gap {}", s.mean);
    // Exponential gaps: stddev ≈ mean (a fixed-interval schedule would give 0).
    assert!(
        (s.stddev / s.mean - 1.0).abs() < 0.05,
        "cv {}",
        s.stddev / s.mean
    );
    // Median of Exp(mean 100) is 100·ln 2 ≈ 69.3.
    assert!((s.p50 - 69.3).abs() < 4.0, "median gap {}", s.p50);
}

#[test]
fn poisson_schedule_is_deterministic_per_seed() {
    let a = poisson_arrivals(3.0, ArrivalLimit::Count(100), 7).unwrap();
    let b = poisson_arrivals(3.0, ArrivalLimit::Count(100), 7).unwrap();
    let c = poisson_arrivals(3.0, ArrivalLimit::Count(100), 8).unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn poisson_horizon_schedule() {
    let h = 600_000.0;
    let t = poisson_arrivals(5.0, ArrivalLimit::HorizonMs(h), 1).unwrap();
    // Expect 3000 ± √3000 ≈ 55; allow 10 %.
    assert!(
        (t.len() as f64 - 3000.0).abs() < 300.0,
        "{} arrivals",
        t.len()
    );
    assert!(t.iter().all(|&x| (0.0..h).contains(&x)));
    assert!(
        poisson_arrivals(5.0, ArrivalLimit::HorizonMs(0.0), 1)
            .unwrap()
            .is_empty()
    );
    for bad in [0.0, -1.0, 1e-300, f64::NAN, f64::INFINITY] {
        assert!(poisson_arrivals(bad, ArrivalLimit::Count(1), 0).is_err());
    }
    assert!(poisson_arrivals(1.0, ArrivalLimit::HorizonMs(f64::NAN), 0).is_err());
}

/// A successful request whose content reads arrive at `times` (one token each).
fn record(id: u64, start: f64, times: &[f64], end: f64, warmup: bool) -> RequestRecord {
    let mut t = Timeline::new(start);
    for &at in times {
        t.on_bytes(at, 10);
        t.on_chunk(at, &[StreamEvent::ContentDelta { text: "x".into() }]);
    }
    t.finish(end);
    RequestRecord::from_timeline(
        id,
        LoadLevel::Concurrency(2),
        warmup,
        &t,
        Some(200),
        None,
        false,
    )
}

#[test]
fn phase_summary_counts_only_measured_requests_in_the_phase() {
    let failed = {
        let t = {
            let mut t = Timeline::new(200.0);
            t.finish(300.0);
            t
        };
        let e = ErrorRecord::new(ErrorClass::Http5xx, "503 Service Unavailable");
        RequestRecord::from_timeline(
            2,
            LoadLevel::Concurrency(2),
            false,
            &t,
            Some(503),
            Some(e),
            false,
        )
    };
    let records = vec![
        record(0, 0.0, &[100.0, 150.0, 200.0], 250.0, false), // ttft 100, tpot 75, 12 tok/s
        record(1, 100.0, &[300.0, 400.0], 500.0, false),      // ttft 200, tpot 200, 5 tok/s
        failed,
        record(3, 0.0, &[20.0], 50.0, true), // warm-up: excluded
        record(4, 900.0, &[1000.0], 1500.0, false), // ends after the phase: excluded
    ];
    let slo = Slo::parse("tpot=100ms").unwrap();
    let p = PhaseSummary::from_records(&records, 0.0, 1000.0, Some(&slo));
    assert_eq!((p.completed, p.succeeded, p.failed), (3, 2, 1));
    assert_eq!(p.errors.get(&ErrorClass::Http5xx), Some(&1));
    assert_eq!(p.errors.len(), 1);
    assert_eq!(p.output_tokens, 5);
    assert_eq!(p.token_sources.get(&TokenCountSource::Chunks), Some(&2));
    assert_eq!(p.usage_chunk_discrepancy, None); // no usage reported
    assert!(approx(p.aggregate_output_tps.unwrap(), 5.0));
    assert!(approx(p.request_throughput.unwrap(), 2.0));
    let ttft = p.ttft_ms.unwrap();
    assert_eq!((ttft.count, ttft.min, ttft.max), (2, 100.0, 200.0));
    assert!(approx(ttft.p50, 150.0));
    let tpot = p.tpot_ms.unwrap();
    assert_eq!((tpot.min, tpot.max), (75.0, 200.0));
    let tps = p.output_tps.unwrap();
    assert!(approx(tps.min, 5.0) && approx(tps.max, 12.0));
    // Pooled per-chunk gaps: [50, 50] and [100].
    let itl = p.itl_chunk_ms.unwrap();
    assert_eq!((itl.count, itl.max), (3, 100.0));
    assert!(approx(itl.mean, 200.0 / 3.0));
    let g = p.goodput.unwrap();
    assert_eq!(g.met, 1);
    assert!(approx(g.requests_per_s.unwrap(), 1.0));
    assert!(approx(g.fraction.unwrap(), 1.0 / 3.0));

    let no_slo = PhaseSummary::from_records(&records, 0.0, 1000.0, None);
    assert_eq!(no_slo.goodput, None);
    let empty = PhaseSummary::from_records(&[], 5.0, 5.0, None);
    assert_eq!(
        (empty.completed, empty.ttft_ms, empty.request_throughput),
        (0, None, None)
    );
}

#[test]
fn degradation_is_relative_to_the_lowest_level() {
    let level = |c: u32, tps: Option<f64>| {
        let mut summary = PhaseSummary::from_records(&[], 0.0, 1000.0, None);
        summary.output_tps = tps.and_then(|v| Summary::from_values(&[v]));
        LevelReport {
            level: LoadLevel::Concurrency(c),
            summary,
        }
    };
    let levels = [
        level(10, Some(15.0)),
        level(1, Some(20.0)),
        level(50, Some(5.0)),
        level(100, None),
    ];
    let d = per_user_tps_degradation(&levels);
    assert_eq!(d.len(), 4);
    assert_eq!(d[0].level, LoadLevel::Concurrency(10));
    assert!(approx(d[0].ratio.unwrap(), 0.75) && approx(d[0].degradation_pct.unwrap(), 25.0));
    assert!(approx(d[1].ratio.unwrap(), 1.0) && approx(d[1].degradation_pct.unwrap(), 0.0));
    assert!(approx(d[2].degradation_pct.unwrap(), 75.0));
    assert_eq!((d[3].ratio, d[3].per_user_tps_p50), (None, None));
}
