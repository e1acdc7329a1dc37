//! The load driver on a simulated clock: every request takes a fixed time, so each rule
//! (concurrency never exceeded, warm-up excluded, open-loop schedule and cap, back-off
//! after 429, duration stop, cancellation) has an exact expected trace.

#![allow(clippy::unwrap_used)]

// In the browser (`cargo xtask browser-test`) the same `#[test]` functions run in headless
// Chromium through wasm-bindgen-test.
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

use tpsmeter_core::drive::{Action, LoadDriver, RecordExtras, Ticket};
use tpsmeter_core::failure::Failure;
use tpsmeter_core::load::LoadLevel;
use tpsmeter_core::request::Redactor;
use tpsmeter_core::{BenchOptions, Exchange, Outcome, Shard};

mod find_max;
mod max_duration;
mod ramp_up;
mod redaction;
mod shards;
mod timing_parts;

fn options(f: impl FnOnce(&mut BenchOptions)) -> BenchOptions {
    let mut o = BenchOptions {
        url: "http://127.0.0.1:1".into(),
        model: "m".into(),
        ..BenchOptions::default()
    };
    f(&mut o);
    o
}

/// One OpenAI-chat stream of `tokens` tokens, started at `start`, one token per ms after a
/// TTFT of 10 ms.
fn stream(start: f64, tokens: u32) -> (Outcome, f64) {
    stream_after(start, 10.0, tokens)
}

/// [`stream`] with its first token `ttft` ms after the start.
fn stream_after(start: f64, ttft: f64, tokens: u32) -> (Outcome, f64) {
    let mut ex = Exchange::new(tpsmeter_core::Api::OpenaiChat, start);
    ex.on_response(200, None);
    let mut t = start + ttft;
    for i in 0..tokens {
        let line = format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"t{i}\"}}}}]}}\n\n");
        ex.on_bytes(t, line.as_bytes());
        t += 1.0;
    }
    ex.on_bytes(t, b"data: [DONE]\n\n");
    assert!(ex.is_ended());
    (ex.into_outcome(), t)
}

/// Runs `driver` to the end on a virtual clock where every request's outcome comes from
/// `serve(ticket, start)`. Returns the trace of starts (time, ticket) and the max in flight.
fn simulate(
    driver: &mut LoadDriver,
    mut serve: impl FnMut(&Ticket, f64) -> (Outcome, f64),
) -> (Vec<(f64, Ticket)>, usize) {
    let mut now = 0.0;
    let mut inflight: Vec<(f64, Ticket, Outcome)> = Vec::new();
    let mut starts = Vec::new();
    let mut max_inflight = 0;
    for _ in 0..100_000 {
        match driver.next(now).unwrap() {
            Action::Start(ticket) => {
                let (outcome, end) = serve(&ticket, now);
                starts.push((now, ticket));
                inflight.push((end, ticket, outcome));
                max_inflight = max_inflight.max(inflight.len());
                continue;
            }
            Action::Done => return (starts, max_inflight),
            Action::Sleep { until_ms } => {
                assert!(until_ms > now, "sleep into the past: {until_ms} at {now}");
                let next_end = inflight.iter().map(|e| e.0).reduce(f64::min);
                match next_end {
                    Some(end) if end <= until_ms => {}
                    _ => {
                        now = until_ms;
                        continue;
                    }
                }
            }
            Action::Wait => assert!(!inflight.is_empty(), "wait with nothing in flight"),
        }
        // Complete the earliest request.
        let i = (0..inflight.len())
            .min_by(|&a, &b| inflight[a].0.total_cmp(&inflight[b].0))
            .unwrap();
        let (end, ticket, outcome) = inflight.swap_remove(i);
        now = now.max(end);
        driver.complete(&ticket, outcome, RecordExtras::default(), now);
    }
    panic!("the driver did not finish");
}

