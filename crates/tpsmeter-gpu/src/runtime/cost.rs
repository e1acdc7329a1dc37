//! What each step costs the host, counted where the engine records it: dispatches, compute
//! passes, submits, pipeline and bind-group changes, bytes written through the queue and
//! read back, and the CPU time from the step's start until its submit returned.
//!
//! Why: on a real GPU a small model's decode is bound by these fixed costs, not by bandwidth
//! (docs/performance.md gives the arithmetic), and browsers round GPU timestamps to 100 µs,
//! so the engine counts what it records and times its own encoding instead.
//!
//! Counting is a handful of integer adds per dispatch and one clock read at each end of a
//! step; the encode times go into a ring allocated with the model, so nothing is allocated
//! per token. Reports ([`CostLog::since`]) allocate to take a median.
//!
//! What it does not do: read a clock of its own on the web (the caller passes one, see
//! [`StepClock`]), or time the GPU.

use serde::Serialize;

use super::gpu_model::StepStats;

/// Milliseconds on a monotonic clock: natively an `Instant` (the default), in the browser
/// `performance.now()`, which the caller sets (`std::time::Instant` panics on wasm32).
pub type StepClock = fn() -> f64;

/// Encode times kept per phase for medians: the last this many steps.
pub const ENCODE_SAMPLES: usize = 4096;

/// Which kind of step a submit belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// A step of the one-token decode graph, or a batched decode step.
    Decode,
    /// A prompt chunk (the matrix-matrix graphs).
    Prefill,
}

/// Totals of one phase since load.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PhaseTotals {
    /// Steps (each ends in one submit).
    pub steps: u64,
    /// Tokens the steps ran (a batched step runs one per sequence, a chunk its length).
    pub tokens: u64,
    pub dispatches: u64,
    pub passes: u64,
    pub submits: u64,
    pub pipeline_changes: u64,
    pub bind_group_changes: u64,
    pub bytes_written: u64,
    pub bytes_read: u64,
}

impl PhaseTotals {
    /// Adds the counters that moved between two snapshots of [`StepStats`].
    fn add(&mut self, before: &StepStats, after: &StepStats, tokens: u64) {
        self.steps += 1;
        self.tokens += tokens;
        self.dispatches += after.dispatches - before.dispatches;
        self.passes += after.passes - before.passes;
        self.submits += after.submits - before.submits;
        self.pipeline_changes += after.pipeline_changes - before.pipeline_changes;
        self.bind_group_changes += after.bind_group_changes - before.bind_group_changes;
        self.bytes_written += after.bytes_written - before.bytes_written;
    }

    fn minus(&self, earlier: &PhaseTotals) -> PhaseTotals {
        PhaseTotals {
            steps: self.steps - earlier.steps,
            tokens: self.tokens - earlier.tokens,
            dispatches: self.dispatches - earlier.dispatches,
            passes: self.passes - earlier.passes,
            submits: self.submits - earlier.submits,
            pipeline_changes: self.pipeline_changes - earlier.pipeline_changes,
            bind_group_changes: self.bind_group_changes - earlier.bind_group_changes,
            bytes_written: self.bytes_written - earlier.bytes_written,
            bytes_read: self.bytes_read - earlier.bytes_read,
        }
    }
}

/// The last [`ENCODE_SAMPLES`] encode times of a phase.
#[derive(Clone)]
struct Ring {
    ms: Vec<f64>,
    /// Samples pushed since load; sample `i` lives at `i % ENCODE_SAMPLES`.
    pushed: u64,
}

impl std::fmt::Debug for Ring {
    // Not the 4,096 samples.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("pushed", &self.pushed)
            .finish()
    }
}

impl Ring {
    fn new() -> Self {
        Self {
            ms: vec![0.0; ENCODE_SAMPLES],
            pushed: 0,
        }
    }

    fn push(&mut self, ms: f64) {
        let i = (self.pushed % ENCODE_SAMPLES as u64) as usize;
        self.ms[i] = ms;
        self.pushed += 1;
    }

