//! Merging shard reports: the records of one run, split over three shard reports that each
//! count time from their own clock origin, merge back into exactly the records and the
//! summaries of the whole; reports that are not the shards of one run are refused by name.
#![allow(clippy::unwrap_used)]

// In the browser (`cargo xtask browser-test`) the same `#[test]` functions run in headless
// Chromium through wasm-bindgen-test.
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

use std::collections::BTreeMap;

use tpsmeter_core::event::StreamEvent;
use tpsmeter_core::level_summary::PhaseSummary;
use tpsmeter_core::report::{
    Environment, ErrorClass, ErrorRecord, IDLE_LEVEL_WARNING, LevelReport, PromptSource,
    RedactedUrl, RunConfig, ShardInfo, Warning, merge,
};
use tpsmeter_core::{Api, CacheBust, CoreError, LoadLevel, Report, RequestRecord, Slo, Timeline};

/// The run's levels: 6 streams (2 per shard), then 2 streams (shard 2 has none).
const LEVELS: [LoadLevel; 2] = [LoadLevel::Concurrency(6), LoadLevel::Concurrency(2)];
/// Each shard's share of each level.
const SHARES: [[u32; 2]; 3] = [[2, 1], [2, 1], [2, 0]];
/// Wall-clock origins of the shards (ms since the epoch; whole numbers keep the shifts
/// exact). The earliest is the merged report's origin and the whole run's clock here.
const ORIGINS: [f64; 3] = [
    1_767_225_600_250.0,
    1_767_225_600_000.0,
    1_767_225_599_990.0,
];
const START_AT: f64 = 1_767_225_601_000.0;

fn whole_origin() -> f64 {
    ORIGINS.iter().copied().fold(f64::INFINITY, f64::min)
}

/// One request on the whole run's clock: `tokens` one-token reads from `start + ttft`,
/// `itl` apart; or a failure (HTTP 503) when `tokens` is 0.
fn record(id: u64, level: usize, start: f64, ttft: f64, itl: f64, tokens: u32) -> RequestRecord {
    let mut t = Timeline::new(start);
    let mut at = start + ttft;
    for _ in 0..tokens {
        t.on_bytes(at, 16);
        t.on_chunk(at, &[StreamEvent::ContentDelta { text: "x".into() }]);
        at += itl;
    }
    t.finish(at);
    let error = (tokens == 0).then(|| ErrorRecord::new(ErrorClass::Http5xx, "503"));
    let mut r = RequestRecord::from_timeline(
        id,
        LEVELS[level],
        false,
        &t,
        Some(if tokens == 0 { 503 } else { 200 }),
        error,
        true,
    );
    r.level_index = Some(level as u32);
    r
}

/// The whole run's records, ids in start order, and which shard ran each.
fn whole() -> Vec<(usize, RequestRecord)> {
    let mut out = Vec::new();
    let mut id = 0;
    // Level 0: 12 requests, 4 per shard, latencies all different.
    for k in 0..12u32 {
        let start = 1000.0 + f64::from(k) * 3.0;
        let tokens = if k == 5 { 0 } else { 4 + k % 5 };
        let ttft = 20.0 + f64::from((k * 37) % 23);
        let itl = 3.0 + f64::from(k % 4);
        out.push(((k % 3) as usize, record(id, 0, start, ttft, itl, tokens)));
        id += 1;
    }
    // Level 1: 4 requests on shards 0 and 1 only.
    for k in 0..4u32 {
        let start = 2000.0 + f64::from(k) * 3.0;
        out.push((
            (k % 2) as usize,
            record(id, 1, start, 15.0 + f64::from(k), 2.5, 6),
        ));
        id += 1;
    }
    out
}

fn config() -> RunConfig {
    RunConfig {
        api: Api::OpenaiChat,
        url: RedactedUrl::new("http://10.0.0.7:8000/v1?api_key=SECRET"),
        model: "m".into(),
        levels: LEVELS.to_vec(),
        requests: Some(12),
        duration_s: None,
        max_duration_s: None,
        rate_per_s: None,
        seed: None,
        max_tokens: Some(16),
        prompt: PromptSource::Synthetic {
            input_tokens: 64,
            input_tokens_stdev: None,
            tokenizer: None,
        },
        cache_bust: Some(CacheBust::Prefix),
        shared_prefix_tokens: None,
        prompt_run_id: Some("3f9a1c2b".into()),
        warmup: 0,
        timeout_s: Some(60.0),
        slo: Some(Slo::parse("ttft=35ms").unwrap()),
        workload: None,
        turns: None,
        ramp_up_s: None,
        find_max: None,
    }
}