#[test]
fn closed_loop_keeps_exactly_c_in_flight_and_runs_each_level() {
    let o = options(|o| {
        o.concurrency = vec![1, 3];
        o.requests = Some(6);
        o.warmup = 2;
    });
    let mut d = LoadDriver::new(&o, Redactor::default()).unwrap();
    let (starts, max_inflight) = simulate(&mut d, |_, t| stream(t, 5));
    assert_eq!(max_inflight, 3);
    // 2 warm-up + 6 measured per level.
    assert_eq!(starts.len(), 16);
    let ids: Vec<u64> = starts.iter().map(|s| s.1.id).collect();
    assert_eq!(ids, (0..16).collect::<Vec<_>>(), "ids in start order");
    let (levels, records) = d.into_parts();
    assert_eq!(levels.len(), 2);
    assert_eq!(levels[0].level, LoadLevel::Concurrency(1));
    for l in &levels {
        assert_eq!(l.summary.completed, 6, "warm-up excluded");
        assert_eq!(l.summary.succeeded, 6);
        assert_eq!(l.summary.output_tokens, 30);
    }
    assert_eq!(records.iter().filter(|r| r.warmup).count(), 4);
    // At concurrency 1, each request starts when the previous one ends.
    let level0: Vec<f64> = starts[2..8].iter().map(|s| s.0).collect();
    for w in level0.windows(2) {
        assert_eq!(w[1] - w[0], 15.0);
    }
}

#[test]
fn open_loop_follows_the_schedule_and_queues_behind_the_cap() {
    let o = options(|o| {
        o.rate = vec![1000.0];
        o.requests = Some(50);
        o.max_concurrency = 2;
        o.seed = Some(7);
    });
    let mut d = LoadDriver::new(&o, Redactor::default()).unwrap();
    // Requests last 30 ms at ~1 ms mean arrival gaps: the cap of 2 must hold them back.
    let (starts, max_inflight) = simulate(&mut d, |_, t| stream(t, 20));
    assert_eq!(max_inflight, 2);
    assert_eq!(starts.len(), 50);
    let arrivals = tpsmeter_core::load::poisson_arrivals(
        1000.0,
        tpsmeter_core::load::ArrivalLimit::Count(50),
        7,
    )
    .unwrap();
    for ((t, ticket), offset) in starts.iter().zip(&arrivals) {
        let scheduled = ticket.scheduled_ms.unwrap();
        assert_eq!(scheduled, *offset, "scheduled at the schedule's offset");
        assert!(*t >= scheduled, "never before its arrival");
    }
    let (_, records) = d.into_parts();
    let queued = records
        .iter()
        .filter(|r| r.start_ms > r.scheduled_ms.unwrap())
        .count();
    assert!(queued > 40, "{queued} of 50 waited behind the cap");
}

#[test]
fn a_429_pauses_only_its_slot_for_retry_after() {
    let o = options(|o| {
        o.concurrency = vec![2];
        o.requests = Some(200);
    });
    let mut d = LoadDriver::new(&o, Redactor::default()).unwrap();
    let (starts, _) = simulate(&mut d, |ticket, t| {
        if ticket.id == 0 {
            let mut ex = Exchange::new(tpsmeter_core::Api::OpenaiChat, t);
            ex.on_response(429, Some("2"));
            ex.on_body_end(t + 1.0);
            (ex.into_outcome(), t + 1.0)
        } else {
            stream(t, 5)
        }
    });
    // The other slot keeps going; the paused slot's next start is 2 s after the 429.
    let later: Vec<f64> = starts.iter().map(|s| s.0).filter(|&t| t > 0.0).collect();
    assert!(later.iter().any(|&t| t < 100.0), "the other slot went on");
    assert!(
        later.iter().any(|&t| (t - 2001.0).abs() < 1e-9),
        "{later:?}"
    );
    let (levels, records) = d.into_parts();
    assert_eq!(levels[0].summary.completed, 200);
    assert_eq!(records[0].error.as_ref().unwrap().retry_after_s, Some(2.0));
}