    /// The samples pushed since `mark` (the last [`ENCODE_SAMPLES`] of them at most).
    fn since(&self, mark: u64) -> Vec<f64> {
        let from = mark.max(self.pushed.saturating_sub(ENCODE_SAMPLES as u64));
        (from..self.pushed)
            .map(|i| self.ms[(i % ENCODE_SAMPLES as u64) as usize])
            .collect()
    }
}

/// A point to report from: see [`CostLog::mark`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CostMark {
    decode: PhaseTotals,
    prefill: PhaseTotals,
    decode_samples: u64,
    prefill_samples: u64,
    wait: WaitTotals,
}

/// Host waits on decode readbacks: see [`CostLog::waited`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct WaitTotals {
    /// Readbacks of decoded tokens waited for.
    reads: u64,
    /// Steps in flight when each of them began, summed.
    in_flight: u64,
    /// Samples pushed to the wait ring.
    samples: u64,
}

/// What a step cost on average over a span, per decoded token (decode) or per prompt chunk
/// (prefill); the field names are those of `tpsmeter run --json`'s `per_token_cost`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StepCost {
    pub dispatches: f64,
    pub passes: f64,
    pub submits: f64,
    pub pipeline_changes: f64,
    pub bind_group_changes: f64,
    pub bytes_written: f64,
    pub bytes_read: f64,
    /// Median CPU milliseconds from a step's start until its submit returned (per step: one
    /// token per step when one sequence decodes); `None` without a clock.
    pub encode_ms: Option<f64>,
    /// Steps the figures come from (decode steps, or prompt chunks).
    pub steps: u64,
    /// Decode only: median milliseconds the host was blocked on a decoded token's readback
    /// (from asking for the id until it arrived): the GPU's remaining work on that step plus
    /// the round trip. With steps in flight the GPU has the next step queued meanwhile, so
    /// this stops being time the GPU idles; `None` for prefill or without a clock.
    pub host_wait_ms: Option<f64>,
    /// Decode only: mean steps submitted and not yet read when a decoded token's readback
    /// began (1 without chaining; up to the engine's `in_flight` with it).
    pub in_flight: Option<f64>,
}

impl StepCost {
    /// `totals` divided by `per` (tokens or chunks), with the median of `samples`.
    fn of(
        totals: &PhaseTotals,
        per: u64,
        samples: Vec<f64>,
        waits: Option<(Vec<f64>, f64)>,
    ) -> Option<Self> {
        if per == 0 {
            return None;
        }
        let n = per as f64;
        Some(Self {
            dispatches: totals.dispatches as f64 / n,
            passes: totals.passes as f64 / n,
            submits: totals.submits as f64 / n,
            pipeline_changes: totals.pipeline_changes as f64 / n,
            bind_group_changes: totals.bind_group_changes as f64 / n,
            bytes_written: totals.bytes_written as f64 / n,
            bytes_read: totals.bytes_read as f64 / n,
            encode_ms: median(samples),
            steps: totals.steps,
            host_wait_ms: waits.as_ref().and_then(|(w, _)| median(w.clone())),
            in_flight: waits.map(|(_, f)| f).filter(|f| f.is_finite()),
        })
    }
}

/// One line for people: counts, bytes and the median encode time (the CLI's and the engine
/// bench's).
impl std::fmt::Display for StepCost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.1} dispatches, {:.1} passes, {:.1} submits, {:.1} pipeline / {:.1} bind-group \
             changes, {:.0} B written, {:.0} B read; encode+submit median ",
            self.dispatches,
            self.passes,
            self.submits,
            self.pipeline_changes,
            self.bind_group_changes,
            self.bytes_written,
            self.bytes_read,
        )?;
        match self.encode_ms {
            Some(ms) => write!(f, "{ms:.3} ms (n={})", self.steps)?,
            None => write!(f, "n/a (no clock)")?,
        }
        if let Some(ms) = self.host_wait_ms {
            write!(f, "; host wait median {ms:.3} ms")?;
        }
        if let Some(k) = self.in_flight {
            write!(f, ", {k:.2} steps in flight")?;
        }
        Ok(())
    }
}

