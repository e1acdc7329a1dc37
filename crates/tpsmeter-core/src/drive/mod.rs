//! [`LoadDriver`]: the load runner of a benchmark as a state machine, with no clock and no
//! I/O, driven by the CLI (tokio) and the browser (`fetch`, timers) alike.
//!
//! The caller loops: `next(now)` says what to do — start a request ([`Ticket`]), sleep until
//! a time (open-loop arrivals, a back-off after HTTP 429), wait for a request to finish, or
//! stop — and `complete(ticket, outcome, now)` hands a finished request back. The driver
//! runs the levels in order, each preceded by its warm-up phase, applies the stop
//! condition, turns every outcome into a [`RequestRecord`] and every measured phase into a
//! [`LevelReport`], so both callers produce the same report from the same rules:
//!
//! - **closed loop** (`LoadLevel::Concurrency(c)`): `c` slots; a slot starts its next
//!   request as soon as its last one finished, until `requests` have been started or the
//!   duration is over. After an HTTP 429 with `Retry-After` that slot pauses that long (at
//!   most [`MAX_BACKOFF_MS`]), as a polite client would; the others go on.
//! - **open loop** (`LoadLevel::Rate(r)`): requests start on a seeded Poisson schedule
//!   whatever the server's state, at most `max_concurrency` at once; an arrival that finds
//!   no free slot waits, and its scheduled time is kept in the record (`scheduled_ms`), so
//!   the client-side queueing is visible instead of hiding in the server's latency.
//! - **warm-up**: `warmup` requests before each level, closed loop at
//!   `min(level concurrency (or max_concurrency), warmup)`, recorded with `warmup: true`
//!   and left out of every summary.
//! - **the measured phase** runs from its first `next` call to its last completion; a
//!   duration phase ends at the duration (requests still in flight finish but count only if
//!   they ended inside it; see `phase`).
//! - **counts**: a caller that counts an answer's tokens off its loop (the CLI, when a
//!   server sends no usage) completes the request at once with `count_pending` and hands
//!   the count in later ([`LoadDriver::counted`]): the slot is free meanwhile, and the
//!   phase's summary waits for every count.
//! - **cancel**: nothing more starts; the caller ends what is in flight (recorded as
//!   `cancelled`); a measured phase cut short still gets its summary.
//! - **ramp-up** (`ramp_up_s`, closed loop only): each phase (warm-up and measured) opens
//!   its streams spread evenly over the ramp, stream `g` of the level's `c` at `g · R / c`
//!   after the phase start, instead of all at once (see `ramp`); an open stream then runs
//!   as above. The ramp lies inside the measured phase: a duration level counts it, and its
//!   throughput includes the time before every stream was open.
//! - **shards** ([`LoadDriver::new_shard`]): each level, its request count, the warm-up
//!   and the open-loop cap are this machine's share (see `shard`), with its own arrival
//!   seed. A level whose share is empty sends nothing; when timed, it still lasts its
//!   duration, so the shard enters the next level together with the others.
//! - **find-max** (`options.find_max`, see [`crate::find_max`]): the run starts with the one
//!   level given, and each time a level's summary is final the search says which level
//!   comes next, or that the run is over; [`LoadDriver::annotate`] writes its verdict into
//!   the report. A search cannot run sharded: each level depends on the whole run's results.

use std::collections::HashMap;

use crate::cap::cap_chars;
use crate::error::Result;
use crate::exchange::Outcome;
use crate::find_max::FindMax;
use crate::load::{LoadLevel, StopCondition};
use crate::ramp::Ramp;
use crate::redact::Redactor;
use crate::report::{ErrorRecord, LevelReport, Report, RequestRecord, Warning};
use crate::shard::{LevelShare, Shard};
use crate::slo::Slo;
use crate::spec::BenchOptions;
use crate::timeline::Timeline;

mod extras;
mod phases;
mod progress;

pub use crate::spec::{Action, RecordExtras, Ticket};
pub use progress::Progress;

use extras::set_timing_parts;
use phases::Phase;

/// Longest pause a closed-loop slot takes after a 429, whatever `Retry-After` asks for: a
/// benchmark should not sit idle for an hour.
pub const MAX_BACKOFF_MS: f64 = 60_000.0;

/// The load runner of one benchmark (see the module docs).
#[derive(Debug)]
pub struct LoadDriver {
    levels: Vec<LevelShare>,
    /// Per level, the ramp its closed-loop phases open their slots on.
    ramps: Vec<Option<Ramp>>,
    max_concurrency: u32,
    seed: u64,
    slo: Option<Slo>,
    /// Next level to open a phase for, and whether its warm-up has run.
    next_level: usize,
    warmup_done: bool,
    phase: Option<Phase>,
    next_id: u64,
    cancelled: bool,
    records: Vec<RequestRecord>,
    level_reports: Vec<LevelReport>,
    http_versions: Vec<String>,
    /// The run's credentials, taken out of every record.
    redactor: Redactor,
    /// Records whose token count the caller has yet to hand in, by ticket id: their index
    /// in `records`.
    pending_counts: HashMap<u64, usize>,
    /// `--find-max`: the search choosing each next level, and the options each level's
    /// stop condition and warm-up come from.
    find_max: Option<(FindMax, Box<BenchOptions>)>,
    /// `max_duration_s` in ms: the time cap of each request-count level.
    max_duration_ms: Option<f64>,
    /// Levels the cap ended early: their load, requests started and stop condition.
    capped_levels: Vec<(LoadLevel, u64, StopCondition)>,
}

