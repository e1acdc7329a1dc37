//! Merging the reports of a run's shards (`tpsmeter bench --shard I/N` on N machines) into
//! the report of the whole run.
//!
//! Summaries are never combined: the p99 of a union is no function of the parts' p99s, and
//! a mean of shard means weighs a shard that finished few requests like one that finished
//! many. The merge keeps the shards' raw records only, puts them on one clock, and
//! summarises every level from them with the code a single machine uses
//! ([`PhaseSummary::from_records`]).
//!
//! - **Which reports belong together**: each is a shard report with a clock origin and a
//!   level index on every record; all have the same configuration (API, redacted URL,
//!   model, levels, requests, duration, rate, seed, max tokens, prompt, warm-up, timeout,
//!   SLOs), the same shard count and start time, and every index appears exactly once.
//! - **One clock**: a shard's timestamps count from its own origin; the merged report's
//!   origin is the earliest shard's, and each shard's timestamps move by the difference of
//!   the origins (wall-clock readings, so as good as the machines' clock sync).
//! - **A level's window** runs from the earliest start to the latest end of the measured
//!   phases of the shards that sent requests at that level; a request counts when it ended
//!   inside it, as on one machine (see `phase`).
//! - **Records** get the whole run's level and new ids in start order across shards (ids
//!   were per shard); they are listed in completion order, as a run lists them.
//! - **Warnings** of the shards are kept, each prefixed with its shard, but for
//!   `shard_idle_level` (the whole ran that level). A level whose shards started more than
//!   [`MAX_START_SPREAD`] of its window apart gets `shards_not_aligned`: until the last
//!   one started, the load was below the whole's.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Environment, LevelReport, Report, RequestRecord, ShardInfo, Warning};
use crate::error::{CoreError, Result};
use crate::level_summary::PhaseSummary;
use crate::shard::MAX_SHARDS;

/// Largest spread of the shards' starts of a level, as a fraction of the level's merged
/// window, before the merged report warns. Shards started on a shared time begin the first
/// level within milliseconds (plus their clocks' disagreement); later levels drift apart,
/// as each shard moves on when its own share is done (there is no barrier between
/// machines). Only starts count: the ends differ on one machine too (the last requests of
/// a level finish one by one).
pub const MAX_START_SPREAD: f64 = 0.1;

/// The warning code of a shard report for a level where the shard's share was empty.
pub const IDLE_LEVEL_WARNING: &str = "shard_idle_level";

/// One shard report, checked.
struct Part<'a> {
    /// 1-based position among the reports given, for messages.
    number: usize,
    report: &'a Report,
    shard: ShardInfo,
    origin_unix_ms: f64,
}

