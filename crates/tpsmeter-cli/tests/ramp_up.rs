//! Ramp-up and the wait before the first byte (issue 27, item 7), against the emulator with
//! a small listen backlog and a slow or paused accept loop.
//!
//! The target: against a server with a listen backlog of 5, `--ramp-up 10s` at
//! c=100 completes every request, and the report shows where the waiting was. Here scaled
//! to seconds: c=100 against a backlog of 5 on a server that accepts a connection every
//! 2 ms at most, opened over 2 s (50 new connections a second, where the 10 s is 10
//! a second against a slower server), each request lasting longer than the ramp so that
//! all 100 are in flight at once. In one burst, the connects beyond the backlog have their
//! SYN dropped and wait 1 s, 3 s ... for its retry, which the records show as `connect_ms`
//! (the first test makes such a burst on purpose).
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{argv, bench, measured};
use tpsmeter_cli::bench::BenchResult;
use tpsmeter_core::report::RequestRecord;
use tpsmeter_emulator::{Emulator, EmulatorConfig, Fault, Schedule};

/// A SYN dropped by a full backlog is sent again after 1 s (Linux's initial RTO): a connect
/// that long went through a retry.
const SYN_RETRY_MS: f64 = 900.0;

async fn emulator(cfg: EmulatorConfig) -> Emulator {
    Emulator::start(cfg).await.unwrap()
}

fn schedule(ttft_ms: u64, itl_ms: u64, tokens: u32) -> Schedule {
    Schedule {
        ttft: Duration::from_millis(ttft_ms),
        itl: Duration::from_millis(itl_ms),
        output_tokens: tokens,
    }
}

/// An emulator whose listen backlog is `backlog` and that accepts nothing for `pause` after
/// its first connection.
async fn paused(backlog: u32, pause: Duration, schedule: Schedule) -> Emulator {
    emulator(EmulatorConfig {
        schedule,
        backlog: Some(backlog),
        accept_pause: pause,
        ..EmulatorConfig::default()
    })
    .await
}

/// `c` requests at concurrency `c` against `url`, asking `tokens` tokens each, then `extra`.
async fn run(url: &str, c: u32, tokens: u32, extra: &[&str]) -> BenchResult {
    let (c, tokens) = (c.to_string(), tokens.to_string());
    let mut args = argv(
        "openai-chat",
        url,
        &[
            "--concurrency",
            &c,
            "--requests",
            &c,
            "--max-tokens",
            &tokens,
        ],
    );
    args.extend_from_slice(extra);
    bench(&args).await
}

