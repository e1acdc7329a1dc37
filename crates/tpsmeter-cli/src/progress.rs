//! A progress bar per concurrency level, on stderr.
//!
//! Hidden when stderr is not a terminal (CI logs, pipes) or with `--quiet`, so redirected
//! output stays clean. Drawing is rate-limited by indicatif and happens on the collector
//! task, never on the tasks that read and stamp response bytes.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use tpsmeter_core::load::StopCondition;

/// The bar of one level.
#[derive(Debug)]
pub struct LevelProgress {
    bar: ProgressBar,
    ok: u64,
    failed: u64,
}

impl LevelProgress {
    /// Starts the bar for a level at concurrency `c` running until `stop`.
    pub fn start(label: &str, stop: StopCondition, quiet: bool) -> LevelProgress {
        let visible = !quiet && std::io::stderr().is_terminal();
        let bar = match stop {
            StopCondition::Requests(n) => ProgressBar::new(n),
            StopCondition::DurationS(_) => ProgressBar::new_spinner(),
        };
        bar.set_draw_target(if visible {
            ProgressDrawTarget::stderr_with_hz(10)
        } else {
            ProgressDrawTarget::hidden()
        });
        let template = match stop {
            StopCondition::Requests(_) => "{prefix:>14} [{bar:30}] {pos}/{len} {msg} ({elapsed})",
            StopCondition::DurationS(_) => "{prefix:>14} {spinner} {pos} done {msg} ({elapsed})",
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(label.to_string());
        if matches!(stop, StopCondition::DurationS(_)) {
            bar.enable_steady_tick(Duration::from_millis(200));
        }
        LevelProgress {
            bar,
            ok: 0,
            failed: 0,
        }
    }

    /// Counts one finished request.
    pub fn record(&mut self, ok: bool) {
        if ok {
            self.ok += 1;
        } else {
            self.failed += 1;
        }
        self.bar.inc(1);
        if self.failed > 0 {
            self.bar.set_message(format!("{} errors", self.failed));
        }
    }

    /// Clears the bar (the final table follows).
    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}