/// The report of the whole run from the reports of all its shards, in any order (see the
/// module docs). Errors name the report (1-based, in the order given) and what is wrong.
pub fn merge(reports: &[Report]) -> Result<Report> {
    let mut parts = reports
        .iter()
        .enumerate()
        .map(|(i, r)| check(i + 1, r))
        .collect::<Result<Vec<Part<'_>>>>()?;
    let Some(first) = parts.first() else {
        return Err(CoreError::InvalidSpec {
            what: "merge",
            input: "no reports".into(),
            reason: "give the report of every shard".into(),
        });
    };
    for part in &parts[1..] {
        same_run(first, part)?;
    }
    let mut config = first.report.config.clone();
    // Each shard marks its prompts with its own run id: the merge has no single one.
    if parts
        .iter()
        .any(|p| p.report.config.prompt_run_id != config.prompt_run_id)
    {
        config.prompt_run_id = None;
    }
    parts.sort_by_key(|p| p.shard.index);
    every_shard_once(&parts)?;

    let origin = parts
        .iter()
        .map(|p| p.origin_unix_ms)
        .fold(f64::INFINITY, f64::min);
    let mut records: Vec<(u32, RequestRecord)> = Vec::new();
    // Per level, each shard's measured window on the merged clock, when it sent requests.
    let mut windows: Vec<Vec<(f64, f64)>> = vec![Vec::new(); config.levels.len()];
    let mut all_windows: Vec<(f64, f64)> = Vec::new();
    for part in &parts {
        let offset = part.origin_unix_ms - origin;
        for (j, level) in part.report.levels.iter().enumerate() {
            let window = (
                level.summary.start_ms + offset,
                level.summary.end_ms + offset,
            );
            all_windows.push(window);
            let ran = part
                .report
                .requests
                .iter()
                .any(|r| !r.warmup && r.level_index == u32::try_from(j).ok());
            if ran {
                windows[j].push(window);
            }
        }
        for r in &part.report.requests {
            let mut r = r.clone();
            shift(&mut r, offset);
            // `check` made sure every index is in range.
            if let Some(&level) = r
                .level_index
                .and_then(|j| config.levels.get(usize::try_from(j).ok()?))
            {
                r.level = level;
            }
            records.push((part.shard.index, r));
        }
    }
    // Ids in start order across shards, as one machine numbers its requests.
    records.sort_by(|(sa, a), (sb, b)| {
        a.start_ms
            .total_cmp(&b.start_ms)
            .then(sa.cmp(sb))
            .then(a.id.cmp(&b.id))
    });
    let mut records: Vec<RequestRecord> = records.into_iter().map(|(_, r)| r).collect();
    for (id, r) in records.iter_mut().enumerate() {
        r.id = id as u64;
    }
    records.sort_by(|a, b| a.end_ms.total_cmp(&b.end_ms).then(a.id.cmp(&b.id)));

    let mut warnings = shard_warnings(&parts);
    let mut levels = Vec::with_capacity(config.levels.len());
    for (j, &level) in config.levels.iter().enumerate() {
        let ran = &windows[j];
        // No shard sent a request at this level (an interrupted run): its window is where
        // the shards were at the time.
        let span = if ran.is_empty() { &all_windows } else { ran };
        let start_ms = span.iter().map(|w| w.0).fold(f64::INFINITY, f64::min);
        let end_ms = span.iter().map(|w| w.1).fold(f64::NEG_INFINITY, f64::max);
        let (start_ms, end_ms) = if start_ms <= end_ms {
            (start_ms, end_ms)
        } else {
            (0.0, 0.0)
        };
        let spread = ran.iter().map(|w| w.0).fold(f64::NEG_INFINITY, f64::max) - start_ms;
        let length = end_ms - start_ms;
        if ran.len() > 1 && length > 0.0 && spread > MAX_START_SPREAD * length {
            warnings.push(Warning {
                code: "shards_not_aligned".into(),
                message: format!(
                    "at {level} the shards started up to {spread:.0} ms apart, {:.0}% of the \
                     level's {length:.0} ms: until the last one started the load was below \
                     {level} (levels after the first are not synchronised across machines; \
                     check their clocks)",
                    spread / length * 100.0
                ),
            });
        }
        let index = u32::try_from(j).ok();
        let level_records: Vec<RequestRecord> = records
            .iter()
            .filter(|r| r.level_index == index)
            .cloned()
            .collect();
        levels.push(LevelReport {
            level,
            summary: PhaseSummary::from_records(
                &level_records,
                start_ms,
                end_ms,
                config.slo.as_ref(),
            ),
        });
    }
    let environment = environment(&parts);
    let mut merged = Report::new(config, environment, levels, records, warnings);
    merged.clock_origin_unix_ms = Some(origin);
    Ok(merged)
}

/// Checks what one report must hold on its own to be merged.
fn check(number: usize, report: &Report) -> Result<Part<'_>> {
    let bad = |reason: String| CoreError::NotMergeable {
        report: number,
        reason,
    };
    let shard = report.shard.ok_or_else(|| {
        bad(
            "it is not a shard report (no `shard` field): merge takes the reports of \
             `tpsmeter bench --shard I/N`"
                .into(),
        )
    })?;
    if shard.count == 0 || shard.count > MAX_SHARDS || shard.index >= shard.count {
        return Err(bad(format!(
            "its shard {}/{} is not a shard of a run",
            shard.index, shard.count
        )));
    }
    let origin_unix_ms = report
        .clock_origin_unix_ms
        .filter(|t| t.is_finite())
        .ok_or_else(|| bad("it has no `clock_origin_unix_ms` to place its times".into()))?;
    let levels = report.config.levels.len();
    if report.levels.len() != levels {
        return Err(bad(format!(
            "it has {} of the run's {levels} levels (was it interrupted?)",
            report.levels.len()
        )));
    }
    if let Some(r) = report.requests.iter().find(|r| {
        r.level_index
            .and_then(|j| usize::try_from(j).ok())
            .is_none_or(|j| j >= levels)
    }) {
        return Err(bad(format!(
            "record {} has no level index within the run's {levels} levels",
            r.id
        )));
    }
    Ok(Part {
        number,
        report,
        shard,
        origin_unix_ms,
    })
}

/// Checks that `part` is a shard of the same run as `first`.
fn same_run(first: &Part<'_>, part: &Part<'_>) -> Result<()> {
    let (a, b) = (&first.report.config, &part.report.config);
    same(part, "API", &a.api, &b.api)?;
    same(part, "URL", &a.url, &b.url)?;
    same(part, "model", &a.model, &b.model)?;
    same(part, "levels", &a.levels, &b.levels)?;
    same(part, "requests per level", &a.requests, &b.requests)?;
    same(part, "duration per level", &a.duration_s, &b.duration_s)?;
    same(part, "rate", &a.rate_per_s, &b.rate_per_s)?;
    same(part, "seed", &a.seed, &b.seed)?;
    same(part, "max tokens", &a.max_tokens, &b.max_tokens)?;
    same(part, "prompt", &a.prompt, &b.prompt)?;
    same(part, "cache busting", &a.cache_bust, &b.cache_bust)?;
    same(
        part,
        "shared prefix",
        &a.shared_prefix_tokens,
        &b.shared_prefix_tokens,
    )?;
    same(part, "warm-up", &a.warmup, &b.warmup)?;
    same(part, "timeout", &a.timeout_s, &b.timeout_s)?;
    same(part, "SLOs", &a.slo, &b.slo)?;
    same(part, "ramp-up", &a.ramp_up_s, &b.ramp_up_s)?;
    same(part, "shard count", &first.shard.count, &part.shard.count)?;
    same(
        part,
        "start time (unix ms)",
        &first.shard.start_at_unix_ms,
        &part.shard.start_at_unix_ms,
    )
}

