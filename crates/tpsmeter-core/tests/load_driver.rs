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
use tpsmeter_core::plan::LoadLevel;
use tpsmeter_core::request::Redactor;
use tpsmeter_core::{BenchOptions, Exchange, Outcome, Shard};

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
    let arrivals = tpsmeter_core::plan::poisson_arrivals(
        1000.0,
        tpsmeter_core::plan::ArrivalLimit::Count(50),
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

/// Regression (issue 24): a server that echoed the key in its 401 body, its `Retry-After`
/// header, an in-stream error event or a finish reason got it stored in the record, and
/// from there printed on the terminal, written to `--json` and kept in IndexedDB.
#[test]
fn records_never_hold_the_key_a_server_echoed() {
    const KEY: &str = "sk-echo-Zq8/Wx+Vb7=Nm6Lk5";
    let url_key = "sk-echo-Zq8%2FWx%2BVb7%3DNm6Lk5";
    let o = options(|o| {
        o.requests = Some(5);
    });
    let spec = o
        .request_spec(Some(tpsmeter_core::request::Secret::new(KEY)))
        .unwrap();
    let mut d = LoadDriver::new(&o, Redactor::for_spec(&spec)).unwrap();
    let (_, _) = simulate(&mut d, |t, start| {
        let mut ex = Exchange::new(tpsmeter_core::Api::OpenaiChat, start);
        let end = start + 5.0;
        match t.id {
            0 => {
                ex.on_response(401, None);
                let body = format!(
                    r#"{{"error":{{"message":"Invalid API key provided: Bearer {KEY}"}}}}"#
                );
                ex.on_bytes(start + 1.0, body.as_bytes());
                ex.on_body_end(end);
            }
            1 => {
                ex.on_response(429, Some(&format!("Bearer {}", &KEY[..20])));
                ex.on_body_end(end);
            }
            2 => {
                ex.on_response(200, None);
                let event = format!(
                    "data: {{\"error\":{{\"message\":\"bad key {url_key}\",\"code\":\"{KEY}\"}}}}\n\n"
                );
                ex.on_bytes(start + 1.0, event.as_bytes());
                ex.on_body_end(end);
            }
            3 => {
                ex.on_response(200, None);
                let line = format!(
                    "data: {{\"choices\":[{{\"delta\":{{\"content\":\"x\"}},\"finish_reason\":\"{KEY}\"}}]}}\n\ndata: [DONE]\n\n"
                );
                ex.on_bytes(start + 1.0, line.as_bytes());
            }
            _ => {
                ex.on_response(503, None);
                let masked = format!("key {}***{}", &KEY[..10], &KEY[KEY.len() - 8..]);
                ex.on_bytes(start + 1.0, masked.as_bytes());
                ex.on_body_end(end);
            }
        }
        (ex.into_outcome(), end)
    });
    let (_, records) = d.into_parts();
    assert_eq!(records.len(), 5);
    for r in &records {
        let json = r.to_json_line();
        for w in KEY
            .as_bytes()
            .windows(8)
            .chain(url_key.as_bytes().windows(8))
        {
            let w = std::str::from_utf8(w).unwrap();
            assert!(!json.contains(w), "record {} holds {w:?}: {json}", r.id);
        }
    }
    // The records still say what happened, with the key replaced.
    let messages: Vec<&str> = records
        .iter()
        .filter_map(|r| r.error.as_ref().map(|e| e.message.as_str()))
        .collect();
    assert!(
        messages[0].contains("Invalid API key provided: Bearer REDACTED"),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("Retry-After: Bearer REDACTED")),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m.contains("bad key REDACTED")),
        "{messages:?}"
    );
}

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

