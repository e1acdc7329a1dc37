//! The phases of a run: opening each level's warm-up and measured phase, stepping the
//! open one (what to start, when to sleep), and closing it into its level's summary.

use super::{Action, LoadDriver, Ticket};
use crate::error::Result;
use crate::find_max::LevelResult;
use crate::level_summary::PhaseSummary;
use crate::load::{ArrivalLimit, LoadLevel, StopCondition, poisson_arrivals};
use crate::ramp::Ramp;
use crate::report::LevelReport;
use crate::shard::LevelShare;

/// One phase of a level (its warm-up or its measured requests) while it runs.
#[derive(Debug)]
pub(super) struct Phase {
    pub(super) level_index: usize,
    pub(super) load: LoadLevel,
    pub(super) warmup: bool,
    /// Slots (closed loop) or the cap on requests in flight (open loop).
    pub(super) slots: u32,
    pub(super) stop: StopCondition,
    /// Open loop: arrival offsets from the phase start.
    pub(super) arrivals: Option<Vec<f64>>,
    pub(super) start_ms: Option<f64>,
    pub(super) started: u64,
    pub(super) completed: u64,
    pub(super) failed: u64,
    pub(super) in_flight: u32,
    /// Completed requests whose token count the caller has yet to hand in: the phase's
    /// summary waits for them, its slots do not.
    pub(super) pending_counts: u32,
    /// Closed loop: times until which slots pause after a 429 (one entry per paused slot).
    pub(super) paused_until: Vec<f64>,
    /// Closed loop with a ramp-up: when each slot opens.
    pub(super) ramp: Option<Ramp>,
    /// Index into the driver's records where this phase's records begin.
    pub(super) first_record: usize,
    pub(super) last_end_ms: Option<f64>,
    /// A request-count phase's time cap (`max_duration_s`), in ms from its start.
    pub(super) cap_ms: Option<f64>,
    /// Whether the cap ended it before all its requests had started.
    pub(super) capped: bool,
}

impl Phase {
    pub(super) fn stop_ms(&self) -> Option<f64> {
        match (self.stop, self.start_ms) {
            (StopCondition::DurationS(s), Some(start)) => Some(start + s * 1000.0),
            _ => None,
        }
    }
}

impl LoadDriver {
    /// The action of an open phase, or `None` when it is over.
    pub(super) fn step(
        phase: &mut Phase,
        start_ms: f64,
        now_ms: f64,
        cancelled: bool,
    ) -> Option<Action> {
        let ticket = |scheduled_ms| Ticket {
            id: 0,
            level_index: phase.level_index,
            level: phase.load,
            warmup: phase.warmup,
            scheduled_ms,
        };
        let busy = if phase.in_flight > 0 || phase.pending_counts > 0 {
            Some(Action::Wait)
        } else {
            None
        };
        if cancelled {
            return busy;
        }
        // A capped level starts nothing past its cap; what is in flight finishes.
        let cap_end = phase.cap_ms.map(|cap| start_ms + cap);
        if cap_end.is_some_and(|end| now_ms >= end) {
            let target = match phase.stop {
                StopCondition::Requests(n) => n,
                StopCondition::DurationS(_) => u64::MAX,
            };
            let scheduled = phase.arrivals.as_ref().map_or(target, |a| a.len() as u64);
            if phase.started < target.min(scheduled) {
                phase.capped = true;
            }
            return busy;
        }
        if let Some(arrivals) = &phase.arrivals {
            // Open loop: the schedule decides; the cap only delays.
            let Some(&offset) = arrivals.get(phase.started as usize) else {
                return busy;
            };
            let due = start_ms + offset;
            if due > now_ms {
                let until_ms = cap_end.map_or(due, |end| due.min(end));
                return Some(Action::Sleep { until_ms });
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
        let open = phase.ramp.map_or(phase.slots, |r| {
            r.open_streams(start_ms, now_ms, phase.slots)
        });
        if phase.in_flight + paused < open {
            phase.started += 1;
            phase.in_flight += 1;
            return Some(Action::Start(ticket(None)));
        }
        // The next slot of the ramp to open, then any paused slot's resumption.
        let opening = phase
            .ramp
            .filter(|_| open < phase.slots)
            .map(|r| r.opens_at(start_ms, open));
        match [phase.paused_until.iter().copied().reduce(f64::min), opening]
            .into_iter()
            .flatten()
            .reduce(f64::min)
        {
            Some(wake) => {
                let until_ms = [phase.stop_ms(), cap_end]
                    .into_iter()
                    .flatten()
                    .fold(wake, f64::min);
                Some(Action::Sleep { until_ms })
            }
            None => busy,
        }
    }

    /// Opens the next phase; `false` when every level is done.
    pub(super) fn open_phase(&mut self) -> Result<bool> {
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
                            usize::try_from(n).unwrap_or(crate::load::MAX_ARRIVALS),
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
            pending_counts: 0,
            paused_until: Vec::new(),
            ramp: self
                .ramps
                .get(self.next_level - usize::from(!warmup))
                .copied()
                .flatten(),
            first_record: self.records.len(),
            last_end_ms: None,
            cap_ms: match stop {
                StopCondition::Requests(_) if !warmup => self.max_duration_ms,
                _ => None,
            },
            capped: false,
        });
        Ok(true)
    }

    /// Closes the current phase; a measured one gets its level summary.
    pub(super) fn close_phase(&mut self, now_ms: f64) {
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
        if phase.capped {
            self.capped_levels
                .push((phase.load, phase.started, phase.stop));
        }
        let report = LevelReport {
            level: phase.load,
            summary,
        };
        if let Some((search, options)) = &mut self.find_max {
            // A level cut short by a cancel is not judged.
            if self.cancelled {
                search.interrupt();
            } else if let Some(next) = search.observe(&LevelResult::of(&report)) {
                self.levels.push(LevelShare {
                    load: next,
                    stop: options.stop_condition(next),
                    warmup: options.warmup,
                });
            }
        }
        self.level_reports.push(report);
    }
}
