//! `tpsmeter bench`: a sweep of load levels against one streaming API.
//!
//! Order of a run: validate everything and open the output files (so a bad path fails
//! before any request is sent), build the one HTTP client and the one clock origin, then for
//! each level: its warm-up requests, its measured requests, its summary. Ctrl-C stops
//! issuing, cancels what is in flight (recorded as `cancelled`) and still writes the report.

pub mod args;
pub mod drive;
pub mod report_build;
pub mod setup;

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tpsmeter_core::LoadDriver;
use tpsmeter_core::report::{Report, Warning};

pub use args::BenchArgs;
use drive::Recorder;
use setup::Setup;

use crate::exit::Status;
use crate::output::files::OutputFiles;
use crate::output::jsonl::JsonlSink;
use crate::runner::Runner;

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
    let mut files = OutputFiles::open(args.json.as_deref(), args.csv.as_deref())?;
    let sink = match args.records_path() {
        Some(p) => Some(JsonlSink::create(&p)?),
        None => None,
    };
    let timeout = Duration::from_secs_f64(args.timeout);
    let client = crate::client::build(timeout)?;
    let origin = Instant::now();
    let runner = Runner::new(
        client,
        args.api,
        &setup.request,
        origin,
        timeout,
        Duration::from_secs_f64(args.idle_timeout),
    )?;
    let mut recorder = Recorder {
        sink,
        sink_error: None,
        quiet: args.quiet,
        warnings: Vec::new(),
    };
    let mut driver = LoadDriver::new(&setup.options)?;
    drive::run(&runner, &setup.options, &mut driver, &cancel, &mut recorder).await?;
    let interrupted = cancel.is_cancelled();
    let http_versions = driver.http_versions().to_vec();
    let (levels, records) = driver.into_parts();
    let mut warnings = std::mem::take(&mut recorder.warnings);
    if interrupted {
        warnings.push(Warning {
            code: "interrupted".into(),
            message: "the run was interrupted; requests in flight were cancelled".into(),
        });
    }
    let report = report_build::build(
        args,
        &setup,
        levels,
        records,
        &http_versions,
        interrupted,
        warnings,
    )?;
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
    let status = status_of(&report, setup.slo.is_some(), interrupted);
    Ok(BenchResult {
        report,
        status,
        interrupted,
    })
}

/// The exit status a finished run earns (see `exit::Status`).
fn status_of(report: &Report, slo_given: bool, interrupted: bool) -> Status {
    if interrupted {
        return Status::Interrupted;
    }
    let slo_failed = slo_given
        && report.levels.iter().any(|l| {
            l.summary
                .goodput
                .is_none_or(|g| g.met < l.summary.completed || l.summary.completed == 0)
        });
    if slo_failed {
        return Status::SloFailed;
    }
    if report.levels.iter().any(|l| l.summary.succeeded == 0) {
        return Status::AllFailed;
    }
    Status::Ok
}
