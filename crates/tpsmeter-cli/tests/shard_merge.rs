//! A run spread over machines, on one: three `tpsmeter bench --shard i/3` runs against one
//! emulator, started together by a shared `--start-at`, merge with `tpsmeter merge` into
//! the report of the whole: every request, the whole's concurrency, and summaries that are
//! those of the union of the shards' records (never averages of the shards' summaries).
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{argv, bench, measured, schedule};
use tpsmeter_cli::bench::BenchResult;
use tpsmeter_cli::bench::start_at::now_unix_ms;
use tpsmeter_core::load::LoadLevel;
use tpsmeter_core::report::{Report, RequestRecord, ShardInfo};
use tpsmeter_core::stats::Summary;
use tpsmeter_emulator::{Emulator, EmulatorConfig};

/// How far ahead of the launch the shared start is: long enough for three in-process runs
/// to parse, validate and open their files before it, short for a test.
const LEAD_MS: f64 = 800.0;

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tpsmeter-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `tpsmeter bench --shard index/3` at concurrency 6, 12 requests, writing `shard-<i>.json`.
async fn shard(index: u32, url: &str, start_at: &str, dir: &Path) -> BenchResult {
    let spec = format!("{index}/3");
    let json = dir.join(format!("shard-{index}.json"));
    let json = json.to_str().unwrap();
    bench(&argv(
        "openai-chat",
        url,
        &[
            "--concurrency",
            "6",
            "--requests",
            "12",
            "--max-tokens",
            "8",
            "--shard",
            &spec,
            "--start-at",
            start_at,
            "--json",
            json,
        ],
    ))
    .await
}

