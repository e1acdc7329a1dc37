//! [`FindMax`]: the search for the highest load a server carries within its SLO (`tpsmeter
//! bench --find-max --slo ...`, `bench({ findMax: true, slo })`), as a state machine with
//! no clock and no I/O. The load driver asks it for each next level once a level's summary
//! is final, so the CLI and the browser run the same search.
//!
//! The rule, level by level (load `x` is a concurrency, or a rate with `--rate`):
//!
//! 1. **Judge the level.** It *passed* (met the SLO) when at least `attainment_pct` percent
//!    (default 95) of the requests that ended in its phase succeeded and met every SLO
//!    limit; failed requests count as not met. Its goodput is those requests per second of
//!    the phase (`summary.goodput.requests_per_s`).
//! 2. **Errors stop the search**: when more than half of the level's requests failed, the
//!    server fails rather than slows, and the search stops (`errors`) without going higher
//!    or between.
//! 3. **A level that passed**, with no load missed yet, must have raised goodput by more
//!    than `min_gain_pct` percent (default 10) over the best goodput of the lower loads that
//!    passed, or the search stops (`goodput_flat`); a level that passed at `max_load` stops
//!    it (`max_load`); else the next load doubles (`2x`, at most `max_load`). Once a load
//!    has missed, the next load bisects between the one that passed and the lowest that
//!    missed, and goodput is no longer judged: between loads a few percent apart, a gain of
//!    a few percent is what linear scaling gives, and noise outweighs it.
//! 4. **A level that missed** stops the search when no load has passed (`never_met`: the
//!    first load missed); else the next load bisects between the highest load that passed
//!    and the lowest that missed.
//! 5. **Bisection** takes the midpoint (rounded down to whole streams) and stops
//!    (`slo_broken`) once the lowest load that missed is within [`RESOLUTION_PCT`] percent
//!    of the highest that passed, or one stream above it.
//! 6. **At most `max_levels` levels** (default 12) run, every level counted; a search that
//!    would need more stops (`max_levels`). An interrupted run stops (`cancelled`) without
//!    judging the level cut short.
//!
//! The verdict names the highest load that passed (`max_load`), the *knee* (the lowest load
//! that passed with a goodput within `min_gain_pct` of the best: where adding load stopped
//! paying), the lowest load that missed, and why the search stopped.
//!
//! Concurrency rather than rate is the default, as in GuideLLM's goodput profile: a closed
//! loop has a steady state at every level, while a rate beyond the server's capacity builds
//! a backlog that grows with the level's length.

mod verdict;

#[cfg(test)]
mod tests;

pub use crate::spec::find_max::{
    DEFAULT_ATTAINMENT_PCT, DEFAULT_MAX_LEVELS, DEFAULT_MAX_LOAD, DEFAULT_MIN_GAIN_PCT,
    FindMaxConfig, FindMaxOptions, RESOLUTION_PCT,
};
pub use verdict::{FindMaxStep, FindMaxStop, FindMaxVerdict};

use crate::load::LoadLevel;
use crate::report::{LevelReport, Report};

/// What the search needs of one finished level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelResult {
    pub level: LoadLevel,
    /// Requests that ended in the level's phase.
    pub completed: u64,
    pub failed: u64,
    /// Requests that succeeded and met every SLO.
    pub met: u64,
    /// `met` per second of the phase.
    pub goodput_per_s: Option<f64>,
}

impl LevelResult {
    /// The figures of a level's summary (no SLO given: nothing met).
    pub fn of(report: &LevelReport) -> LevelResult {
        let s = &report.summary;
        LevelResult {
            level: report.level,
            completed: s.completed,
            failed: s.failed,
            met: s.goodput.map_or(0, |g| g.met),
            goodput_per_s: s.goodput.and_then(|g| g.requests_per_s),
        }
    }
}

/// The search (see the module docs for the rule).
#[derive(Debug, Clone, PartialEq)]
pub struct FindMax {
    cfg: FindMaxConfig,
    steps: Vec<FindMaxStep>,
    stop: Option<FindMaxStop>,
}

impl FindMax {
    pub fn new(cfg: FindMaxConfig) -> FindMax {
        FindMax {
            cfg,
            steps: Vec::new(),
            stop: None,
        }
    }

    pub fn config(&self) -> &FindMaxConfig {
        &self.cfg
    }

