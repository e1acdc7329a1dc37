//! The human-readable summary printed at the end of a run: one row per level, then the
//! degradation of per-user speed, errors by class, and how tokens were counted.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use comfy_table::{CellAlignment, ContentArrangement, Table, presets};
use tpsmeter_core::level_summary::per_user_tps_degradation;
use tpsmeter_core::metrics::TokenCountSource;
use tpsmeter_core::report::{ErrorClass, LevelReport, Report};
use tpsmeter_core::stats::Summary;

/// The whole end-of-run text.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let c = &report.config;
    let _ = writeln!(
        out,
        "\n{} {} · model {} · max {} tokens{}",
        c.api,
        c.url,
        c.model,
        c.max_tokens.map_or_else(|| "?".into(), |n| n.to_string()),
        match (c.requests, c.duration_s) {
            (Some(n), _) => format!(" · {n} requests/level"),
            (None, Some(s)) => format!(" · {s} s/level"),
            _ => String::new(),
        }
    );
    if let Some(r) = c.ramp_up_s {
        let _ = writeln!(out, "Streams of each level opened over {r} s (--ramp-up).");
    }
    out.push_str(&levels_table(report).to_string());
    out.push('\n');
    crate::output::wait_parts::lines(report, &mut out);
    find_max_line(report, &mut out);
    degradation_line(report, &mut out);
    error_lines(report, &mut out);
    token_line(report, &mut out);
    let _ = writeln!(
        out,
        "TTFT: send → first answer chunk. ITL: gaps between output chunks (all requests \
         pooled). TPOT: (e2e − first token) / (tokens − 1). TPS/user: tokens / e2e per \
         request. TPS total: output tokens / level duration. Percentiles: linear (numpy)."
    );
    out
}