/// Runs the binary off the async runtime (the emulator keeps serving on it).
async fn tpsmeter(args: Vec<String>) -> std::process::Output {
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_tpsmeter"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

/// Two summaries of the same values. The merged one was written to JSON and read back,
/// and serde_json reads a float back to within one ulp, not always exactly (its
/// `float_roundtrip` feature is off), so floats compare to 1e-12.
fn same(merged: Option<Summary>, recomputed: Option<Summary>) {
    let (m, r) = (merged.unwrap(), recomputed.unwrap());
    assert_eq!(m.count, r.count);
    let pairs = [
        (m.mean, r.mean),
        (m.stddev, r.stddev),
        (m.min, r.min),
        (m.max, r.max),
        (m.p50, r.p50),
        (m.p90, r.p90),
        (m.p95, r.p95),
        (m.p99, r.p99),
    ];
    for (a, b) in pairs {
        assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{m:?} vs {r:?}");
    }
}

/// A record's start on the wall clock.
fn unix_start(report: &Report, r: &RequestRecord) -> f64 {
    report.clock_origin_unix_ms.unwrap() + r.start_ms
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_shards_started_together_merge_into_the_whole_run() {
    let emu = Emulator::start(EmulatorConfig {
        schedule: schedule(8),
        ..EmulatorConfig::default()
    })
    .await
    .unwrap();
    let url = emu.base_url();
    let dir = temp_dir("shards");
    let start_at_ms = (now_unix_ms() + LEAD_MS).round();
    let start_at = format!("{:.3}", start_at_ms / 1000.0);
    let (a, b, c) = tokio::join!(
        shard(0, &url, &start_at, &dir),
        shard(1, &url, &start_at, &dir),
        shard(2, &url, &start_at, &dir),
    );
    // The reports as `merge` reads them: from the files (serde_json reads a float back to
    // within an ulp, so the in-memory reports can differ from the files in the last bit).
    let read = |name: String| Report::from_json(&std::fs::read_to_string(dir.join(name)).unwrap());
    let shards: Vec<Report> = (0..3)
        .map(|i| read(format!("shard-{i}.json")).unwrap())
        .collect();
    for (run, file) in [a, b, c].iter().zip(&shards) {
        assert_eq!(run.report.requests.len(), file.requests.len());
    }

    // Each shard ran its share (2 streams, 4 requests) and waited for the shared time.
    for (i, s) in shards.iter().enumerate() {
        assert_eq!(
            s.shard,
            Some(ShardInfo {
                index: i as u32,
                count: 3,
                start_at_unix_ms: Some(start_at_ms),
            })
        );
        assert_eq!(s.config.levels, [LoadLevel::Concurrency(6)], "the whole's");
        assert_eq!(s.levels[0].level, LoadLevel::Concurrency(2), "the share");
        assert_eq!(s.levels[0].summary.succeeded, 4);
        let first = measured(s)
            .into_iter()
            .map(|r| unix_start(s, r))
            .fold(f64::INFINITY, f64::min);
        assert!(
            s.clock_origin_unix_ms.unwrap() >= start_at_ms && first >= start_at_ms,
            "shard {i} sent its first request at {first}, before the start {start_at_ms}"
        );
        assert!(
            first - start_at_ms < 500.0,
            "shard {i} started {} ms after the shared start",
            first - start_at_ms
        );
    }
    assert_eq!(emu.stats().requests_served, 12);

    // `tpsmeter merge`, reports in any order.
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    let out = tpsmeter(vec![
        "merge".into(),
        path("shard-2.json"),
        path("shard-0.json"),
        path("shard-1.json"),
        "--json".into(),
        path("merged.json"),
        "--csv".into(),
        path("merged.csv"),
    ])
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("c=6") && stdout.contains("TTFT"),
        "{stdout}"
    );
    let merged = Report::from_json(&std::fs::read_to_string(path("merged.json")).unwrap()).unwrap();
    let csv = std::fs::read_to_string(path("merged.csv")).unwrap();
    assert_eq!(csv.lines().count(), 13, "header + 12 rows");

    // Every request of the whole, at the whole's concurrency, numbered once.
    assert_eq!(merged.shard, None);
    assert_eq!(merged.levels.len(), 1);
    let level = &merged.levels[0];
    assert_eq!(level.level, LoadLevel::Concurrency(6));
    assert_eq!((level.summary.completed, level.summary.succeeded), (12, 12));
    assert_eq!(merged.requests.len(), 12);
    let mut ids: Vec<u64> = merged.requests.iter().map(|r| r.id).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..12).collect::<Vec<_>>());
    assert!(
        merged
            .requests
            .iter()
            .all(|r| r.level == LoadLevel::Concurrency(6))
    );
    // The same requests at the same wall-clock times.
    let mut merged_starts: Vec<f64> = merged
        .requests
        .iter()
        .map(|r| unix_start(&merged, r))
        .collect();
    let mut shard_starts: Vec<f64> = shards
        .iter()
        .flat_map(|s| s.requests.iter().map(move |r| unix_start(s, r)))
        .collect();
    merged_starts.sort_by(f64::total_cmp);
    shard_starts.sort_by(f64::total_cmp);
    for (m, s) in merged_starts.iter().zip(&shard_starts) {
        assert!((m - s).abs() < 1e-3, "{m} vs {s}");
    }

    // Percentiles of the union of the shards' records, recomputed here from them.
    let union: Vec<&RequestRecord> = shards.iter().flat_map(measured).collect();
    let of = |f: &dyn Fn(&RequestRecord) -> Option<f64>| {
        Summary::from_values(&union.iter().filter_map(|r| f(r)).collect::<Vec<_>>())
    };
    let s = &level.summary;
    same(s.ttft_ms, of(&|r| r.metrics.ttft_ms));
    same(s.tpot_ms, of(&|r| r.metrics.tpot_ms));
    same(s.e2e_ms, of(&|r| r.metrics.e2e_ms));
    same(s.output_tps, of(&|r| r.metrics.output_tps));
    let gaps: Vec<f64> = union
        .iter()
        .flat_map(|r| r.metrics.itl_chunk_ms.iter().copied())
        .collect();
    same(s.itl_chunk_ms, Summary::from_values(&gaps));
    // Aggregate throughput over the union of the shards' windows, on the merged clock (the
    // origins' difference first: a Unix time in ms has only ~0.2 µs of precision left).
    let origin = merged.clock_origin_unix_ms.unwrap();
    let on_merged_clock = |s: &Report, t: f64| (s.clock_origin_unix_ms.unwrap() - origin) + t;
    let start = shards
        .iter()
        .map(|s| on_merged_clock(s, s.levels[0].summary.start_ms))
        .fold(f64::INFINITY, f64::min);
    let end = shards
        .iter()
        .map(|s| on_merged_clock(s, s.levels[0].summary.end_ms))
        .fold(f64::NEG_INFINITY, f64::max);
    assert!(
        (s.start_ms - start).abs() < 1e-6 && (s.end_ms - end).abs() < 1e-6,
        "merged window {}..{}, shards' {start}..{end}",
        s.start_ms,
        s.end_ms
    );
    let tokens: u64 = union.iter().map(|r| r.output_tokens).sum();
    assert_eq!(s.output_tokens, tokens);
    let expected_tps = tokens as f64 / ((end - start) / 1000.0);
    assert!((s.aggregate_output_tps.unwrap() - expected_tps).abs() < 1e-9 * expected_tps);

    // The same shard twice, or one missing: refused, naming the shard and the files.
    let out = tpsmeter(vec![
        "merge".into(),
        path("shard-0.json"),
        path("shard-0.json"),
        path("shard-1.json"),
    ])
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains("shard 0/3 is given twice") && stderr.contains("shard-0.json"),
        "{stderr}"
    );
    let out = tpsmeter(vec![
        "merge".into(),
        path("shard-0.json"),
        path("shard-1.json"),
    ])
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("shards 2 of 3 are missing"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_time_long_past_is_refused_before_any_request() {
    let emu = Emulator::start(EmulatorConfig {
        schedule: schedule(4),
        ..EmulatorConfig::default()
    })
    .await
    .unwrap();
    let url = emu.base_url();
    let args = common::parse(&argv(
        "openai-chat",
        &url,
        &["--requests", "1", "--start-at", "2020-01-01T00:00:00Z"],
    ));
    let e = tpsmeter_cli::bench::run_bench(&args, Default::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("in the past"), "{e}");
    assert_eq!(emu.stats().requests_served, 0);
    // Told to, it starts at once.
    let result = bench(&argv(
        "openai-chat",
        &url,
        &[
            "--requests",
            "1",
            "--start-at",
            "2020-01-01T00:00:00Z",
            "--allow-late-start",
        ],
    ))
    .await;
    assert_eq!(result.report.levels[0].summary.succeeded, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_without_a_share_of_a_level_says_so_and_still_succeeds() {
    // One stream over two shards: shard 1 has nothing to send at c=1, its share of c=2 is 1.
    let emu = Emulator::start(EmulatorConfig {
        schedule: schedule(4),
        ..EmulatorConfig::default()
    })
    .await
    .unwrap();
    let url = emu.base_url();
    let result = bench(&argv(
        "openai-chat",
        &url,
        &["--concurrency", "1,2", "--requests", "4", "--shard", "1/2"],
    ))
    .await;
    let r = &result.report;
    assert_eq!(r.levels[0].level, LoadLevel::Concurrency(0));
    assert_eq!(r.levels[0].summary.completed, 0);
    assert_eq!(r.levels[1].level, LoadLevel::Concurrency(1));
    assert_eq!(r.levels[1].summary.succeeded, 2);
    assert!(r.requests.iter().all(|q| q.level_index == Some(1)));
    let idle = &r.warnings[0];
    assert_eq!(idle.code, "shard_idle_level");
    assert!(idle.message.contains("no share of c=1"), "{}", idle.message);
    assert_eq!(
        result.status,
        tpsmeter_cli::exit::Status::Ok,
        "an idle level is no failure"
    );
}