/// Median of the finite values (the mean of the middle two for an even count).
fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

/// Decode and prefill costs over a span ([`CostLog::since`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CostReport {
    /// Per decoded token; `None` when no decode step ran.
    pub decode: Option<StepCost>,
    /// Per prompt chunk; `None` when no chunk ran.
    pub prefill: Option<StepCost>,
}

/// Per-phase totals and encode times, and the step in progress.
#[derive(Debug, Clone)]
pub struct CostLog {
    clock: Option<StepClock>,
    decode: PhaseTotals,
    prefill: PhaseTotals,
    decode_ms: Ring,
    prefill_ms: Ring,
    /// Host waits on decoded tokens' readbacks.
    wait_ms: Ring,
    wait: WaitTotals,
    /// The counters and clock when the step in progress began.
    start: Option<(StepStats, f64)>,
    /// The phase of the last submitted step, which its readback is charged to.
    last: Phase,
}

impl Default for CostLog {
    fn default() -> Self {
        Self::new()
    }
}

impl CostLog {
    /// An empty log with the platform's default clock (natively an `Instant`; none on the web
    /// until [`CostLog::set_clock`]).
    pub fn new() -> Self {
        Self {
            clock: default_clock(),
            decode: PhaseTotals::default(),
            prefill: PhaseTotals::default(),
            decode_ms: Ring::new(),
            prefill_ms: Ring::new(),
            wait_ms: Ring::new(),
            wait: WaitTotals::default(),
            start: None,
            last: Phase::Decode,
        }
    }

    /// Times steps with `clock` from now on.
    pub fn set_clock(&mut self, clock: StepClock) {
        self.clock = Some(clock);
    }

    fn now(&self) -> f64 {
        self.clock.map_or(f64::NAN, |c| c())
    }

    /// A step starts: its counters count from `stats` on.
    pub fn begin(&mut self, stats: &StepStats) {
        self.start = Some((*stats, self.now()));
    }

    /// The step in progress starts its clock again, keeping its counters: what ran since
    /// its start was load work (a prefill graph prepared on its chunk size's first use,
    /// compiling pipelines), not the step's.
    pub fn restart_clock(&mut self) {
        let now = self.now();
        if let Some((_, t0)) = self.start.as_mut() {
            *t0 = now;
        }
    }

    /// The step begun last has returned from its submit: charges what `stats` gained since
    /// to `phase`, with `tokens` tokens.
    pub fn end(&mut self, phase: Phase, stats: &StepStats, tokens: u64) {
        let Some((before, t0)) = self.start.take() else {
            return;
        };
        let ms = self.now() - t0;
        let (totals, ring) = match phase {
            Phase::Decode => (&mut self.decode, &mut self.decode_ms),
            Phase::Prefill => (&mut self.prefill, &mut self.prefill_ms),
        };
        totals.add(&before, stats, tokens);
        ring.push(ms);
        self.last = phase;
    }

    /// `bytes` were read back for the step submitted last.
    pub fn read_back(&mut self, bytes: u64) {
        self.read_back_to(self.last, bytes);
    }

    /// The host waited `ms` for a decoded token's id while `in_flight` steps (that one
    /// included) were submitted and unread.
    pub fn waited(&mut self, ms: f64, in_flight: usize) {
        self.wait_ms.push(ms);
        self.wait.reads += 1;
        self.wait.samples = self.wait_ms.pushed;
        self.wait.in_flight += in_flight as u64;
    }

    /// The clock now (NaN without one).
    pub fn clock_ms(&self) -> f64 {
        self.now()
    }

    /// `bytes` were read back for a step of `phase`.
    pub fn read_back_to(&mut self, phase: Phase, bytes: u64) {
        match phase {
            Phase::Decode => self.decode.bytes_read += bytes,
            Phase::Prefill => self.prefill.bytes_read += bytes,
        }
    }