/// The window of some records: earliest start to latest end.
fn window<'a>(records: impl Iterator<Item = &'a RequestRecord> + Clone) -> (f64, f64) {
    let start = records
        .clone()
        .map(|r| r.start_ms)
        .fold(f64::INFINITY, f64::min);
    let end = records.map(|r| r.end_ms).fold(f64::NEG_INFINITY, f64::max);
    (start, end)
}

/// Shard `index`'s report as `tpsmeter bench --shard index/3` would write it: its records
/// on its own clock with its share as their level, a summary per level from them alone.
fn shard_report(index: usize) -> Report {
    let shift = whole_origin() - ORIGINS[index];
    let mut records: Vec<RequestRecord> = whole()
        .into_iter()
        .filter(|(s, _)| *s == index)
        .map(|(_, mut r)| {
            r.start_ms += shift;
            r.end_ms += shift;
            r.first_byte_ms = r.first_byte_ms.map(|t| t + shift);
            r.first_token_ms = r.first_token_ms.map(|t| t + shift);
            for t in r.chunk_times_ms.iter_mut().flatten() {
                *t += shift;
            }
            let j = r.level_index.unwrap() as usize;
            r.level = LoadLevel::Concurrency(SHARES[index][j]);
            r
        })
        .collect();
    // Per-shard ids, as each machine numbers its own requests.
    for (id, r) in records.iter_mut().enumerate() {
        r.id = id as u64;
    }
    let slo = config().slo;
    let mut warnings = Vec::new();
    let levels = (0..LEVELS.len())
        .map(|j| {
            let mine: Vec<RequestRecord> = records
                .iter()
                .filter(|r| r.level_index == Some(j as u32))
                .cloned()
                .collect();
            let (start, end) = if mine.is_empty() {
                warnings.push(Warning {
                    code: IDLE_LEVEL_WARNING.into(),
                    message: format!("no share of {}", LEVELS[j]),
                });
                (3000.0, 3000.0)
            } else {
                window(mine.iter())
            };
            LevelReport {
                level: LoadLevel::Concurrency(SHARES[index][j]),
                summary: PhaseSummary::from_records(&mine, start, end, slo.as_ref()),
            }
        })
        .collect();
    let environment = Environment {
        os: "linux".into(),
        arch: "x86_64".into(),
        cpu_count: Some(4),
        tool_version: "0.1.0".into(),
        notes: BTreeMap::from([("http_versions".into(), "HTTP/1.1".into())]),
        browser: None,
    };
    let mut report = Report::new(config(), environment, levels, records, warnings);
    report.clock_origin_unix_ms = Some(ORIGINS[index]);
    report.shard = Some(ShardInfo {
        index: index as u32,
        count: 3,
        start_at_unix_ms: Some(START_AT),
    });
    report
}

#[test]
fn three_shards_merge_into_the_records_and_summaries_of_the_whole() {
    let shards: Vec<Report> = (0..3).map(shard_report).collect();
    let merged = merge(&shards).unwrap();

    // The whole run, summarised from all its records at once.
    let whole: Vec<RequestRecord> = whole().into_iter().map(|(_, r)| r).collect();
    for (j, level) in merged.levels.iter().enumerate() {
        let of_level: Vec<RequestRecord> = whole
            .iter()
            .filter(|r| r.level_index == Some(j as u32))
            .cloned()
            .collect();
        let (start, end) = window(of_level.iter());
        let expected = PhaseSummary::from_records(&of_level, start, end, config().slo.as_ref());
        assert_eq!(level.level, LEVELS[j], "the whole's load, not a share");
        assert_eq!(level.summary, expected, "level {j}");
    }
    assert_eq!(merged.levels[0].summary.completed, 12);
    assert_eq!(merged.levels[0].summary.failed, 1);
    assert_eq!(merged.levels[1].summary.completed, 4);

    // Every record, on the merged clock, renumbered in start order: the whole's records.
    let mut records = merged.requests.clone();
    records.sort_by_key(|r| r.id);
    assert_eq!(records, whole);
    assert_eq!(merged.clock_origin_unix_ms, Some(whole_origin()));
    assert!(
        merged
            .requests
            .windows(2)
            .all(|w| w[0].end_ms <= w[1].end_ms),
        "listed in completion order"
    );

    // The merged report is the whole, not a shard, and shard 2's idle level is no warning.
    assert_eq!(merged.shard, None);
    assert!(merged.warnings.is_empty(), "{:?}", merged.warnings);
    assert_eq!(merged.environment.cpu_count, Some(12));
    assert_eq!(merged.environment.notes["shards"], "3");
    assert_eq!(merged.environment.notes["http_versions"], "HTTP/1.1");
    assert!(!merged.to_json().contains("SECRET"));

    // The order the reports come in does not matter.
    let reversed: Vec<Report> = shards.iter().rev().cloned().collect();
    assert_eq!(merge(&reversed).unwrap(), merged);
}