impl LoadDriver {
    /// A driver for validated `options` (see [`BenchOptions::validate`]). `redactor` holds
    /// the run's credentials ([`Redactor::for_spec`]): every record is scrubbed of them.
    pub fn new(options: &BenchOptions, redactor: Redactor) -> Result<LoadDriver> {
        LoadDriver::new_shard(options, Shard::WHOLE, redactor)
    }

    /// A driver for `shard`'s part of the run `options` describe: records and level
    /// reports carry this machine's share of each level (its position in the run is the
    /// record's `level_index`).
    pub fn new_shard(
        options: &BenchOptions,
        shard: Shard,
        redactor: Redactor,
    ) -> Result<LoadDriver> {
        options.validate()?;
        let ramps = options
            .levels()
            .into_iter()
            .map(|l| match l {
                LoadLevel::Concurrency(c) => Ramp::new(options.ramp_up_ms(), c, shard),
                LoadLevel::Rate(_) => None,
            })
            .collect();
        let find_max = match options.find_max_config()? {
            Some(_) if shard != Shard::WHOLE => {
                return Err(crate::error::CoreError::InvalidSpec {
                    what: "find-max",
                    input: format!("shard {shard}"),
                    reason: "cannot run sharded: each level is chosen from the whole run's \
                             results"
                        .into(),
                });
            }
            Some(cfg) => Some((FindMax::new(cfg), Box::new(options.clone()))),
            None => None,
        };
        Ok(LoadDriver {
            find_max,
            redactor,
            ramps,
            levels: options
                .levels()
                .into_iter()
                .map(|l| shard.level(l, options.stop_condition(l), options.warmup))
                .collect(),
            // A cap of 0 would hold every arrival forever; a shard with a rate share always
            // gets at least one request in flight.
            max_concurrency: shard.share_u32(options.max_concurrency).max(1),
            seed: shard.seed(options.arrival_seed()),
            slo: options.slo()?,
            next_level: 0,
            warmup_done: false,
            phase: None,
            next_id: 0,
            cancelled: false,
            records: Vec::new(),
            level_reports: Vec::new(),
            http_versions: Vec::new(),
            pending_counts: HashMap::new(),
            max_duration_ms: options.max_duration_s.map(|s| s * 1000.0),
            capped_levels: Vec::new(),
        })
    }

    /// What to do at `now_ms`. Call again after every `Start` and every completion.
    pub fn next(&mut self, now_ms: f64) -> Result<Action> {
        loop {
            if self.phase.is_none() && !self.open_phase()? {
                return Ok(Action::Done);
            }
            let Some(phase) = self.phase.as_mut() else {
                return Ok(Action::Done);
            };
            let start_ms = *phase.start_ms.get_or_insert(now_ms);
            if let Some(action) = Self::step(phase, start_ms, now_ms, self.cancelled) {
                if let Action::Start(mut ticket) = action {
                    ticket.id = self.next_id;
                    self.next_id += 1;
                    return Ok(Action::Start(ticket));
                }
                return Ok(action);
            }
            // The phase has nothing left to start and nothing in flight: it is over.
            self.close_phase(now_ms);
            if self.cancelled {
                return Ok(Action::Done);
            }
        }
    }

    /// Hands back the outcome of `ticket`'s request, finished at `now_ms`. Returns its
    /// record (also kept for the report).
    pub fn complete(
        &mut self,
        ticket: &Ticket,
        outcome: Outcome,
        extras: RecordExtras,
        now_ms: f64,
    ) -> &RequestRecord {
        // The server's words (body excerpts, headers, error events) lose the run's
        // credentials here, before the record exists: nothing downstream (terminal, files,
        // IndexedDB, permalinks) ever sees them.
        let error = match &outcome.failure {
            Some(f) => Some(f.to_record_redacted(&self.redactor)),
            None => outcome
                .timeline
                .stream_error()
                .map(|e| ErrorRecord::of_stream_error(e, &self.redactor)),
        };
        let retry_after_ms = outcome
            .failure
            .as_ref()
            .and_then(|f| f.retry_after_s())
            .map(|s| (s * 1000.0).min(MAX_BACKOFF_MS));
        let mut record = RequestRecord::from_timeline(
            ticket.id,
            ticket.level,
            ticket.warmup,
            &outcome.timeline,
            outcome.http_status,
            error,
            true,
        );
        if let Some(n) = extras.output_tokens_counted {
            record.recount(&outcome.timeline, n);
        }
        // Set before the redaction below: in the browser the version comes from the page's
        // Resource Timing, which the server's answer shapes.
        record.http_version = match &extras.http_version {
            Some(v) => Some(cap_chars(v, 32)),
            None => outcome.http_version.clone(),
        };
        record.redact(&self.redactor);
        record.scheduled_ms = ticket.scheduled_ms;
        record.level_index = u32::try_from(ticket.level_index).ok();
        set_timing_parts(&mut record, &extras);
        record.tab_hidden = extras.tab_hidden;
        record.turn = extras.turn.map(|t| t.turn);
        record.conversation = extras.turn.map(|t| t.conversation);
        if let Some(v) = &record.http_version {
            if !self.http_versions.contains(v) {
                self.http_versions.push(v.clone());
            }
        }
        if let Some(phase) = self
            .phase
            .as_mut()
            .filter(|p| p.level_index == ticket.level_index && p.warmup == ticket.warmup)
        {
            phase.in_flight = phase.in_flight.saturating_sub(1);
            phase.pending_counts += u32::from(extras.count_pending);
            phase.completed += 1;
            if !record.ok() {
                phase.failed += 1;
            }
            phase.last_end_ms = Some(phase.last_end_ms.map_or(now_ms, |t| t.max(now_ms)));
            if let (Some(pause), None) = (retry_after_ms, &phase.arrivals) {
                phase.paused_until.push(now_ms + pause);
            }
        }
        if extras.count_pending {
            self.pending_counts.insert(ticket.id, self.records.len());
        }
        self.records.push(record);
        &self.records[self.records.len() - 1]
    }

