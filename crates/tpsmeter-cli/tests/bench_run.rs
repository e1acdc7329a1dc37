//! End-to-end runs of `tpsmeter bench` against the emulator: every API's stream is timed
//! and counted, per-request records reach disk, the exit status reflects SLOs, Ctrl-C still
//! writes the report, and the API key appears in no output.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{argv, bench, measured, schedule};
use tpsmeter_core::Api;
use tpsmeter_core::load::LoadLevel;
use tpsmeter_core::metrics::TokenCountSource;
use tpsmeter_core::report::{ErrorClass, Report};
use tpsmeter_emulator::{Emulator, EmulatorConfig, Fault};

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tpsmeter-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

async fn healthy(tokens_per_chunk: u32) -> Emulator {
    Emulator::start(EmulatorConfig {
        schedule: schedule(12),
        tokens_per_chunk,
        ..EmulatorConfig::default()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_api_streams_and_counts_every_token() {
    let emu = healthy(1).await;
    let url = emu.base_url();
    for api in Api::ALL {
        let result = bench(&argv(
            api.name(),
            &url,
            &["--requests", "2", "--max-tokens", "64"],
        ))
        .await;
        let records = measured(&result.report);
        assert_eq!(records.len(), 2, "{api}");
        for r in records {
            assert!(r.ok(), "{api}: {:?}", r.error);
            assert_eq!(
                r.metrics.chunk_tokens, 12,
                "{api}: every content chunk counted"
            );
            let ttft = r.metrics.ttft_ms.unwrap();
            let e2e = r.metrics.e2e_ms.unwrap();
            // The emulator sends the first token 20 ms after arrival, then one per 5 ms.
            assert!(ttft >= 19.0 && ttft < e2e, "{api}: ttft {ttft} e2e {e2e}");
            assert_eq!(r.metrics.itl_chunk_ms.len(), 11, "{api}");
            assert!(r.metrics.itl_chunk_ms.iter().all(|&g| g >= 0.0));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn levels_run_in_order_with_warmup_excluded() {
    let emu = healthy(3).await;
    let result = bench(&argv(
        "openai-chat",
        &emu.base_url(),
        &["--concurrency", "1,4", "--requests", "8", "--warmup", "2"],
    ))
    .await;
    let report = &result.report;
    assert_eq!(report.levels.len(), 2);
    assert_eq!(report.levels[0].level, LoadLevel::Concurrency(1));
    assert_eq!(report.levels[1].level, LoadLevel::Concurrency(4));
    for l in &report.levels {
        assert_eq!(l.summary.succeeded, 8);
        assert!(l.summary.aggregate_output_tps.unwrap() > 0.0);
    }
    assert_eq!(report.requests.iter().filter(|r| r.warmup).count(), 4);
    let ids: std::collections::HashSet<u64> = report.requests.iter().map(|r| r.id).collect();
    assert_eq!(ids.len(), 20, "ids unique across levels");
    // Three tokens per chunk: usage counts 12, chunks 4 events.
    let r = measured(report)[0];
    assert_eq!(r.token_source, TokenCountSource::Usage);
    assert_eq!(r.output_tokens, 12);
    assert_eq!(r.metrics.output_chunks, 4);
    // Four at once: the level took about a quarter of the sequential time.
    let d1 = report.levels[0].summary.end_ms - report.levels[0].summary.start_ms;
    let d4 = report.levels[1].summary.end_ms - report.levels[1].summary.start_ms;
    assert!(d4 < d1 * 0.6, "c=1 {d1} ms, c=4 {d4} ms");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_rate_sends_the_scheduled_requests() {
    let emu = healthy(1).await;
    let result = bench(&argv(
        "openai-chat",
        &emu.base_url(),
        &["--rate", "50", "--requests", "10"],
    ))
    .await;
    let report = &result.report;
    assert_eq!(report.levels[0].level, LoadLevel::Rate(50.0));
    assert_eq!(report.levels[0].summary.succeeded, 10);
    // Requests overlap: at 50/s arrivals (20 ms apart on average) with 75 ms streams.
    let mut spans: Vec<(f64, f64)> = measured(report)
        .iter()
        .map(|r| (r.start_ms, r.end_ms))
        .collect();
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(
        spans.windows(2).any(|w| w[1].0 < w[0].1),
        "no overlap: {spans:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_reach_disk_and_the_report_and_csv_match() {
    let emu = healthy(1).await;
    let dir = temp_dir("files");
    let json = dir.join("run.json");
    let csv = dir.join("run.csv");
    let result = bench(&argv(
        "openai-chat",
        &emu.base_url(),
        &[
            "--concurrency",
            "2",
            "--requests",
            "5",
            "--warmup",
            "1",
            "--json",
            json.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
        ],
    ))
    .await;
    let report = Report::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report.requests.len(), result.report.requests.len());
    assert_eq!(report.requests.len(), 6);
    assert_eq!(report.levels[0].summary.succeeded, 5);
    assert_eq!(report.requests.iter().filter(|r| r.warmup).count(), 1);
    let lines = std::fs::read_to_string(dir.join("run.json.requests.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), 6);
    for line in lines.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(v["metrics"]["ttft_ms"].as_f64().unwrap() > 0.0);
    }
    let csv_text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(csv_text.lines().count(), 7, "header + 6 rows");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn tpsmeter() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tpsmeter"));
    c.stdin(Stdio::null());
    c
}

/// Runs the binary off the async runtime (the emulator keeps serving on it).
async fn run_binary(mut cmd: Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_status_says_whether_slos_held() {
    let emu = healthy(1).await;
    let url = emu.base_url();
    let base = argv("openai-chat", &url, &["--requests", "2"]);
    let mut cmd = tpsmeter();
    cmd.arg("bench")
        .args(&base)
        .args(["--slo", "ttft=5s,tpot=1s"]);
    let out = run_binary(cmd).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("TTFT"), "table printed: {stdout}");
    // The emulator's first token takes 20 ms: a 1 ms TTFT objective cannot hold.
    let mut cmd = tpsmeter();
    cmd.arg("bench").args(&base).args(["--slo", "ttft=1ms"]);
    assert_eq!(run_binary(cmd).await.status.code(), Some(2));
    let mut cmd = tpsmeter();
    cmd.arg("bench").args(&base).args(["--slo", "ttft=500"]);
    assert_eq!(
        run_binary(cmd).await.status.code(),
        Some(1),
        "unit-less SLO is a usage error"
    );
    let mut cmd = tpsmeter();
    cmd.arg("bench").args(argv("nope", &url, &[]));
    assert_eq!(run_binary(cmd).await.status.code(), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_key_never_appears_in_any_output() {
    const KEY: &str = "sk-tpsmeter-test-7f3a9c1e5b";
    let dir = temp_dir("key");
    for (name, fault) in [
        ("ok", Fault::None),
        (
            "err",
            Fault::Status {
                code: 401,
                body: r#"{"error":"invalid key"}"#.into(),
            },
        ),
        ("cut", Fault::CutAfter { tokens: 2 }),
    ] {
        let emu = Emulator::start(EmulatorConfig {
            schedule: schedule(4),
            fault,
            ..EmulatorConfig::default()
        })
        .await
        .unwrap();
        for api in ["openai-chat", "anthropic", "gemini"] {
            let (stdout, stderr, _) = bench_with_key(
                Some(KEY),
                api,
                &emu.base_url(),
                &dir.join(format!("{name}-{api}")),
                2,
                1,
            )
            .await;
            assert!(stdout.contains("TTFT"), "{api} {name}: {stdout}{stderr}");
            assert!(!stdout.contains(KEY) && !stderr.contains(KEY));
        }
    }
    // A missing variable names the variable only.
    let mut cmd = tpsmeter();
    cmd.env_remove("TPSMETER_TEST_KEY_UNSET")
        .arg("bench")
        .args(argv(
            "openai-chat",
            "http://127.0.0.1:9",
            &["--api-key-env", "TPSMETER_TEST_KEY_UNSET"],
        ));
    let out = run_binary(cmd).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("TPSMETER_TEST_KEY_UNSET"));
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        assert!(!text.contains(KEY));
        assert!(!text.contains("7f3a9c1e5b"));
        files += 1;
    }
    assert_eq!(files, 3 * 3 * 3, "json, csv and jsonl of every run");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Regression (issue 24): a server that quoted the key back (a 401 body, a 429's
/// `Retry-After`, an in-stream error event; verbatim, masked to a prefix, URL-encoded) got it
/// printed on the terminal and written into `--json`, `--csv` and the records file, though
/// `--help` says the key is never printed or written. Every API's wire format, every echo.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_the_server_echoes_reaches_no_output() {
    const KEY: &str = "sk-echo-4f/9a+c1=e5b7d3Xq";
    const URL_KEY: &str = "sk-echo-4f%2F9a%2Bc1%3De5b7d3Xq";
    let dir = temp_dir("echo");
    let emu = Emulator::start(EmulatorConfig {
        schedule: schedule(4),
        ..EmulatorConfig::default()
    })
    .await
    .unwrap();
    let mut runs = 0;
    for (name, fault) in [
        ("status", "status:401"),
        ("header", "rate-limited:1"),
        ("event", "error-event:1"),
    ] {
        for api in Api::ALL {
            // A Vercel AI SDK route is named in full; the others take a base URL.
            let route = if api == Api::VercelUi {
                "/api/ui-chat"
            } else {
                ""
            };
            let url = format!("{}/echo-key/fault/{fault}{route}", emu.base_url());
            let (stdout, stderr, json) = bench_with_key(
                Some(KEY),
                api.name(),
                &url,
                &dir.join(format!("{name}-{api}")),
                1,
                0,
            )
            .await;
            let report: Report = serde_json::from_str(&json)
                .unwrap_or_else(|e| panic!("{api} {name}: {e}: {stderr}"));
            let message = &report.requests[0]
                .error
                .as_ref()
                .unwrap_or_else(|| panic!("{api} {name}: the request should fail"))
                .message;
            // The server's words are kept, with the key taken out: the test would pass on
            // a client that dropped every message, so check the echo reached the record.
            assert!(
                message.contains("Your key starts with REDACTED"),
                "{api} {name}: {message}"
            );
            for text in [stdout.as_str(), stderr.as_str()] {
                assert_no_key(KEY, URL_KEY, text, &format!("{api} {name} terminal"));
            }
            runs += 1;
        }
    }
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_no_key(KEY, URL_KEY, &text, &path.display().to_string());
        files += 1;
    }
    assert_eq!(runs, 3 * Api::ALL.len());
    assert_eq!(files, 3 * runs, "json, csv and jsonl of every run");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Regression (issue 35): credentials in the URL (`http://user:key@host`) go out as
/// `Authorization: Basic base64(user:key)`; a server that quoted that header back (a 401
/// body, a 429's `Retry-After`, an error event) got the base64 onto the terminal, into
/// `--json`, the CSV and the JSONL, since the redactor looked for the key only as written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basic_auth_the_server_echoes_reaches_no_output() {
    const USER: &str = "alice";
    const KEY: &str = "sk-basic-4f/9a+c1=e5b7d3Xq";
    const URL_KEY: &str = "sk-basic-4f%2F9a%2Bc1%3De5b7d3Xq";
    // What goes out: the URL's userinfo decoded, then base64.
    let basic = base64(format!("{USER}:{KEY}").as_bytes());
    // Not "basic": the key holds "-basic-4", and the folder name ends in the process id,
    // which the report's path prints (a run whose id began with 4 failed).
    let dir = temp_dir("echo-auth");
    let emu = Emulator::start(EmulatorConfig {
        schedule: schedule(4),
        ..EmulatorConfig::default()
    })
    .await
    .unwrap();
    let host = emu.base_url().replace("http://", "");
    let mut runs = 0;
    for (name, fault) in [
        ("status", "status:401"),
        ("header", "rate-limited:1"),
        ("event", "error-event:1"),
    ] {
        for api in Api::ALL {
            let route = if api == Api::VercelUi {
                "/api/ui-chat"
            } else {
                ""
            };
            let url = format!("http://{USER}:{URL_KEY}@{host}/echo-key/fault/{fault}{route}");
            let (stdout, stderr, json) = bench_with_key(
                None,
                api.name(),
                &url,
                &dir.join(format!("{name}-{api}")),
                1,
                0,
            )
            .await;
            let report: Report = serde_json::from_str(&json)
                .unwrap_or_else(|e| panic!("{api} {name}: {e}: {stderr}"));
            let message = &report.requests[0]
                .error
                .as_ref()
                .unwrap_or_else(|| panic!("{api} {name}: the request should fail"))
                .message;
            // The echo reached the record (a client that dropped every message would pass
            // the checks below), with the header's value taken out.
            assert!(
                message.contains("Invalid API key provided: REDACTED"),
                "{api} {name}: {message}"
            );
            for text in [stdout.as_str(), stderr.as_str()] {
                assert_no_key(KEY, URL_KEY, text, &format!("{api} {name} terminal"));
                assert_no_base64(&basic, text, &format!("{api} {name} terminal"));
            }
            runs += 1;
        }
    }
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_no_key(KEY, URL_KEY, &text, &path.display().to_string());
        assert_no_base64(&basic, &text, &path.display().to_string());
        files += 1;
    }
    assert_eq!(runs, 3 * Api::ALL.len());
    assert_eq!(files, 3 * runs, "json, csv and jsonl of every run");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Fails when `text` holds 8 or more characters of `encoded` (a base64 text).
fn assert_no_base64(encoded: &str, text: &str, what: &str) {
    for w in encoded.as_bytes().windows(8) {
        let w = std::str::from_utf8(w).unwrap();
        assert!(!text.contains(w), "{what} holds base64 {w:?}:\n{text}");
    }
}

/// Standard base64 with padding, as basic auth sends it (an independent encoder: the
/// redactor's own is what is under test).
fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for g in bytes.chunks(3) {
        let n = g.iter().fold(0u32, |n, &b| (n << 8) | u32::from(b)) << (8 * (3 - g.len()));
        for i in 0..=g.len() {
            out.push(char::from(A[((n >> (18 - 6 * i)) & 63) as usize]));
        }
        out.push_str(&"=".repeat(3 - g.len()));
    }
    out
}

/// Runs `tpsmeter bench` on `api` at `url` with `key` (if any) in the environment, writing
/// `<stem>.json` and `<stem>.csv`. Returns stdout, stderr and the JSON report's text.
async fn bench_with_key(
    key: Option<&str>,
    api: &str,
    url: &str,
    stem: &std::path::Path,
    requests: u32,
    warmup: u32,
) -> (String, String, String) {
    let json = stem.with_extension("json");
    let csv = stem.with_extension("csv");
    let (requests, warmup) = (requests.to_string(), warmup.to_string());
    let mut args = argv(
        api,
        url,
        &[
            "--requests",
            &requests,
            "--warmup",
            &warmup,
            "--json",
            json.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
        ],
    );
    let mut cmd = tpsmeter();
    if let Some(key) = key {
        cmd.env("TPSMETER_TEST_KEY", key);
        args.extend(["--api-key-env", "TPSMETER_TEST_KEY"]);
    }
    cmd.arg("bench").args(args);
    let out = run_binary(cmd).await;
    let report = std::fs::read_to_string(&json).unwrap_or_default();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        report,
    )
}

/// Fails when `text` holds 8 or more characters of the key, raw or URL-encoded.
fn assert_no_key(key: &str, url_key: &str, text: &str, what: &str) {
    for w in key
        .as_bytes()
        .windows(8)
        .chain(url_key.as_bytes().windows(8))
    {
        let w = std::str::from_utf8(w).unwrap();
        assert!(!text.contains(w), "{what} holds {w:?}:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_cancels_in_flight_requests_and_still_writes_the_report() {
    // Streams of 100 tokens at 5 ms: about 0.5 s per request.
    let emu = Emulator::start(EmulatorConfig {
        schedule: tpsmeter_emulator::Schedule {
            ttft: Duration::from_millis(5),
            itl: Duration::from_millis(5),
            output_tokens: 100,
        },
        ..EmulatorConfig::default()
    })
    .await
    .unwrap();
    let dir = temp_dir("sigint");
    let json = dir.join("r.json");
    let jsonl = dir.join("r.json.requests.jsonl");
    let mut cmd = tpsmeter();
    cmd.arg("bench").args(argv(
        "openai-chat",
        &emu.base_url(),
        &[
            "--max-tokens",
            "200",
            "--concurrency",
            "2",
            "--requests",
            "100",
            "--json",
            json.to_str().unwrap(),
        ],
    ));
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let child = cmd.spawn().unwrap();
    let pid = child.id().to_string();
    // Interrupt once some requests are on disk and others are streaming.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let n = std::fs::read_to_string(&jsonl)
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if n >= 2 && emu.stats().open_streams > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "no records written");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let status = tokio::task::spawn_blocking(move || {
        let mut child = child;
        Command::new("kill").args(["-INT", &pid]).status().unwrap();
        child.wait().unwrap()
    })
    .await
    .unwrap();
    assert_eq!(status.code(), Some(130));
    let report = Report::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let done = report.requests.len();
    assert!((2..100).contains(&done), "{done} records");
    let lines = std::fs::read_to_string(&jsonl).unwrap().lines().count();
    assert_eq!(lines, done, "every record in the JSONL too");
    let cancelled = report
        .requests
        .iter()
        .filter(|r| {
            r.error
                .as_ref()
                .is_some_and(|e| e.class == ErrorClass::Cancelled)
        })
        .count();
    assert!(cancelled >= 1, "the in-flight requests were cancelled");
    assert_eq!(
        report.requests.iter().filter(|r| r.ok()).count() + cancelled,
        done
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
