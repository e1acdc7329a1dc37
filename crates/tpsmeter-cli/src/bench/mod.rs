//! `tpsmeter bench`: a sweep of load levels against one streaming API.
//!
//! Order of a run: validate everything and open the output files (so a bad path fails
//! before any request is sent), build the one HTTP client, wait for `--start-at`, take the
//! one clock origin (with its wall-clock reading), then for each level: its warm-up
//! requests, its measured requests, its summary. Ctrl-C stops issuing, cancels what is in
//! flight (recorded as `cancelled`) and still writes the report.
//!
//! With `--find-max` the levels are not listed but chosen one after another by the core's
//! search (`tpsmeter_core::find_max`, asked by the driver after each level), and the report
//! ends with its verdict.
//!
//! With `--shard I/N` the run is this machine's share of each level (the core's
//! `LoadDriver::new_shard`); a level whose share is empty is said so on stderr and in the
//! report's warnings, and does not count as a level without a successful request.

pub mod args;
pub mod count;
pub mod dataset;
pub mod drive;
pub mod http;
mod options;
pub mod report_build;
pub mod setup;
pub mod start_at;
pub mod tokenizer;

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tpsmeter_core::load::{LoadLevel, StopCondition};
use tpsmeter_core::report::{IDLE_LEVEL_WARNING, Report, Warning};
use tpsmeter_core::{BenchOptions, LoadDriver, Shard};

pub use args::BenchArgs;
use drive::Recorder;
use setup::Setup;

use crate::bench::http::runner::Runner;
use crate::exit::Status;
use crate::output::files::OutputFiles;
use crate::output::jsonl::JsonlSink;

/// What a finished (or interrupted) run produced.
#[derive(Debug)]
pub struct BenchResult {
    pub report: Report,
    pub status: Status,
    pub interrupted: bool,
}

/// Runs `tpsmeter bench` on a fresh multi-threaded runtime, with Ctrl-C handling, and
/// prints the table to stdout.
pub fn run_blocking(args: BenchArgs) -> anyhow::Result<Status> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let cancel = CancellationToken::new();
        let watcher = tokio::spawn(watch_ctrl_c(cancel.clone()));
        let result = run_bench(&args, cancel).await;
        watcher.abort();
        let result = result?;
        print!("{}", crate::output::table::render(&result.report));
        Ok(result.status)
    })
}

/// First Ctrl-C: stop and write the report. Second: leave at once (records written so far
/// are already on disk).
async fn watch_ctrl_c(cancel: CancellationToken) {
    if tokio::signal::ctrl_c().await.is_err() {
        return;
    }
    eprintln!(
        "\ninterrupted: cancelling requests in flight and writing the report (Ctrl-C again to quit now)"
    );
    cancel.cancel();
    if tokio::signal::ctrl_c().await.is_ok() {
        std::process::exit(i32::from(Status::Interrupted.code()));
    }
}

