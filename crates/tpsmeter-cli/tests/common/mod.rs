//! Helpers shared by the integration tests: start the emulator, run `tpsmeter bench`
//! in-process through the real argument parser.
#![allow(dead_code, clippy::unwrap_used)]

use std::time::Duration;

use clap::Parser;
use tokio_util::sync::CancellationToken;
use tpsmeter_cli::bench::{BenchResult, run_bench};
use tpsmeter_core::report::{ErrorClass, Report, RequestRecord};
use tpsmeter_emulator::{Emulator, EmulatorConfig, Fault, Schedule};

/// A short, fast schedule: faults strike within a few tokens.
pub fn schedule(output_tokens: u32) -> Schedule {
    Schedule {
        ttft: Duration::from_millis(20),
        itl: Duration::from_millis(5),
        output_tokens,
    }
}

pub async fn emulator(fault: Fault) -> Emulator {
    Emulator::start(EmulatorConfig {
        schedule: schedule(8),
        fault,
        ..EmulatorConfig::default()
    })
    .await
    .unwrap()
}

/// `tpsmeter bench`'s arguments on their own (the binary tests cover the top level).
#[derive(Debug, Parser)]
struct BenchOnly {
    #[command(flatten)]
    args: tpsmeter_cli::bench::BenchArgs,
}

/// Parses `tpsmeter bench <argv>` with the bench's real argument parser.
pub fn parse(argv: &[&str]) -> tpsmeter_cli::bench::BenchArgs {
    let mut full = vec!["tpsmeter-bench", "--quiet"];
    full.extend_from_slice(argv);
    BenchOnly::try_parse_from(full).unwrap().args
}

/// Runs a bench to its end.
pub async fn bench(argv: &[&str]) -> BenchResult {
    run_bench(&parse(argv), CancellationToken::new())
        .await
        .unwrap()
}

/// `tpsmeter bench` arguments for `api` at `url` with model `m`, then `rest`.
pub fn argv<'a>(api: &'a str, url: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["--api", api, "--url", url, "--model", "m"];
    v.extend_from_slice(rest);
    v
}

/// Measured (non-warm-up) records.
pub fn measured(report: &Report) -> Vec<&RequestRecord> {
    report.requests.iter().filter(|r| !r.warmup).collect()
}

/// Runs `requests` requests at concurrency 2 against `url` and asserts every one failed
/// with `class` while the run carried on to the end. Returns the records.
pub async fn expect_class(
    url: &str,
    extra: &[&str],
    requests: u64,
    class: ErrorClass,
) -> Vec<RequestRecord> {
    let n = requests.to_string();
    let mut args = argv(
        "openai-chat",
        url,
        &["--concurrency", "2", "--requests", &n, "--max-tokens", "8"],
    );
    args.extend_from_slice(extra);
    let result = bench(&args).await;
    let records: Vec<RequestRecord> = measured(&result.report).into_iter().cloned().collect();
    assert_eq!(records.len() as u64, requests, "every request is recorded");
    for r in &records {
        let e = r
            .error
            .as_ref()
            .unwrap_or_else(|| panic!("request {} succeeded", r.id));
        assert_eq!(e.class, class, "record {r:?}");
        assert!(r.end_ms >= r.start_ms);
    }
    assert_eq!(result.report.levels.len(), 1);
    assert_eq!(result.report.levels[0].summary.failed, requests);
    records
}