#[test]
fn transport_timing_parts_reach_the_record_and_split_the_clients_queue() {
    let o = options(|o| o.requests = Some(3));
    let mut d = LoadDriver::new(&o, Redactor::default()).unwrap();
    let mut done = Vec::new();
    for extras in [
        // The CLI: the timeline's queue (hand-over → sent, 50 ms) holds the set-up.
        RecordExtras {
            dns_ms: Some(5.0),
            connect_ms: Some(30.0),
            wait_ms: Some(12.0),
            ..RecordExtras::default()
        },
        // The browser: its queue comes without the set-up already.
        RecordExtras {
            queue_ms: Some(3.0),
            connect_ms: Some(30.0),
            tls_ms: Some(8.0),
            ..RecordExtras::default()
        },
        // Nonsense from a page is dropped, not recorded.
        RecordExtras {
            connect_ms: Some(f64::NAN),
            wait_ms: Some(-1.0),
            ..RecordExtras::default()
        },
    ] {
        let Action::Start(ticket) = d.next(0.0).unwrap() else {
            panic!("a start");
        };
        let (mut outcome, end) = stream(0.0, 2);
        if extras.queue_ms.is_none() && extras.dns_ms.is_some() {
            let mut ex = Exchange::new(tpsmeter_core::Api::OpenaiChat, 0.0);
            ex.on_sent(50.0);
            ex.on_response(200, None);
            ex.on_bytes(
                70.0,
                b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n",
            );
            ex.on_bytes(71.0, b"data: [DONE]\n\n");
            outcome = ex.into_outcome();
        }
        done.push(d.complete(&ticket, outcome, extras, end).clone());
    }
    let cli = &done[0];
    assert_eq!(
        (cli.dns_ms, cli.connect_ms, cli.tls_ms, cli.wait_ms),
        (Some(5.0), Some(30.0), None, Some(12.0))
    );
    assert_eq!(cli.queue_ms, Some(15.0), "50 ms less the 35 ms of set-up");
    let page = &done[1];
    assert_eq!((page.queue_ms, page.tls_ms), (Some(3.0), Some(8.0)));
    assert_eq!((done[2].connect_ms, done[2].wait_ms), (None, None));
    let line = cli.to_json_line();
    assert!(
        line.contains("\"connect_ms\":30.0") && !line.contains("tls_ms"),
        "{line}"
    );
}

#[test]
fn find_max_chooses_each_next_level_and_the_report_says_where_it_stopped() {
    let o = options(|o| {
        o.slo = Some("ttft=50ms".into());
        o.find_max = Some(tpsmeter_core::FindMaxOptions::default());
        o.warmup = 1;
    });
    let mut d = LoadDriver::new(&o, Redactor::default()).unwrap();
    // A server that answers at once up to 4 streams and keeps every request waiting 100 ms
    // beyond (the simulation knows the level, not the server's queue).
    let (starts, max_inflight) = simulate(&mut d, |t, start| {
        let ttft = if t.level.value() <= 4.0 { 10.0 } else { 100.0 };
        stream_after(start, ttft, 5)
    });
    let c = LoadLevel::Concurrency;
    let ran: Vec<LoadLevel> = d.level_reports().iter().map(|l| l.level).collect();
    assert_eq!(ran, [c(1), c(2), c(4), c(8), c(6), c(5)]);
    assert_eq!(max_inflight, 8);
    // Each chosen level runs the options' default count (4 × c, at least 8) after its
    // warm-up request, like any listed level.
    assert_eq!(starts.len(), 8 + 8 + 16 + 32 + 24 + 20 + 6);
    let mut report = tpsmeter_core::Report::new(
        o.run_config(
            o.prompt_source(0),
            &tpsmeter_core::PromptPlan::new(&o, None, 1, None).unwrap(),
        )
        .unwrap(),
        tpsmeter_core::report::Environment::default(),
        d.level_reports().to_vec(),
        d.records().to_vec(),
        Vec::new(),
    );
    assert_eq!(
        report.config.levels,
        [c(1)],
        "the config knows only the start"
    );
    d.annotate(&mut report);
    assert_eq!(report.config.levels, ran);
    assert_eq!(report.config.find_max.unwrap().start, c(1));
    let v = report.find_max.as_ref().unwrap();
    assert_eq!(v.max_load, Some(c(4)));
    assert_eq!(v.lowest_failing, Some(c(5)));
    assert_eq!(v.stop, tpsmeter_core::find_max::FindMaxStop::SloBroken);
    assert_eq!(v.steps.len(), 6);
    // The report reads back with its verdict.
    let back = tpsmeter_core::Report::from_json(&report.to_json()).unwrap();
    assert_eq!(back.find_max, report.find_max);
}

type Mutation = fn(&mut BenchOptions);

#[test]
fn find_max_needs_an_slo_one_start_level_and_no_shards() {
    let search = |f: Mutation| {
        let o = options(|o| {
            o.slo = Some("ttft=1s".into());
            o.find_max = Some(tpsmeter_core::FindMaxOptions::default());
            f(o);
        });
        LoadDriver::new_shard(&o, Shard::WHOLE, Redactor::default()).map(|_| ())
    };
    search(|_| {}).unwrap();
    let cases: [(Mutation, &str); 3] = [
        (|o| o.slo = None, "needs an SLO"),
        (|o| o.concurrency = vec![1, 2], "give one concurrency"),
        (
            |o| o.rate = vec![1.0, 2.0],
            "give one concurrency (or rate)",
        ),
    ];
    for (f, says) in cases {
        let e = search(f).unwrap_err().to_string();
        assert!(e.contains(says), "{e}");
    }
    let o = options(|o| {
        o.slo = Some("ttft=1s".into());
        o.find_max = Some(tpsmeter_core::FindMaxOptions::default());
    });
    let e = LoadDriver::new_shard(&o, Shard::new(0, 2).unwrap(), Redactor::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot run sharded"), "{e}");
}
