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
//! - **cancel**: nothing more starts; the caller ends what is in flight (recorded as
//!   `cancelled`); a measured phase cut short still gets its summary.
//! - **shards** ([`LoadDriver::new_shard`]): each level, its request count, the warm-up
//!   and the open-loop cap are this machine's share (see `shard`), with its own arrival
//!   seed. A level whose share is empty sends nothing; when timed, it still lasts its
//!   duration, so the shard enters the next level together with the others.

use crate::error::Result;
use crate::exchange::Outcome;
use crate::options::BenchOptions;
use crate::phase::PhaseSummary;
use crate::plan::{ArrivalLimit, LoadLevel, StopCondition, poisson_arrivals};
use crate::report::{ErrorRecord, LevelReport, RequestRecord};
use crate::request::Redactor;
use crate::shard::{LevelShare, Shard};
use crate::slo::Slo;

/// Longest pause a closed-loop slot takes after a 429, whatever `Retry-After` asks for: a
/// benchmark should not sit idle for an hour.
pub const MAX_BACKOFF_MS: f64 = 60_000.0;

/// A request the caller is to start now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ticket {
    /// Unique in the run, in start order; the record's `id`.
    pub id: u64,
    /// Position of the level in the run (0-based).
    pub level_index: usize,
    pub level: LoadLevel,
    pub warmup: bool,
    /// Open loop: when the schedule wanted it sent (ms on the run's clock).
    pub scheduled_ms: Option<f64>,
}

/// What the caller does next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    /// Start this request now, then call `next` again.
    Start(Ticket),
    /// Nothing to start before `until_ms`; wake then or when a request finishes.
    Sleep { until_ms: f64 },
    /// Wait for a request to finish.
    Wait,
    /// The run is over: build the report.
    Done,
}

/// Extra facts a transport knows about one request beyond its outcome.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordExtras {
    /// Time the request waited inside the client before going out (the browser's
    /// connections-per-host limit), from the transport's own timing.
    pub queue_ms: Option<f64>,
    /// The page was hidden at some time while the request ran (browser).
    pub tab_hidden: Option<bool>,
    /// The run's tokenizer's count of the answer text: the output token count when the
    /// server reported no usage.
    pub output_tokens_counted: Option<u64>,
}

/// Where the run stands, for progress displays.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    pub level_index: usize,
    pub levels: usize,
    pub warmup: bool,
    pub started: u64,
    pub completed: u64,
    pub failed: u64,
    pub in_flight: u32,
    /// The phase's request target, when count-limited.
    pub target: Option<u64>,
}

#[derive(Debug)]
struct Phase {
    level_index: usize,
    load: LoadLevel,
    warmup: bool,
    /// Slots (closed loop) or the cap on requests in flight (open loop).
    slots: u32,
    stop: StopCondition,
    /// Open loop: arrival offsets from the phase start.
    arrivals: Option<Vec<f64>>,
    start_ms: Option<f64>,
    started: u64,
    completed: u64,
    failed: u64,
    in_flight: u32,
    /// Closed loop: times until which slots pause after a 429 (one entry per paused slot).
    paused_until: Vec<f64>,
    /// Index into the driver's records where this phase's records begin.
    first_record: usize,
    last_end_ms: Option<f64>,
}

impl Phase {
    fn stop_ms(&self) -> Option<f64> {
        match (self.stop, self.start_ms) {
            (StopCondition::DurationS(s), Some(start)) => Some(start + s * 1000.0),
            _ => None,
        }
    }
}

