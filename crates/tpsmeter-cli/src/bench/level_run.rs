//! Runs one level (or its warm-up) and collects its records as they complete.
//!
//! The level's workers send every finished request over a channel; the collector, running
//! beside them on the caller's task, turns each into a [`RequestRecord`], appends it to the
//! JSON-lines file at once, and advances the progress bar. Keeping disk writes and drawing
//! off the worker tasks keeps them off the path between a read and its stamp.

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tpsmeter_core::plan::{ArrivalLimit, LoadLevel, StopCondition, poisson_arrivals};
use tpsmeter_core::report::RequestRecord;

use crate::load::{Completed, LevelSpec, LevelTiming, closed, open};
use crate::output::jsonl::JsonlSink;
use crate::progress::LevelProgress;
use crate::runner::Runner;

/// What a level run produced.
#[derive(Debug)]
pub struct LevelRun {
    pub timing: LevelTiming,
    pub records: Vec<RequestRecord>,
    /// HTTP versions seen in responses ("HTTP/1.1", "HTTP/2.0").
    pub http_versions: Vec<String>,
}

/// Shared state of the collector across levels.
#[derive(Debug)]
pub struct Recorder {
    /// The next record id (unique across the run).
    pub next_id: u64,
    pub sink: Option<JsonlSink>,
    /// The first write failure of the sink; later records are still kept in memory.
    pub sink_error: Option<String>,
    pub quiet: bool,
}

/// Runs `spec` to its end (or cancellation), collecting every finished request.
pub async fn run_level(
    runner: &Arc<Runner>,
    spec: &LevelSpec,
    seed: u64,
    cancel: &CancellationToken,
    recorder: &mut Recorder,
) -> anyhow::Result<LevelRun> {
    let (tx, rx) = mpsc::unbounded_channel::<Completed>();
    let label = if spec.warmup {
        format!("{} warm-up", spec.load)
    } else {
        spec.load.to_string()
    };
    let progress = LevelProgress::start(&label, spec.stop, recorder.quiet);
    let schedule = match (spec.load, spec.warmup) {
        (LoadLevel::Rate(r), false) => {
            let limit = match spec.stop {
                StopCondition::Requests(n) => ArrivalLimit::Count(usize::try_from(n)?),
                StopCondition::DurationS(s) => ArrivalLimit::HorizonMs(s * 1000.0),
            };
            Some(poisson_arrivals(r, limit, seed)?)
        }
        _ => None,
    };
    let drive = async {
        match &schedule {
            Some(arrivals) => open::run(Arc::clone(runner), spec, arrivals, cancel, tx).await,
            None => closed::run(Arc::clone(runner), spec, cancel, tx).await,
        }
    };
    let (timing, (records, http_versions)) =
        tokio::join!(drive, collect(rx, spec, progress, recorder));
    Ok(LevelRun {
        timing,
        records,
        http_versions,
    })
}

async fn collect(
    mut rx: mpsc::UnboundedReceiver<Completed>,
    spec: &LevelSpec,
    mut progress: LevelProgress,
    recorder: &mut Recorder,
) -> (Vec<RequestRecord>, Vec<String>) {
    let mut records = Vec::new();
    let mut versions: Vec<String> = Vec::new();
    while let Some(done) = rx.recv().await {
        let outcome = done.outcome;
        let error = outcome.failure.as_ref().map(|f| f.to_record());
        let record = RequestRecord::from_timeline(
            recorder.next_id,
            spec.load,
            done.warmup,
            &outcome.timeline,
            outcome.http_status,
            error,
            true,
        );
        recorder.next_id += 1;
        if let Some(v) = outcome.http_version {
            if !versions.contains(&v) {
                versions.push(v);
            }
        }
        if let Some(sink) = &mut recorder.sink {
            if let Err(e) = sink.append(&JsonLine {
                record: &record,
                scheduled_ms: done.scheduled_ms,
            }) {
                if recorder.sink_error.is_none() {
                    eprintln!("warning: {e:#}; records are kept in memory for the report");
                    recorder.sink_error = Some(format!("{e:#}"));
                }
            }
        }
        progress.record(record.ok());
        records.push(record);
    }
    progress.finish();
    (records, versions)
}

/// One JSONL line: the report's record plus the open loop's scheduled start.
#[derive(serde::Serialize)]
struct JsonLine<'a> {
    #[serde(flatten)]
    record: &'a RequestRecord,
    #[serde(skip_serializing_if = "Option::is_none")]
    scheduled_ms: Option<f64>,
}