#[test]
fn shards_that_started_apart_are_flagged() {
    // A machine whose clock runs 100 ms ahead: its requests land 100 ms late on the merged
    // clock, and the level's load was short of the whole's until then.
    let mut shards: Vec<Report> = (0..3).map(shard_report).collect();
    let late = shards[2].clock_origin_unix_ms.unwrap() + 100.0;
    shards[2].clock_origin_unix_ms = Some(late);
    let merged = merge(&shards).unwrap();
    let codes: Vec<&str> = merged.warnings.iter().map(|w| w.code.as_str()).collect();
    assert_eq!(codes, ["shards_not_aligned"], "{:?}", merged.warnings);
    assert!(merged.warnings[0].message.contains("c=6"));
}

#[test]
fn percentiles_of_the_union_are_not_averages_of_the_shards() {
    // Guards the reason merge exists: averaging the shards' p99 TTFT misstates the whole's.
    let shards: Vec<Report> = (0..3).map(shard_report).collect();
    let merged = merge(&shards).unwrap();
    let p99 = |r: &Report| r.levels[0].summary.ttft_ms.unwrap().p99;
    let averaged = shards.iter().map(p99).sum::<f64>() / 3.0;
    assert_ne!(p99(&merged), averaged);
}

#[test]
fn reports_of_other_runs_or_repeated_shards_are_refused_by_name() {
    let s: Vec<Report> = (0..3).map(shard_report).collect();

    let e = merge(&[s[0].clone(), s[1].clone(), s[1].clone()]).unwrap_err();
    assert_eq!(
        e,
        CoreError::DuplicateShard {
            index: 1,
            count: 3,
            first: 2,
            second: 3
        }
    );
    assert!(e.to_string().contains("shard 1/3 is given twice"), "{e}");

    let e = merge(&[s[2].clone(), s[0].clone()]).unwrap_err();
    assert_eq!(
        e,
        CoreError::MissingShards {
            missing: vec![1],
            count: 3
        }
    );

    let mut other = s[1].clone();
    other.config.model = "other-model".into();
    let e = merge(&[s[0].clone(), other, s[2].clone()]).unwrap_err();
    assert!(
        matches!(
            &e,
            CoreError::ShardMismatch {
                report: 2,
                what: "model",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("\"other-model\""), "{e}");

    let mut other = s[2].clone();
    other.shard = Some(ShardInfo {
        count: 4,
        ..other.shard.unwrap()
    });
    let e = merge(&[s[0].clone(), s[1].clone(), other]).unwrap_err();
    assert!(
        matches!(
            &e,
            CoreError::ShardMismatch {
                report: 3,
                what: "shard count",
                ..
            }
        ),
        "{e:?}"
    );

    let mut unsharded = s[0].clone();
    unsharded.shard = None;
    let e = merge(&[unsharded, s[1].clone(), s[2].clone()]).unwrap_err();
    assert!(
        matches!(e, CoreError::NotMergeable { report: 1, .. }),
        "{e:?}"
    );

    let mut no_clock = s[1].clone();
    no_clock.clock_origin_unix_ms = None;
    let e = merge(&[s[0].clone(), no_clock, s[2].clone()]).unwrap_err();
    assert!(e.to_string().contains("clock_origin_unix_ms"), "{e}");

    assert!(merge(&[]).is_err());
}