/// The load runner of one benchmark (see the module docs).
#[derive(Debug)]
pub struct LoadDriver {
    levels: Vec<LevelShare>,
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
        Ok(LoadDriver {
            redactor,
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

    /// The action of an open phase, or `None` when it is over.
    fn step(phase: &mut Phase, start_ms: f64, now_ms: f64, cancelled: bool) -> Option<Action> {
        let ticket = |scheduled_ms| Ticket {
            id: 0,
            level_index: phase.level_index,
            level: phase.load,
            warmup: phase.warmup,
            scheduled_ms,
        };
        let busy = if phase.in_flight > 0 {
            Some(Action::Wait)
        } else {
            None
        };
        if cancelled {
            return busy;
        }
        if let Some(arrivals) = &phase.arrivals {
            // Open loop: the schedule decides; the cap only delays.
            let Some(&offset) = arrivals.get(phase.started as usize) else {
                return busy;
            };
            let due = start_ms + offset;
            if due > now_ms {
                return Some(Action::Sleep { until_ms: due });
            }
            if phase.in_flight >= phase.slots {
                return Some(Action::Wait);
            }
            phase.started += 1;
            phase.in_flight += 1;
            return Some(Action::Start(ticket(Some(due))));
        }
        if phase.slots == 0 {
            // No share of this level: nothing to send, but a timed level lasts its duration
            // so the next one starts when the other shards start it.
            return phase
                .stop_ms()
                .filter(|&end| now_ms < end)
                .map(|until_ms| Action::Sleep { until_ms });
        }
        // Closed loop.
        let more = match phase.stop {
            StopCondition::Requests(n) => phase.started < n,
            StopCondition::DurationS(_) => phase.stop_ms().is_some_and(|end| now_ms < end),
        };
        if !more {
            return busy;
        }
        phase.paused_until.retain(|&t| t > now_ms);
        let paused = phase.paused_until.len() as u32;
        if phase.in_flight + paused < phase.slots {
            phase.started += 1;
            phase.in_flight += 1;
            return Some(Action::Start(ticket(None)));
        }
        match phase.paused_until.iter().copied().reduce(f64::min) {
            Some(resume) => {
                let until_ms = phase.stop_ms().map_or(resume, |end| resume.min(end));
                Some(Action::Sleep { until_ms })
            }
            None => busy,
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
        record.redact(&self.redactor);
        record.scheduled_ms = ticket.scheduled_ms;
        record.level_index = u32::try_from(ticket.level_index).ok();
        record.queue_ms = extras.queue_ms.or(record.queue_ms);
        record.tab_hidden = extras.tab_hidden;
        record.http_version.clone_from(&outcome.http_version);
        if let Some(v) = &outcome.http_version {
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
            phase.completed += 1;
            if !record.ok() {
                phase.failed += 1;
            }
            phase.last_end_ms = Some(phase.last_end_ms.map_or(now_ms, |t| t.max(now_ms)));
            if let (Some(pause), None) = (retry_after_ms, &phase.arrivals) {
                phase.paused_until.push(now_ms + pause);
            }
        }
        self.records.push(record);
        &self.records[self.records.len() - 1]
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

    /// HTTP versions seen in responses, in order of first appearance.
    pub fn http_versions(&self) -> &[String] {
        &self.http_versions
    }

    /// The summaries and records, for the report.
    pub fn into_parts(self) -> (Vec<LevelReport>, Vec<RequestRecord>) {
        (self.level_reports, self.records)
    }

    /// Opens the next phase; `false` when every level is done.
    fn open_phase(&mut self) -> Result<bool> {
        if self.cancelled {
            return Ok(false);
        }
        let Some(&LevelShare {
            load,
            stop,
            warmup: warmup_requests,
        }) = self.levels.get(self.next_level)
        else {
            return Ok(false);
        };
        let cap = match load {
            LoadLevel::Concurrency(c) => c,
            LoadLevel::Rate(_) => self.max_concurrency,
        };
        let warmup = warmup_requests > 0 && !self.warmup_done;
        let (slots, stop, arrivals) = if warmup {
            self.warmup_done = true;
            (
                cap.min(warmup_requests),
                StopCondition::Requests(u64::from(warmup_requests)),
                None,
            )
        } else {
            self.next_level += 1;
            self.warmup_done = false;
            let arrivals = match load {
                LoadLevel::Rate(r) => {
                    let limit = match stop {
                        StopCondition::Requests(n) => ArrivalLimit::Count(
                            usize::try_from(n).unwrap_or(crate::plan::MAX_ARRIVALS),
                        ),
                        StopCondition::DurationS(s) => ArrivalLimit::HorizonMs(s * 1000.0),
                    };
                    Some(poisson_arrivals(r, limit, self.seed)?)
                }
                LoadLevel::Concurrency(_) => None,
            };
            (cap, stop, arrivals)
        };
        self.phase = Some(Phase {
            level_index: self.next_level - usize::from(!warmup),
            load,
            warmup,
            slots,
            stop,
            arrivals,
            start_ms: None,
            started: 0,
            completed: 0,
            failed: 0,
            in_flight: 0,
            paused_until: Vec::new(),
            first_record: self.records.len(),
            last_end_ms: None,
        });
        Ok(true)
    }

    /// Closes the current phase; a measured one gets its level summary.
    fn close_phase(&mut self, now_ms: f64) {
        let Some(phase) = self.phase.take() else {
            return;
        };
        if phase.warmup {
            return;
        }
        let start_ms = phase.start_ms.unwrap_or(now_ms);
        let end_ms = phase.last_end_ms.unwrap_or(start_ms).max(start_ms);
        // Duration levels: the phase is the requested window; requests still in flight at
        // its end finished but count only if they ended inside it (see `phase`).
        let end_ms = phase.stop_ms().map_or(end_ms, |stop| end_ms.min(stop));
        let summary = PhaseSummary::from_records(
            &self.records[phase.first_record..],
            start_ms,
            end_ms,
            self.slo.as_ref(),
        );
        self.level_reports.push(LevelReport {
            level: phase.load,
            summary,
        });
    }
}