fn levels_table(report: &Report) -> Table {
    let slo = report.config.slo.is_some();
    // A search runs its levels out of order (doubling, then bisecting): the curve reads in
    // order of load, each level marked with its judgement.
    let mut levels: Vec<&LevelReport> = report.levels.iter().collect();
    let judged = |l: &LevelReport| {
        report
            .find_max
            .as_ref()
            .and_then(|v| v.steps.iter().find(|s| s.level == l.level))
            .map(|s| s.passed)
    };
    if report.find_max.is_some() {
        levels.sort_by(|a, b| a.level.value().total_cmp(&b.level.value()));
    }
    let mut header = vec![
        "load",
        "ok",
        "err",
        "TTFT ms\np50/p90/p99",
        "ITL ms\np50/p90/p99",
        "TPOT ms\np50/p90/p99",
        "e2e ms\np50/p90/p99",
        "TPS/user\np50",
        "TPS\ntotal",
        "req/s",
    ];
    if slo {
        header.push("goodput\n(met SLO)");
    }
    let mut table = Table::new();
    table
        .load_preset(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header);
    for level in levels {
        let s = &level.summary;
        let load = match judged(level) {
            Some(true) => format!("{} ✓", level.level),
            Some(false) => format!("{} ✗", level.level),
            None => level.level.to_string(),
        };
        let mut row = vec![
            load,
            s.succeeded.to_string(),
            s.failed.to_string(),
            triple(s.ttft_ms.as_ref()),
            triple(s.itl_chunk_ms.as_ref()),
            triple(s.tpot_ms.as_ref()),
            triple(s.e2e_ms.as_ref()),
            s.output_tps.map_or_else(dash, |t| num(t.p50)),
            s.aggregate_output_tps.map_or_else(dash, num),
            s.request_throughput
                .map_or_else(dash, |r| format!("{r:.2}")),
        ];
        if slo {
            row.push(s.goodput.map_or_else(dash, |g| {
                let mut cell = match g.fraction {
                    Some(f) => format!("{}/{} ({:.0}%)", g.met, s.completed, f * 100.0),
                    None => format!("{}/{}", g.met, s.completed),
                };
                if let (Some(r), Some(_)) = (g.requests_per_s, &report.find_max) {
                    let _ = write!(cell, "\n{r:.2}/s");
                }
                cell
            }));
        }
        table.add_row(row);
    }
    for i in 1..table.column_count() {
        if let Some(col) = table.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    table
}

/// `--find-max`: the verdict, and which loads it rests on.
fn find_max_line(report: &Report, out: &mut String) {
    let Some(v) = &report.find_max else {
        return;
    };
    let _ = writeln!(out, "Find max ({}): {}.", v.stop.name(), v.message);
    if let Some(knee) = v.knee {
        let best = v.best_goodput_per_s.unwrap_or(0.0);
        let _ = write!(
            out,
            "Knee: {knee}, the lowest load within the gain threshold of the best goodput \
             ({best:.2} req/s meeting the SLO). "
        );
    }
    let _ = writeln!(out, "✓ met the SLO, ✗ missed it.");
}

fn degradation_line(report: &Report, out: &mut String) {
    if report.levels.len() < 2 {
        return;
    }
    // A search's levels in order of load, as its table shows them.
    let mut levels = report.levels.clone();
    if report.find_max.is_some() {
        levels.sort_by(|a, b| a.level.value().total_cmp(&b.level.value()));
    }
    let rows = per_user_tps_degradation(&levels);
    let Some(base) = levels.first() else {
        return;
    };
    let parts: Vec<String> = rows
        .iter()
        .skip(1)
        .map(|d| match d.degradation_pct {
            // Positive degradation = slower: print it as a negative change.
            Some(p) => format!("{} {:+.1}%", d.level, -p),
            None => format!("{} n/a", d.level),
        })
        .collect();
    let _ = writeln!(
        out,
        "Per-user TPS (p50) vs {}: {}",
        base.level,
        parts.join(", ")
    );
}

fn error_lines(report: &Report, out: &mut String) {
    for level in &report.levels {
        if level.summary.errors.is_empty() {
            continue;
        }
        let mut first_message: BTreeMap<ErrorClass, &str> = BTreeMap::new();
        for r in report
            .requests
            .iter()
            .filter(|r| !r.warmup && r.level == level.level)
        {
            if let Some(e) = &r.error {
                first_message.entry(e.class).or_insert(&e.message);
            }
        }
        let _ = writeln!(out, "Errors at {}:", level.level);
        for (class, n) in &level.summary.errors {
            let example = first_message.get(class).copied().unwrap_or_default();
            let example = crate::bench::http::failure::cap_chars(example, 160);
            let _ = writeln!(out, "  {n} × {class}: {example}");
        }
    }
}

fn token_line(report: &Report, out: &mut String) {
    let ok: Vec<_> = report
        .requests
        .iter()
        .filter(|r| !r.warmup && r.ok())
        .collect();
    if ok.is_empty() {
        return;
    }
    let from_usage = ok
        .iter()
        .filter(|r| r.token_source == TokenCountSource::Usage)
        .count();
    let diffs: Vec<i64> = ok
        .iter()
        .filter_map(|r| r.metrics.usage_chunk_discrepancy)
        .collect();
    let mut line = format!(
        "Output tokens counted from server usage in {from_usage}/{} requests, from chunks in the rest",
        ok.len()
    );
    if !diffs.is_empty() {
        let off = diffs.iter().filter(|&&d| d != 0).count();
        let max = diffs.iter().map(|d| d.abs()).max().unwrap_or(0);
        let _ = write!(
            line,
            "; usage ≠ chunk count in {off} (max difference {max} tokens)"
        );
    }
    let _ = writeln!(out, "{line}.");
}

fn triple(s: Option<&Summary>) -> String {
    s.map_or_else(dash, |s| {
        format!("{} / {} / {}", num(s.p50), num(s.p90), num(s.p99))
    })
}

/// Three significant figures or so, without noise digits.
pub(crate) fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn dash() -> String {
    "–".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_about_three_significant_figures() {
        assert_eq!(num(1234.56), "1235");
        assert_eq!(num(12.345), "12.3");
        assert_eq!(num(0.1234), "0.12");
    }
}