/// Runs the whole sweep. Errors are set-up errors; request failures are records.
pub async fn run_bench(args: &BenchArgs, cancel: CancellationToken) -> anyhow::Result<BenchResult> {
    let setup = Setup::from_args(args)?;
    if let (Some(d), false) = (setup.plan.prompts().dataset(), args.quiet) {
        eprintln!("{}", dataset::describe(d));
    }
    if let Some(start) = args.start_at {
        start_at::check_not_late(start, args.allow_late_start)?;
    }
    let shard = args.shard.unwrap_or(Shard::WHOLE);
    let mut files = OutputFiles::open(args.json.as_deref(), args.csv.as_deref())?;
    let sink = match args.records_path() {
        Some(p) => Some(JsonlSink::create(&p)?),
        None => None,
    };
    let timeout = Duration::from_secs_f64(args.timeout);
    let client = crate::bench::http::client::build(timeout)?;
    let mut driver = LoadDriver::new_shard(
        &setup.options,
        shard,
        tpsmeter_core::request::Redactor::for_spec(&setup.spec),
    )?;
    let idle = idle_levels(&setup.options, shard);
    let mut warnings = Vec::new();
    for (_, message) in &idle {
        if !args.quiet {
            eprintln!("note: {message}");
        }
        warnings.push(Warning {
            code: IDLE_LEVEL_WARNING.into(),
            message: message.clone(),
        });
    }
    if let Some(start) = args.start_at {
        let wait_s = (start.unix_ms - start_at::now_unix_ms()) / 1000.0;
        if !args.quiet && wait_s > 0.0 {
            eprintln!("waiting {wait_s:.1} s for --start-at");
        }
        start_at::wait_until(start, &cancel).await;
    }
    // The clock origin and its wall-clock reading, taken together: the report places every
    // timestamp on the wall clock by them (what `tpsmeter merge` needs).
    let origin = Instant::now();
    let origin_unix_ms = start_at::now_unix_ms();
    let runner = Runner::new(
        client,
        args.api,
        setup.request(),
        origin,
        timeout,
        Duration::from_secs_f64(args.idle_timeout),
    )?;
    let mut recorder = Recorder {
        sink,
        sink_error: None,
        quiet: args.quiet,
        warnings,
        count_failures: Default::default(),
    };
    drive::run(
        &runner,
        &setup.plan,
        setup.tokenizer.clone(),
        &setup.options,
        shard,
        &mut driver,
        &cancel,
        &mut recorder,
    )
    .await?;
    let interrupted = cancel.is_cancelled();
    let http_versions = driver.http_versions().to_vec();
    let search = driver.find_max().cloned();
    let driver_warnings = driver.warnings();
    let (levels, records) = driver.into_parts();
    let mut warnings = std::mem::take(&mut recorder.warnings);
    warnings.extend(recorder.count_failures.warning());
    for w in setup.plan.warnings().into_iter().chain(driver_warnings) {
        if !args.quiet {
            eprintln!("warning: {}", w.message);
        }
        warnings.push(w);
    }
    if interrupted {
        warnings.push(Warning {
            code: "interrupted".into(),
            message: "the run was interrupted; requests in flight were cancelled".into(),
        });
    }
    let mut report = report_build::build(
        args,
        &setup,
        levels,
        records,
        &http_versions,
        interrupted,
        warnings,
    )?;
    if let Some(search) = &search {
        search.annotate(&mut report);
    }
    report.clock_origin_unix_ms = Some(origin_unix_ms);
    report
        .environment
        .notes
        .insert("stamp".into(), runner.stamp_source().into());
    files.write(&report)?;
    if let Some(sink) = &recorder.sink {
        if !args.quiet {
            eprintln!(
                "{} request records in {}",
                sink.lines(),
                sink.path().display()
            );
        }
    }
    let idle: Vec<usize> = idle.into_iter().map(|(j, _)| j).collect();
    let status = status_of(&report, setup.slo.is_some(), interrupted, &idle);
    Ok(BenchResult {
        report,
        status,
        interrupted,
    })
}

/// The levels (by position) where `shard`'s share is empty, each with a line saying so.
fn idle_levels(options: &BenchOptions, shard: Shard) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (j, whole) in options.levels().into_iter().enumerate() {
        let stop = options.stop_condition(whole);
        let share = shard.level(whole, stop, options.warmup);
        if !share.runs_nothing() {
            continue;
        }
        let what = match (whole, stop) {
            (LoadLevel::Concurrency(c), _) if share.load == LoadLevel::Concurrency(0) => {
                format!("{c} streams")
            }
            (_, StopCondition::Requests(n)) => format!("{n} requests"),
            _ => whole.to_string(),
        };
        out.push((
            j,
            format!(
                "shard {shard} has no share of {whole} ({what} over {} shards): it sends \
                 nothing at that level",
                shard.count()
            ),
        ));
    }
    out
}

/// The exit status a finished run (or a merge) earns (see `exit::Status`). Levels in
/// `idle` (positions where a shard had no share) are not judged.
pub fn status_of(report: &Report, slo_given: bool, interrupted: bool, idle: &[usize]) -> Status {
    if interrupted {
        return Status::Interrupted;
    }
    if let Some(v) = &report.find_max {
        // The search runs loads past the SLO on purpose: its verdict is the status.
        return match v.max_load {
            Some(_) => Status::Ok,
            None if report.levels.iter().all(|l| l.summary.succeeded == 0) => Status::AllFailed,
            None => Status::SloFailed,
        };
    }
    let judged = || {
        report
            .levels
            .iter()
            .enumerate()
            .filter(|(j, _)| !idle.contains(j))
            .map(|(_, l)| l)
    };
    let slo_failed = slo_given
        && judged().any(|l| {
            l.summary
                .goodput
                .is_none_or(|g| g.met < l.summary.completed || l.summary.completed == 0)
        });
    if slo_failed {
        return Status::SloFailed;
    }
    if judged().any(|l| l.summary.succeeded == 0) {
        return Status::AllFailed;
    }
    Status::Ok
}