    /// The load of the first level.
    pub fn first(&self) -> LoadLevel {
        self.cfg.start
    }

    /// Whether the search has stopped.
    pub fn is_over(&self) -> bool {
        self.stop.is_some()
    }

    /// Judges a finished level; returns the next load to run, or `None` when the search is
    /// over (then [`FindMax::verdict`] says why).
    pub fn observe(&mut self, result: &LevelResult) -> Option<LoadLevel> {
        if self.stop.is_some() {
            return None;
        }
        let step = self.judge(result);
        self.steps.push(step);
        match self.decide(&step) {
            Ok(_) if self.steps.len() >= self.cfg.max_levels as usize => {
                self.stop = Some(FindMaxStop::MaxLevels);
                None
            }
            Ok(next) => Some(next),
            Err(stop) => {
                self.stop = Some(stop);
                None
            }
        }
    }

    /// The run was interrupted: the search is over unless it already was.
    pub fn interrupt(&mut self) {
        self.stop.get_or_insert(FindMaxStop::Cancelled);
    }

    /// Every level judged so far, in run order.
    pub fn steps(&self) -> &[FindMaxStep] {
        &self.steps
    }

    fn judge(&self, r: &LevelResult) -> FindMaxStep {
        let attainment = (r.completed > 0).then(|| r.met as f64 / r.completed as f64);
        // In whole numbers where they are: 19 of 20 meets 95% exactly.
        let passed =
            r.completed > 0 && r.met as f64 * 100.0 >= self.cfg.attainment_pct * r.completed as f64;
        let goodput = r.goodput_per_s.unwrap_or(0.0);
        let gain_pct = if passed {
            self.best_goodput_below(r.level.value())
                .filter(|&best| best > 0.0)
                .map(|best| (goodput / best - 1.0) * 100.0)
        } else {
            None
        };
        FindMaxStep {
            level: r.level,
            completed: r.completed,
            failed: r.failed,
            met: r.met,
            attainment,
            goodput_per_s: r.goodput_per_s,
            passed,
            gain_pct,
        }
    }

    /// The next load after `step`, or why the search stops.
    fn decide(&self, step: &FindMaxStep) -> Result<LoadLevel, FindMaxStop> {
        if step.failed.saturating_mul(2) > step.completed {
            return Err(FindMaxStop::Errors);
        }
        let x = step.level.value();
        if !step.passed {
            let best = self.highest_passing().ok_or(FindMaxStop::NeverMet)?;
            return self.between(best.value(), x);
        }
        match self.lowest_failing() {
            Some(w) => self.between(x, w.value()),
            // Goodput is judged on doubling only: between two loads a few percent apart, a
            // gain of a few percent is what linear scaling gives, and noise outweighs it.
            None if step.gain_pct.is_some_and(|g| g <= self.cfg.min_gain_pct) => {
                Err(FindMaxStop::GoodputFlat)
            }
            None if x >= self.cfg.max_load => Err(FindMaxStop::MaxLoad),
            None => Ok(self.load((x * 2.0).min(self.cfg.max_load))),
        }
    }

    /// The midpoint of `passed` (met the SLO) and `missed`, or `slo_broken` when they are
    /// within the resolution.
    fn between(&self, passed: f64, missed: f64) -> Result<LoadLevel, FindMaxStop> {
        let close = missed <= passed * (1.0 + self.cfg.resolution_pct / 100.0);
        let whole = matches!(self.cfg.start, LoadLevel::Concurrency(_));
        if close || (whole && missed - passed <= 1.0) {
            return Err(FindMaxStop::SloBroken);
        }
        let mid = (passed + missed) / 2.0;
        Ok(self.load(if whole { mid.floor() } else { mid }))
    }

    /// A load of the search's kind.
    fn load(&self, value: f64) -> LoadLevel {
        match self.cfg.start {
            // Whole and within 1..=max_load by construction.
            LoadLevel::Concurrency(_) => LoadLevel::Concurrency(value as u32),
            LoadLevel::Rate(_) => LoadLevel::Rate(value),
        }
    }

    fn highest_passing(&self) -> Option<LoadLevel> {
        self.steps
            .iter()
            .filter(|s| s.passed)
            .map(|s| s.level)
            .max_by(|a, b| a.value().total_cmp(&b.value()))
    }