    /// Totals of `phase` since load.
    pub fn totals(&self, phase: Phase) -> PhaseTotals {
        match phase {
            Phase::Decode => self.decode,
            Phase::Prefill => self.prefill,
        }
    }

    /// Where a span to report on begins.
    pub fn mark(&self) -> CostMark {
        CostMark {
            decode: self.decode,
            prefill: self.prefill,
            decode_samples: self.decode_ms.pushed,
            prefill_samples: self.prefill_ms.pushed,
            wait: self.wait,
        }
    }

    /// Costs of the steps since `mark`: decode per decoded token, prefill per chunk.
    pub fn since(&self, mark: &CostMark) -> CostReport {
        let d = self.decode.minus(&mark.decode);
        let p = self.prefill.minus(&mark.prefill);
        CostReport {
            decode: StepCost::of(
                &d,
                d.tokens,
                self.decode_ms.since(mark.decode_samples),
                self.waits_since(mark),
            ),
            prefill: StepCost::of(
                &p,
                p.steps,
                self.prefill_ms.since(mark.prefill_samples),
                None,
            ),
        }
    }
}

impl CostLog {
    /// The decode waits since `mark`, and the mean steps in flight at them.
    fn waits_since(&self, mark: &CostMark) -> Option<(Vec<f64>, f64)> {
        let reads = self.wait.reads - mark.wait.reads;
        if reads == 0 {
            return None;
        }
        let flight = (self.wait.in_flight - mark.wait.in_flight) as f64 / reads as f64;
        Some((self.wait_ms.since(mark.wait.samples), flight))
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn default_clock() -> Option<StepClock> {
    fn instant_ms() -> f64 {
        static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        EPOCH
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_secs_f64()
            * 1e3
    }
    Some(instant_ms)
}

#[cfg(target_arch = "wasm32")]
fn default_clock() -> Option<StepClock> {
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn stats(dispatches: u64, written: u64) -> StepStats {
        StepStats {
            dispatches,
            passes: 1,
            submits: 1,
            bytes_written: written,
            ..StepStats::default()
        }
    }

    #[test]
    fn a_report_divides_decode_by_tokens_and_prefill_by_chunks() {
        let mut log = CostLog::new();
        log.set_clock(|| 1.0);
        let mark = log.mark();
        let zero = StepStats::default();
        for _ in 0..3 {
            log.begin(&zero);
            log.end(Phase::Decode, &stats(10, 12), 1);
            log.read_back(4);
        }
        log.begin(&zero);
        log.end(Phase::Prefill, &stats(7, 300), 64);
        let r = log.since(&mark);
        let d = r.decode.unwrap();
        assert_eq!(
            (d.dispatches, d.bytes_written, d.bytes_read),
            (10.0, 12.0, 4.0)
        );
        assert_eq!(
            (d.passes, d.submits, d.steps, d.encode_ms),
            (1.0, 1.0, 3, Some(0.0))
        );
        let p = r.prefill.unwrap();
        assert_eq!((p.dispatches, p.bytes_written, p.steps), (7.0, 300.0, 1));
        // A mark taken now sees nothing.
        let later = log.since(&log.mark());
        assert!(later.decode.is_none() && later.prefill.is_none());
    }

    #[test]
    fn the_ring_keeps_the_last_samples() {
        let mut r = Ring::new();
        for i in 0..ENCODE_SAMPLES as u64 + 10 {
            r.push(i as f64);
        }
        let s = r.since(0);
        assert_eq!(s.len(), ENCODE_SAMPLES);
        assert_eq!(s[0], 10.0);
        assert_eq!(
            r.since(ENCODE_SAMPLES as u64 + 8),
            vec![ENCODE_SAMPLES as f64 + 8.0, ENCODE_SAMPLES as f64 + 9.0]
        );
        assert_eq!(median(vec![3.0, 1.0, f64::NAN, 2.0, 10.0]), Some(2.5));
    }
}
