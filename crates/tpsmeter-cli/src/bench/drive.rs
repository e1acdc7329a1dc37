//! Drives the core's [`LoadDriver`] on tokio: starts the requests it asks for as tasks,
//! sleeps until the times it names, hands every finished request back, and records each
//! one (JSON lines, progress bar) on this task as it completes.
//!
//! The load policy itself (closed and open loop, warm-up, stop conditions, back-off after
//! 429) lives in the driver, shared with the browser; this file only does the waiting.
//! Request tasks do nothing but send, read and stamp, then (with `--tokenizer`, for an
//! answer without usage) count the answer off this task (see `count`); disk writes and
//! drawing happen here, off the path between a read and its stamp.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tpsmeter_core::drive::{Action, LoadDriver, RecordExtras, Ticket};
use tpsmeter_core::report::{RequestRecord, Warning};
use tpsmeter_core::request::RequestPlan;
use tpsmeter_core::{BenchOptions, Outcome, Shard};

use crate::bench::count::AnswerCounter;
use crate::bench::http::runner::Runner;
use crate::bench::tokenizer::CliTokenizer;
use crate::output::jsonl::JsonlSink;
use crate::progress::LevelProgress;

/// Shared state of the collector across levels.
#[derive(Debug)]
pub struct Recorder {
    pub sink: Option<JsonlSink>,
    /// The first write failure of the sink; later records are still kept in memory.
    pub sink_error: Option<String>,
    pub quiet: bool,
    /// Conditions found while running (a warm-up that failed entirely).
    pub warnings: Vec<Warning>,
}

/// The phase whose progress bar is showing.
#[derive(Debug)]
struct Shown {
    level_index: usize,
    warmup: bool,
    bar: LevelProgress,
    ok: u64,
    first_error: Option<String>,
    total: u64,
}

/// What a request task hands back: its outcome, and what it knew beside it (the answer's
/// count included).
struct Finished {
    outcome: Outcome,
    extras: RecordExtras,
}

/// Runs the whole sweep (this shard's part of it) to its end or cancellation. `tokenizer`
/// counts the answers that come without usage.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    runner: &Arc<Runner>,
    plan: &RequestPlan,
    tokenizer: Option<Arc<CliTokenizer>>,
    options: &BenchOptions,
    shard: Shard,
    driver: &mut LoadDriver,
    cancel: &CancellationToken,
    recorder: &mut Recorder,
) -> anyhow::Result<()> {
    let counter = tokenizer.map(AnswerCounter::new);
    let mut inflight: JoinSet<(Ticket, anyhow::Result<Finished>)> = JoinSet::new();
    let mut shown: Option<Shown> = None;
    let origin = tokio::time::Instant::from_std(runner.origin());
    loop {
        if cancel.is_cancelled() && !driver.is_cancelled() {
            driver.cancel();
        }
        let action = driver.next(runner.now_ms())?;
        let wake = match action {
            Action::Start(ticket) => {
                if shown.as_ref().is_none_or(|s| {
                    (s.level_index, s.warmup) != (ticket.level_index, ticket.warmup)
                }) {
                    if let Some(old) = shown.take() {
                        finish(old, recorder);
                    }
                    shown = Some(show(&ticket, options, shard, recorder.quiet));
                }
                // Built before the task starts: the body is part of what the request is, not
                // of its time (a few µs of JSON).
                let planned = plan.request_for(&ticket)?;
                let body = planned.body.map(bytes::Bytes::from);
                let runner = Arc::clone(runner);
                let cancel = cancel.clone();
                let counter = counter.clone();
                inflight.spawn(async move {
                    let (outcome, extras) =
                        runner.run_timed(&cancel, body, planned.keep_answer).await;
                    let finished = match counter {
                        Some(c) => c.count(outcome).await,
                        None => Ok((outcome, None)),
                    };
                    let finished = finished.map(|(outcome, counted)| Finished {
                        outcome,
                        extras: RecordExtras {
                            output_tokens_counted: counted,
                            ..extras
                        },
                    });
                    (ticket, finished)
                });
                continue;
            }
            Action::Sleep { until_ms } => {
                Some(origin + Duration::from_secs_f64(until_ms.max(0.0) / 1000.0))
            }
            Action::Wait => None,
            Action::Done => break,
        };
        let joined = tokio::select! {
            biased;
            () = cancel.cancelled(), if !driver.is_cancelled() => continue,
            j = inflight.join_next(), if !inflight.is_empty() => j,
            () = sleep_until(wake) => continue,
        };
        let (ticket, finished) = match joined {
            Some(Ok(done)) => done,
            Some(Err(e)) => anyhow::bail!("a request task failed: {e}"),
            // Nothing in flight and nothing to sleep for: the driver would wait forever.
            None => anyhow::bail!("load driver waits with no request in flight"),
        };
        let Finished { outcome, extras } = finished?;
        let extras = RecordExtras {
            turn: plan.finish(ticket.id, &outcome),
            ..extras
        };
        let record = driver.complete(&ticket, outcome, extras, runner.now_ms());
        if let Some(s) = shown.as_mut() {
            s.total += 1;
            if record.ok() {
                s.ok += 1;
            } else if s.first_error.is_none() {
                s.first_error = record
                    .error
                    .as_ref()
                    .map(|e| format!("{}: {}", e.class, e.message));
            }
            s.bar.record(record.ok());
        }
        write_line(record, recorder);
    }
    if let Some(old) = shown.take() {
        finish(old, recorder);
    }
    Ok(())
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn show(ticket: &Ticket, options: &BenchOptions, shard: Shard, quiet: bool) -> Shown {
    // The bar counts this shard's share; the ticket's level already is the share.
    let whole = options
        .levels()
        .get(ticket.level_index)
        .copied()
        .unwrap_or(ticket.level);
    let share = shard.level(whole, options.stop_condition(whole), options.warmup);
    let (label, stop) = if ticket.warmup {
        (
            format!("{} warm-up", ticket.level),
            tpsmeter_core::plan::StopCondition::Requests(u64::from(share.warmup)),
        )
    } else {
        (ticket.level.to_string(), share.stop)
    };
    Shown {
        level_index: ticket.level_index,
        warmup: ticket.warmup,
        bar: LevelProgress::start(&label, stop, quiet),
        ok: 0,
        first_error: None,
        total: 0,
    }
}

/// Ends a phase's bar. A warm-up that failed entirely usually means the whole run will
/// (wrong URL, model or key): say so early instead of after every level.
fn finish(shown: Shown, recorder: &mut Recorder) {
    shown.bar.finish();
    if shown.warmup && shown.total > 0 && shown.ok == 0 {
        if let Some(e) = shown.first_error {
            eprintln!("warning: every warm-up request failed ({e})");
            recorder.warnings.push(Warning {
                code: "warmup_failed".into(),
                message: format!("every warm-up request failed ({e})"),
            });
        }
    }
}

/// Appends the record to the JSON-lines file at once.
fn write_line(record: &RequestRecord, recorder: &mut Recorder) {
    if let Some(sink) = &mut recorder.sink {
        if let Err(e) = sink.append(record) {
            if recorder.sink_error.is_none() {
                eprintln!("warning: {e:#}; records are kept in memory for the report");
                recorder.sink_error = Some(format!("{e:#}"));
            }
        }
    }
}