fn same<T: PartialEq + Serialize>(part: &Part<'_>, what: &'static str, a: &T, b: &T) -> Result<()> {
    if a == b {
        return Ok(());
    }
    let show = |v: &T| serde_json::to_string(v).unwrap_or_default();
    Err(CoreError::ShardMismatch {
        report: part.number,
        what,
        expected: show(a),
        found: show(b),
    })
}

/// Checks that the parts, sorted by index, hold each shard exactly once.
fn every_shard_once(parts: &[Part<'_>]) -> Result<()> {
    for pair in parts.windows(2) {
        if pair[0].shard.index == pair[1].shard.index {
            let (a, b) = (pair[0].number, pair[1].number);
            return Err(CoreError::DuplicateShard {
                index: pair[0].shard.index,
                count: pair[0].shard.count,
                first: a.min(b),
                second: a.max(b),
            });
        }
    }
    let count = parts.first().map_or(0, |p| p.shard.count);
    let mut present = parts.iter().map(|p| p.shard.index).peekable();
    let mut missing = Vec::new();
    for i in 0..count {
        if present.next_if_eq(&i).is_none() {
            missing.push(i);
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(CoreError::MissingShards { missing, count })
    }
}

/// Moves every timestamp of `r` by `offset_ms` (durations are left as they are).
fn shift(r: &mut RequestRecord, offset_ms: f64) {
    r.start_ms += offset_ms;
    r.end_ms += offset_ms;
    for t in [
        &mut r.first_byte_ms,
        &mut r.first_token_ms,
        &mut r.scheduled_ms,
    ]
    .into_iter()
    .flatten()
    {
        *t += offset_ms;
    }
    for t in r.chunk_times_ms.iter_mut().flatten() {
        *t += offset_ms;
    }
}

/// The shards' warnings, each naming its shard, but for idle levels.
fn shard_warnings(parts: &[Part<'_>]) -> Vec<Warning> {
    let mut out = Vec::new();
    for part in parts {
        for w in part
            .report
            .warnings
            .iter()
            .filter(|w| w.code != IDLE_LEVEL_WARNING)
        {
            out.push(Warning {
                code: w.code.clone(),
                message: format!(
                    "shard {}/{}: {}",
                    part.shard.index, part.shard.count, w.message
                ),
            });
        }
    }
    let versions = distinct(parts, |r| r.tool.version.as_str());
    if versions.contains(',') {
        out.push(Warning {
            code: "mixed_tool_versions".into(),
            message: format!(
                "the shards ran different tpsmeter versions ({versions}): their metrics may \
                 differ in definition"
            ),
        });
    }
    out
}

/// Where the whole ran: each fact the shards agree on as is, differing ones joined with
/// commas; CPUs added up (the fleet's load generators).
fn environment(parts: &[Part<'_>]) -> Environment {
    let cpu_count = parts.iter().try_fold(0u32, |sum, p| {
        sum.checked_add(p.report.environment.cpu_count?)
    });
    let mut keys: Vec<&String> = parts
        .iter()
        .flat_map(|p| p.report.environment.notes.keys())
        .collect();
    keys.sort();
    keys.dedup();
    let mut notes: BTreeMap<String, String> = keys
        .into_iter()
        .map(|k| {
            let v = distinct(parts, |r| {
                r.environment.notes.get(k).map_or("", String::as_str)
            });
            (k.clone(), v)
        })
        .collect();
    let count = parts.first().map_or(0, |p| p.shard.count);
    notes.insert("shards".into(), count.to_string());
    notes.insert(
        "clock".into(),
        "each shard's monotonic clock, placed on the wall clock by its clock origin: \
         times across machines agree as well as their clocks do"
            .into(),
    );
    if let Some(t) = parts.first().and_then(|p| p.shard.start_at_unix_ms) {
        notes.insert("start_at_unix_ms".into(), t.to_string());
    }
    Environment {
        os: distinct(parts, |r| r.environment.os.as_str()),
        arch: distinct(parts, |r| r.environment.arch.as_str()),
        cpu_count,
        tool_version: distinct(parts, |r| r.environment.tool_version.as_str()),
        notes,
        // Shards run natively (the CLI's --shard): no browser to describe.
        browser: None,
    }
}

/// The distinct non-empty values of `f` over the parts, in shard order, comma-joined.
fn distinct(parts: &[Part<'_>], f: impl Fn(&Report) -> &str) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for p in parts {
        let v = f(p.report);
        if !v.is_empty() && !seen.contains(&v) {
            seen.push(v);
        }
    }
    seen.join(",")
}