    fn lowest_failing(&self) -> Option<LoadLevel> {
        self.steps
            .iter()
            .filter(|s| !s.passed)
            .map(|s| s.level)
            .min_by(|a, b| a.value().total_cmp(&b.value()))
    }

    /// The best goodput of the levels below `load` that passed.
    fn best_goodput_below(&self, load: f64) -> Option<f64> {
        self.steps
            .iter()
            .filter(|s| s.passed && s.level.value() < load)
            .map(|s| s.goodput_per_s.unwrap_or(0.0))
            .reduce(f64::max)
    }

    /// Writes the search into the `report` of its run: the levels it ran (the report's
    /// levels, in run order) as the config's, and its verdict.
    pub fn annotate(&self, report: &mut Report) {
        report.config.levels = report.levels.iter().map(|l| l.level).collect();
        report.find_max = Some(self.verdict());
    }

    /// The conclusion so far (an unfinished search reads as interrupted).
    pub fn verdict(&self) -> FindMaxVerdict {
        let stop = self.stop.unwrap_or(FindMaxStop::Cancelled);
        let step_of = |l: LoadLevel| self.steps.iter().find(|s| s.level == l);
        let max_load = self.highest_passing();
        let best = self
            .steps
            .iter()
            .filter(|s| s.passed)
            .map(|s| s.goodput_per_s.unwrap_or(0.0))
            .reduce(f64::max);
        let knee = best.and_then(|best| {
            let floor = best / (1.0 + self.cfg.min_gain_pct / 100.0);
            self.steps
                .iter()
                .filter(|s| s.passed && s.goodput_per_s.unwrap_or(0.0) >= floor)
                .map(|s| s.level)
                .min_by(|a, b| a.value().total_cmp(&b.value()))
        });
        let mut v = FindMaxVerdict {
            max_load,
            max_load_goodput_per_s: max_load.and_then(step_of).and_then(|s| s.goodput_per_s),
            knee,
            best_goodput_per_s: best,
            lowest_failing: self.lowest_failing(),
            stop,
            message: String::new(),
            steps: self.steps.clone(),
        };
        v.message = self.message(&v);
        v
    }

    fn message(&self, v: &FindMaxVerdict) -> String {
        let per_s = |g: Option<f64>| format!("{:.2} req/s", g.unwrap_or(0.0));
        let share = |s: &FindMaxStep| match s.attainment {
            Some(a) => format!("{:.0}% of its requests met the SLO", a * 100.0),
            None => "no request ended inside it".into(),
        };
        let required = format!("{}% required", self.cfg.attainment_pct);
        let best = match v.max_load {
            Some(l) => format!(
                "{l} is the highest load that met the SLO ({} of goodput)",
                per_s(v.max_load_goodput_per_s)
            ),
            None => "no load met the SLO".into(),
        };
        let last = self.steps.last();
        match (v.stop, last) {
            (FindMaxStop::SloBroken, _) => match v
                .lowest_failing
                .and_then(|l| self.steps.iter().find(|s| s.level == l))
            {
                Some(w) => format!("{best}; {} missed it: {} ({required})", w.level, share(w)),
                None => best,
            },
            (FindMaxStop::GoodputFlat, Some(s)) => format!(
                "{best}; goodput stopped rising: {} gave {}, {:+.0}% over the best lower load \
                 (more than +{}% needed to go on)",
                s.level,
                per_s(s.goodput_per_s),
                s.gain_pct.unwrap_or(0.0),
                self.cfg.min_gain_pct
            ),
            (FindMaxStop::MaxLoad, _) => {
                format!(
                    "{best}, the most the search may offer (max load): the server may take more"
                )
            }
            (FindMaxStop::MaxLevels, _) => format!(
                "{best}; the search ran its {} levels before it converged",
                self.cfg.max_levels
            ),
            (FindMaxStop::Errors, Some(s)) => format!(
                "{best}; at {}, {} of {} requests failed, so the search stopped",
                s.level, s.failed, s.completed
            ),
            (FindMaxStop::NeverMet, Some(s)) => {
                format!(
                    "{best}: at {}, the first load, {} ({required})",
                    s.level,
                    share(s)
                )
            }
            (FindMaxStop::Cancelled, _) => format!("{best} so far; the run was interrupted"),
            (_, None) => best,
        }
    }
}