    /// Hands in the token count of `ticket`'s request, completed with `count_pending`
    /// ([`RecordExtras`]): `output_tokens` counted from the answer of `timeline` (its
    /// outcome's), or `None` when there was nothing to count after all. Returns its record,
    /// now final; `None` for a ticket with no count pending.
    pub fn counted(
        &mut self,
        ticket: &Ticket,
        timeline: &Timeline,
        output_tokens: Option<u64>,
    ) -> Option<&RequestRecord> {
        let index = self.pending_counts.remove(&ticket.id)?;
        if let Some(phase) = self
            .phase
            .as_mut()
            .filter(|p| p.level_index == ticket.level_index && p.warmup == ticket.warmup)
        {
            phase.pending_counts = phase.pending_counts.saturating_sub(1);
        }
        let record = self.records.get_mut(index)?;
        if let Some(n) = output_tokens {
            record.recount(timeline, n);
        }
        Some(record)
    }

    /// Starts nothing more; what is in flight still has to be completed.
    pub fn cancel(&mut self) {
        self.cancelled = true;
    }

    /// Whether [`LoadDriver::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled
    }

    /// Where the run stands.
    pub fn progress(&self) -> Progress {
        let levels = self.levels.len();
        match &self.phase {
            Some(p) => Progress {
                level_index: p.level_index,
                levels,
                warmup: p.warmup,
                started: p.started,
                completed: p.completed,
                failed: p.failed,
                in_flight: p.in_flight,
                target: match (p.stop, &p.arrivals) {
                    (StopCondition::Requests(n), _) => Some(n),
                    (_, Some(a)) => Some(a.len() as u64),
                    _ => None,
                },
            },
            None => Progress {
                level_index: self.next_level.min(levels),
                levels,
                warmup: false,
                started: 0,
                completed: 0,
                failed: 0,
                in_flight: 0,
                target: None,
            },
        }
    }

    /// Every record so far, in completion order.
    pub fn records(&self) -> &[RequestRecord] {
        &self.records
    }

    /// The summaries of the levels whose measured phase is over.
    pub fn level_reports(&self) -> &[LevelReport] {
        &self.level_reports
    }

    /// What the run itself has to warn about: each level the time cap (`max_duration_s`)
    /// ended before all its requests had started.
    pub fn warnings(&self) -> Vec<Warning> {
        let cap = self.max_duration_ms.unwrap_or(0.0) / 1000.0;
        self.capped_levels
            .iter()
            .map(|&(load, started, stop)| {
                let planned = match stop {
                    StopCondition::Requests(n) => n.to_string(),
                    StopCondition::DurationS(_) => "its".into(),
                };
                Warning {
                    code: "max_duration".into(),
                    message: format!(
                        "level {load} reached its time cap ({cap} s, max duration) after \
                         starting {started} of {planned} requests: its figures cover fewer \
                         requests than asked for"
                    ),
                }
            })
            .collect()
    }

    /// HTTP versions seen in responses, in order of first appearance.
    pub fn http_versions(&self) -> &[String] {
        &self.http_versions
    }

    /// The summaries and records, for the report.
    pub fn into_parts(self) -> (Vec<LevelReport>, Vec<RequestRecord>) {
        (self.level_reports, self.records)
    }

    /// The find-max search, when the run has one.
    pub fn find_max(&self) -> Option<&FindMax> {
        self.find_max.as_ref().map(|(s, _)| s)
    }

    /// Writes what the driver decided during the run into its `report`: with find-max, the
    /// levels the search ran (in run order) and its verdict.
    pub fn annotate(&self, report: &mut Report) {
        if let Some(search) = self.find_max() {
            search.annotate(report);
        }
    }
}
