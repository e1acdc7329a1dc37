//! Drives the core's [`LoadDriver`] on tokio: starts the requests it asks for as tasks,
//! sleeps until the times it names, hands every finished request back, and records each
//! one (JSON lines, progress bar) on this task as it completes.
//!
//! The load policy itself (closed and open loop, warm-up, stop conditions, back-off after
//! 429) lives in the driver, shared with the browser; this file only does the waiting.
//! Request tasks do nothing but send, read and stamp; disk writes and drawing happen here,
//! off the path between a read and its stamp. With `--tokenizer`, an answer that came
//! without usage is counted off this task too (see `count`): its request completes at once
//! (its slot starts the next request, its conversation goes on), and its record is final,
//! and written, when the count is in.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tpsmeter_core::answer::{CountFailures, answer_to_count};
use tpsmeter_core::drive::{Action, LoadDriver, RecordExtras, Ticket};
use tpsmeter_core::report::{RequestRecord, Warning};
use tpsmeter_core::request::RequestPlan;
use tpsmeter_core::{BenchOptions, Outcome, Shard, Timeline};

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
    /// Answers the tokenizer could not count.
    pub count_failures: CountFailures,
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

/// A count of an answer that came without usage, done off this task: its ticket, its
/// outcome's timeline (the record is re-derived from it) and the count.
type Counted = (Ticket, Timeline, anyhow::Result<u64>);

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
    let mut inflight: JoinSet<(Ticket, (Outcome, RecordExtras))> = JoinSet::new();
    let mut counting: JoinSet<Counted> = JoinSet::new();
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
                inflight.spawn(async move {
                    let done = runner.run_timed(&cancel, body, planned.keep_answer).await;
                    (ticket, done)
                });
                continue;
            }
            Action::Sleep { until_ms } => {
                Some(origin + Duration::from_secs_f64(until_ms.max(0.0) / 1000.0))
            }
            Action::Wait => None,
            Action::Done => break,
        };
        if wake.is_none() && inflight.is_empty() && counting.is_empty() {
            anyhow::bail!("load driver waits with no request in flight");
        }
        let joined = tokio::select! {
            biased;
            () = cancel.cancelled(), if !driver.is_cancelled() => continue,
            j = inflight.join_next(), if !inflight.is_empty() => j,
            c = counting.join_next(), if !counting.is_empty() => {
                let (ticket, timeline, count) = match c {
                    Some(Ok(counted)) => counted,
                    Some(Err(e)) => anyhow::bail!("counting an answer failed: {e}"),
                    None => continue,
                };
                // The record is final now: its count is in. A count that failed (a
                // tokenizer over its time budget) leaves the stream's own estimate, and the
                // report says so; the run goes on.
                let count = count.map_err(|e| count_failed(&e, recorder)).ok();
                if let Some(record) = driver.counted(&ticket, &timeline, count) {
                    write_line(record, recorder);
                }
                continue;
            }
            () = sleep_until(wake) => continue,
        };
        let (ticket, (mut outcome, extras)) = match joined {
            Some(Ok(done)) => done,
            Some(Err(e)) => anyhow::bail!("a request task failed: {e}"),
            None => continue,
        };
        let turn = plan.finish(ticket.id, &outcome);
        // An answer without usage is counted off this task: the driver frees the slot now,
        // and the record is final (and written) once the count is in.
        let count_pending = match (&counter, answer_to_count(&outcome).is_some()) {
            (Some(counter), true) => {
                let answer = outcome.answer.take();
                let timeline = outcome.timeline.clone();
                let counter = counter.clone();
                counting.spawn(async move {
                    let count = match answer {
                        Some(answer) => counter.count(answer).await,
                        None => Err(anyhow::anyhow!("no answer to count")),
                    };
                    (ticket, timeline, count)
                });
                true
            }
            _ => false,
        };
        let extras = RecordExtras {
            turn,
            count_pending,
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
        if !count_pending {
            write_line(record, recorder);
        }
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
            tpsmeter_core::load::StopCondition::Requests(u64::from(share.warmup)),
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

/// Notes an answer the tokenizer could not count (the first on stderr); the report's
/// `count_failed` warning is made of these at the end.
fn count_failed(e: &anyhow::Error, recorder: &mut Recorder) {
    if recorder.count_failures.note(&format!("{e:#}")) {
        eprintln!(
            "warning: an answer could not be counted ({e:#}); its output tokens are the \
             stream's own estimate"
        );
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