/// The most requests in flight at once, from the records' send and end times.
fn peak_in_flight(records: &[&RequestRecord]) -> usize {
    let mut edges: Vec<(f64, i32)> = records
        .iter()
        .flat_map(|r| [(r.start_ms, 1), (r.end_ms, -1)])
        .collect();
    edges.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut now, mut peak) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        peak = peak.max(now);
    }
    peak as usize
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ramp_up_opens_a_hundred_streams_within_a_backlog_of_five() {
    let emu = emulator(EmulatorConfig {
        // 45 tokens 50 ms apart: 2.25 s per request, longer than the ramp.
        schedule: schedule(5, 50, 45),
        backlog: Some(5),
        accept_interval: Duration::from_millis(2),
        ..EmulatorConfig::default()
    })
    .await;
    let result = run(
        &emu.base_url(),
        100,
        45,
        &["--ramp-up", "2s", "--timeout", "30"],
    )
    .await;
    let report = &result.report;
    assert_eq!(report.config.ramp_up_s, Some(2.0));
    let records = measured(report);
    assert_eq!(records.len(), 100);
    let failed: Vec<_> = records.iter().filter(|r| !r.ok()).collect();
    assert!(failed.is_empty(), "every request completes: {failed:?}");
    assert_eq!(emu.stats().connections, 100, "a connection per stream");
    assert!(
        peak_in_flight(&records) >= 95,
        "the ramp still reached the level: {} in flight at most",
        peak_in_flight(&records)
    );
    // Streams opened over the ramp, not at once.
    let first = records.iter().map(|r| r.start_ms).fold(f64::MAX, f64::min);
    let last = records.iter().map(|r| r.start_ms).fold(f64::MIN, f64::max);
    assert!(
        last - first >= 1900.0,
        "starts spread over {} ms",
        last - first
    );
    // No connect waited for a SYN's retry: the backlog never overflowed.
    let connects: Vec<f64> = records.iter().map(|r| r.connect_ms.unwrap()).collect();
    let slowest = connects.iter().copied().fold(0.0, f64::max);
    assert!(slowest < SYN_RETRY_MS, "a connect took {slowest} ms");
    let summary = &report.levels[0].summary;
    assert!(summary.connect_ms.is_some() && summary.wait_ms.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_backlog_is_connect_time_and_an_unaccepted_connection_is_server_wait() {
    // The emulator accepts its first connection, then nothing for 400 ms. Of a burst of 8,
    // the kernel holds 2 (a backlog of 1 holds one more); the other 5 SYNs are dropped and
    // retried after 1 s, by when the server accepts again. Each request lasts 1.5 s, so no
    // connection is free for another request before the retries connect (hyper-util's pool
    // gives a waiting request whichever connection is ready first).
    let emu = paused(1, Duration::from_millis(400), schedule(5, 100, 15)).await;
    let result = run(&emu.base_url(), 8, 15, &["--timeout", "20"]).await;
    let records = measured(&result.report);
    assert!(records.iter().all(|r| r.ok()), "{records:?}");
    let parts: Vec<(f64, f64)> = records
        .iter()
        .map(|r| (r.connect_ms.unwrap(), r.wait_ms.unwrap()))
        .collect();
    // Dropped SYNs: the wait was the handshake, and the server answered at once after it.
    // Not every one: the five retries arrive together, and one whose handshake completes
    // while the accept queue is full again (the server's kernel drops the handshake's last
    // ACK, the client believes it connected) has its request retransmitted after 200 ms,
    // 400 ms ..., which is server wait, as it should be. Seen under load in CI.
    let retried: Vec<_> = parts.iter().filter(|p| p.0 >= SYN_RETRY_MS).collect();
    assert!(
        !retried.is_empty(),
        "no connect waited for a retry: {parts:?}"
    );
    assert!(
        retried.iter().any(|p| p.1 < 150.0),
        "every retried connect also waited on the server: {parts:?}"
    );
    // Held in the backlog: connected at once, then waited for the server to accept.
    assert!(
        parts.iter().any(|p| p.0 < 100.0 && p.1 >= 250.0),
        "none waited in the backlog: {parts:?}"
    );
    // TTFT counts from the request going out: the handshake is not in it, so it is the
    // server wait and the first token's few ms after it (a wait that may itself be a
    // retransmit's, as above), never the second-long connect before it.
    for r in &records {
        if r.connect_ms.unwrap() >= SYN_RETRY_MS {
            let (ttft, wait) = (r.metrics.ttft_ms.unwrap(), r.wait_ms.unwrap());
            assert!(ttft < wait + 100.0, "{r:?}");
        }
    }
    let summary = &result.report.levels[0].summary;
    assert!(summary.connect_ms.unwrap().max >= SYN_RETRY_MS);
    let table = tpsmeter_cli::output::table::render(&result.report);
    assert!(
        table.contains("Before the first byte") && table.contains("connect "),
        "{table}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_server_is_wait_time_and_a_reused_connection_connects_in_no_time() {
    let emu = emulator(EmulatorConfig {
        schedule: schedule(5, 1, 2),
        fault: Fault::SlowHeaders(Duration::from_millis(300)),
        ..EmulatorConfig::default()
    })
    .await;
    let url = emu.base_url();
    let result = bench(&argv(
        "openai-chat",
        &url,
        &["--concurrency", "1", "--requests", "2", "--max-tokens", "2"],
    ))
    .await;
    let records = measured(&result.report);
    assert!(records.iter().all(|r| r.ok()), "{records:?}");
    for r in &records {
        let (connect, wait) = (r.connect_ms.unwrap(), r.wait_ms.unwrap());
        assert!(wait >= 290.0, "server wait {wait} ms");
        assert!(connect < 100.0, "connect {connect} ms");
        // An IP address: no lookup. Plain http: no TLS.
        assert_eq!((r.dns_ms, r.tls_ms), (Some(0.0), None));
        // The wait is inside TTFT; the set-up is not.
        assert!(r.metrics.ttft_ms.unwrap() >= wait);
    }
    assert_eq!(
        emu.stats().connections,
        1,
        "the second request reused the connection"
    );
    assert_eq!(records[1].connect_ms, Some(0.0), "{:?}", records[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_timed_out_still_says_where_it_waited() {
    // The server accepts its first connection and then nothing for 5 s; the requests give
    // up after 0.6 s. Those held in the backlog had connected and waited on the server;
    // those whose SYN was dropped were still in the handshake.
    // The first request streams for 1 s, so its connection is not free to the others.
    let emu = paused(1, Duration::from_secs(5), schedule(5, 100, 10)).await;
    let result = run(&emu.base_url(), 5, 10, &["--timeout", "0.6"]).await;
    let records = measured(&result.report);
    let failed: Vec<_> = records.iter().filter(|r| !r.ok()).collect();
    assert_eq!(failed.len(), 4, "{records:?}");
    let in_handshake = failed
        .iter()
        .filter(|r| r.connect_ms.unwrap() >= 500.0 && r.wait_ms.is_none())
        .count();
    let in_backlog = failed
        .iter()
        .filter(|r| r.connect_ms.unwrap() < 100.0 && r.wait_ms.unwrap() >= 500.0)
        .count();
    assert!(in_handshake >= 1 && in_backlog >= 1, "{failed:?}");
    assert_eq!(in_handshake + in_backlog, 4, "{failed:?}");
}

/// `--max-duration`: a level run by request count against a slower server than hoped ends at
/// its time budget; what was in flight finishes, and the report says the level was cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_duration_ends_a_slow_level_and_the_report_says_so() {
    // 12 tokens 20 ms apart: ~250 ms a request; 40 requests at c=2 would take ~5 s.
    let emu = emulator(EmulatorConfig {
        schedule: schedule(10, 20, 12),
        ..EmulatorConfig::default()
    })
    .await;
    let url = emu.base_url();
    let args = argv(
        "openai-chat",
        &url,
        &[
            "--concurrency",
            "2",
            "--requests",
            "40",
            "--max-tokens",
            "12",
        ],
    );
    let mut capped = args.clone();
    capped.extend_from_slice(&["--max-duration", "0.6"]);
    let report = bench(&capped).await.report;
    assert_eq!(report.config.max_duration_s, Some(0.6));
    let records = measured(&report);
    assert!(
        (2..40).contains(&records.len()),
        "{} requests started within 0.6 s",
        records.len()
    );
    assert!(records.iter().all(|r| r.ok()), "those in flight finished");
    let last_start = records.iter().map(|r| r.start_ms).fold(f64::MIN, f64::max);
    let first_start = records.iter().map(|r| r.start_ms).fold(f64::MAX, f64::min);
    assert!(last_start - first_start < 600.0, "no start past the budget");
    assert_eq!(report.levels[0].summary.completed, records.len() as u64);
    let cut: Vec<_> = report
        .warnings
        .iter()
        .filter(|w| w.code == "max_duration")
        .collect();
    assert_eq!(cut.len(), 1, "{:?}", report.warnings);
    assert!(
        cut[0]
            .message
            .starts_with("level c=2 reached its time cap (0.6 s"),
        "{}",
        cut[0].message
    );
}