#[test]
fn duration_levels_stop_starting_at_the_deadline() {
    let o = options(|o| {
        o.concurrency = vec![1];
        o.duration_s = Some(0.1);
    });
    let mut d = LoadDriver::new(&o, Redactor::default()).unwrap();
    let (starts, _) = simulate(&mut d, |_, t| stream(t, 20));
    // 30 ms per request: starts at 0, 30, 60, 90; the one started at 90 ends at 120,
    // after the 100 ms window, and is not counted.
    assert_eq!(starts.len(), 4);
    let (levels, _) = d.into_parts();
    assert_eq!(levels[0].summary.completed, 3);
    assert_eq!(levels[0].summary.end_ms, 100.0);
}

#[test]
fn cancel_starts_nothing_more_and_still_summarises_the_level() {
    let o = options(|o| {
        o.concurrency = vec![2, 4];
        o.requests = Some(100);
    });
    let mut d = LoadDriver::new(&o, Redactor::default()).unwrap();
    let mut started = 0;
    let mut pending = Vec::new();
    while let Action::Start(t) = d.next(0.0).unwrap() {
        started += 1;
        pending.push(t);
    }
    assert_eq!(started, 2);
    d.cancel();
    assert_eq!(d.next(1.0).unwrap(), Action::Wait);
    for t in pending {
        let outcome = Outcome::failed_at(0.0, 1.0, Failure::Cancelled);
        d.complete(&t, outcome, RecordExtras::default(), 1.0);
    }
    assert_eq!(d.next(1.0).unwrap(), Action::Done);
    let (levels, records) = d.into_parts();
    assert_eq!(levels.len(), 1, "the second level never ran");
    assert_eq!(records.len(), 2);
    assert_eq!(
        levels[0]
            .summary
            .errors
            .get(&tpsmeter_core::report::ErrorClass::Cancelled),
        Some(&2)
    );
}

#[test]
fn invalid_options_are_refused_before_anything_starts() {
    let o = options(|o| o.concurrency = vec![]);
    assert!(LoadDriver::new(&o, Redactor::default()).is_err());
}

/// Issue 35: a count the caller makes off its loop (`count_pending`) frees the request's
/// slot at once, but the level's summary waits for it and carries it.
#[test]
fn a_pending_count_frees_the_slot_and_the_summary_waits_for_it() {
    let o = options(|o| {
        o.concurrency = vec![1];
        o.requests = Some(2);
    });
    let mut d = LoadDriver::new(&o, Redactor::default()).unwrap();
    let pending = RecordExtras {
        count_pending: true,
        ..RecordExtras::default()
    };
    let Action::Start(first) = d.next(0.0).unwrap() else {
        panic!("first start")
    };
    let (outcome, end) = stream(0.0, 5);
    let timeline = outcome.timeline.clone();
    d.complete(&first, outcome, pending.clone(), end);
    // The slot is free before the count is in.
    let Action::Start(second) = d.next(end).unwrap() else {
        panic!("the next request waits for a count")
    };
    let (outcome2, end2) = stream(end, 5);
    let timeline2 = outcome2.timeline.clone();
    d.complete(&second, outcome2, pending, end2);
    assert_eq!(d.next(end2).unwrap(), Action::Wait, "the summary waits");
    assert!(d.level_reports().is_empty());
    assert_eq!(
        d.counted(&first, &timeline, Some(40))
            .unwrap()
            .output_tokens,
        40
    );
    assert!(
        d.counted(&first, &timeline, Some(40)).is_none(),
        "counted once"
    );
    assert_eq!(d.next(end2).unwrap(), Action::Wait);
    d.counted(&second, &timeline2, Some(60));
    assert_eq!(d.next(end2).unwrap(), Action::Done);
    assert_eq!(d.level_reports()[0].summary.output_tokens, 100);
}
