//! The wall time of every step `cargo xtask ci` (and `browser-test`) runs, against a budget.
//!
//! CI has a hard limit (90 minutes on a fresh 2-core machine) and a target well inside it
//! (40): a change that makes one step slower shows up in its own run, as a line when the step
//! ends, a warning when it runs past its budget by more than [`OVER_BUDGET`], and a table of
//! every step at the end, also written as JSON (`<target>/ci-times.json`) for tools.
//!
//! Steps are recorded process-wide (a `Mutex`), so nested helpers (`browser-test`'s own
//! phases) land in the same table without a recorder threaded through every call.

use anyhow::{Context, Result};
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

/// How far past its budget a step may run before the run warns (25 %): budgets are
/// medians of fresh-machine runs, and this machine's noise is well inside a quarter.
pub const OVER_BUDGET: f64 = 1.25;

/// One finished step.
#[derive(Debug, Clone)]
struct Step {
    name: String,
    seconds: f64,
    budget_s: Option<u64>,
    ok: bool,
}

static STEPS: Mutex<Vec<Step>> = Mutex::new(Vec::new());

/// The budget of a step by name, from `budgets` (`(name, seconds)`).
fn budget_of(budgets: &[(&str, u64)], name: &str) -> Option<u64> {
    budgets.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// The budgets `cargo xtask ci` holds its steps to; set by `ci` before its first step.
static BUDGETS: Mutex<Vec<(&'static str, u64)>> = Mutex::new(Vec::new());

/// Sets the budgets (seconds per step name) later steps are held to.
pub fn set_budgets(budgets: &[(&'static str, u64)]) {
    if let Ok(mut b) = BUDGETS.lock() {
        *b = budgets.to_vec();
    }
}

/// Runs `step`, prints its wall time (and its budget) when it ends, passed or failed, and
/// records it for [`report`].
pub fn timed<T>(name: &str, step: impl FnOnce() -> Result<T>) -> Result<T> {
    let start = Instant::now();
    eprintln!("ci: {name} ...");
    let out = step();
    let seconds = start.elapsed().as_secs_f64();
    let budget_s = BUDGETS.lock().ok().and_then(|b| budget_of(&b, name));
    let verdict = match budget_s {
        Some(b) if seconds > b as f64 * OVER_BUDGET => format!(
            " (budget {b} s: WARNING, {:.0} % over; see docs/testing.md)",
            (seconds / b as f64 - 1.0) * 100.0
        ),
        Some(b) => format!(" (budget {b} s)"),
        None => String::new(),
    };
    let failed = if out.is_ok() { "" } else { " FAILED" };
    eprintln!("ci: {name}: {seconds:.0} s{verdict}{failed}");
    if let Ok(mut steps) = STEPS.lock() {
        steps.push(Step {
            name: name.to_owned(),
            seconds,
            budget_s,
            ok: out.is_ok(),
        });
    }
    out
}

/// Prints the table of every step recorded so far, with the total, and writes it to `json`
/// (`{"steps": [{"name", "seconds", "budget_s", "ok"}], "total_s"}`). Returns the names of
/// the steps over budget by more than [`OVER_BUDGET`].
pub fn report(json: &Path) -> Result<Vec<String>> {
    let steps = STEPS.lock().map(|s| s.clone()).unwrap_or_default();
    let total: f64 = steps.iter().map(|s| s.seconds).sum();
    let width = steps.iter().map(|s| s.name.len()).max().unwrap_or(4).max(5);
    let mut over = Vec::new();
    eprintln!();
    eprintln!(
        "{:<width$}  {:>8}  {:>8}  note",
        "step", "seconds", "budget"
    );
    for s in &steps {
        let budget = s
            .budget_s
            .map(|b| b.to_string())
            .unwrap_or_else(|| "-".into());
        let note = match s.budget_s {
            Some(b) if s.seconds > b as f64 * OVER_BUDGET => {
                over.push(s.name.clone());
                "OVER BUDGET"
            }
            _ if !s.ok => "failed",
            _ => "",
        };
        eprintln!(
            "{:<width$}  {:>8.0}  {:>8}  {note}",
            s.name, s.seconds, budget
        );
    }
    let budget_total: u64 = steps.iter().filter_map(|s| s.budget_s).sum();
    eprintln!(
        "{:<width$}  {:>8.0}  {:>8}  ({:.1} min)",
        "total",
        total,
        budget_total,
        total / 60.0
    );
    let rows: Vec<serde_json::Value> = steps
        .iter()
        .map(|s| {
            serde_json::json!({
                "name": s.name,
                "seconds": (s.seconds * 10.0).round() / 10.0,
                "budget_s": s.budget_s,
                "ok": s.ok,
            })
        })
        .collect();
    let text = serde_json::to_string_pretty(&serde_json::json!({
        "steps": rows,
        "total_s": (total * 10.0).round() / 10.0,
    }))?;
    if let Some(dir) = json.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    }
    std::fs::write(json, text).with_context(|| format!("write {}", json.display()))?;
    eprintln!("ci: step times written to {}", json.display());
    Ok(over)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_are_found_by_name() {
        let b = [("fmt", 10), ("clippy", 300)];
        assert_eq!(budget_of(&b, "clippy"), Some(300));
        assert_eq!(budget_of(&b, "rustdoc"), None);
    }
}
