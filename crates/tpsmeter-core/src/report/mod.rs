//! The versioned report of a benchmark run: configuration (never secrets), environment,
//! per-level summaries and per-request records, as JSON; per-request rows as CSV.
//!
//! Versioning rule: [`SCHEMA_VERSION`] changes whenever a field is removed, renamed, or
//! changes type, unit or meaning. Adding a field (always optional on read, with
//! `#[serde(default)]` when needed) does not change it, and readers ignore fields they do
//! not know. `docs/report-schema.md` documents every field.
//!
//! This module does no I/O: the caller fills [`Environment`] and writes the strings out.

mod browser;
pub mod csv;
mod merge;
mod record;
pub mod schema;
pub mod turns;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::api::Api;
use crate::error::{CoreError, Result};
use crate::find_max::{FindMaxConfig, FindMaxVerdict};
use crate::level_summary::PhaseSummary;
use crate::load::LoadLevel;
use crate::slo::Slo;
use crate::spec::CacheBust;

pub use crate::redact::{RedactedUrl, redact_url};
pub use browser::{BrowserEnvironment, OpaqueTiming, StampContext};
pub use merge::{IDLE_LEVEL_WARNING, MAX_START_SPREAD, merge};
pub use record::{ErrorClass, ErrorRecord, MAX_ERROR_MESSAGE_CHARS, RequestRecord};
pub use schema::SCHEMA_JSON;

/// The schema version this crate writes and reads.
pub const SCHEMA_VERSION: u32 = 2;

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Report {
    pub schema_version: u32,
    pub tool: ToolInfo,
    pub config: RunConfig,
    pub environment: Environment,
    pub levels: Vec<LevelReport>,
    pub requests: Vec<RequestRecord>,
    /// Conditions that limit what the figures mean (the browser's connection limit, a
    /// hidden tab, an interrupted run), each with a stable code.
    #[serde(default)]
    pub warnings: Vec<Warning>,
    /// Wall-clock time of the run's clock origin, ms since the Unix epoch: a timestamp `t`
    /// of this report happened at `clock_origin_unix_ms + t`. One reading per run (the
    /// offsets come from a monotonic clock), so a clock step during the run cannot reorder
    /// its records; machines agree on it as well as their clocks do (NTP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_origin_unix_ms: Option<f64>,
    /// Present when this run is one shard of a run spread over several machines
    /// (`tpsmeter bench --shard I/N`); `report::merge` makes the whole of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
    /// Multi-turn runs: each level's figures per turn (see [`turns::TurnSummary`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<turns::TurnSummary>,
    /// `--find-max`: the highest load that met the SLO, why the search stopped, and each
    /// level's judgement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub find_max: Option<FindMaxVerdict>,
}

/// Which part of a spread run a report holds. Its `config` is the whole run's; its levels
/// and records carry this shard's share of each level.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShardInfo {
    /// From 0 (Kubernetes' `JOB_COMPLETION_INDEX`).
    pub index: u32,
    /// How many shards the run has.
    pub count: u32,
    /// The start time the shards shared (`--start-at`), ms since the Unix epoch; the
    /// shard sent nothing before it.
    pub start_at_unix_ms: Option<f64>,
}

/// Something the reader of a report must know to trust its figures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Warning {
    /// Stable, snake_case: `http1_queueing`, `tab_hidden`, `timing_opaque`,
    /// `timing_unrecorded`, `interrupted`, `warmup_failed`, ...
    pub code: String,
    pub message: String,
}

impl Report {
    /// A report of the current schema version, written by this build of tpsmeter (the CLI
    /// and the browser share the workspace's version).
    pub fn new(
        config: RunConfig,
        environment: Environment,
        levels: Vec<LevelReport>,
        requests: Vec<RequestRecord>,
        warnings: Vec<Warning>,
    ) -> Report {
        let turns = turns::summarise(&requests);
        Report {
            schema_version: SCHEMA_VERSION,
            tool: ToolInfo {
                name: "tpsmeter".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            config,
            environment,
            levels,
            requests,
            warnings,
            clock_origin_unix_ms: None,
            shard: None,
            turns,
            find_max: None,
        }
    }

    /// Pretty-printed JSON.
    pub fn to_json(&self) -> String {
        // Plain data: serialisation cannot fail (non-finite floats become null).
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Parses a report, rejecting other schema versions by name rather than misreading them.
    pub fn from_json(text: &str) -> Result<Report> {
        #[derive(Deserialize)]
        struct VersionOnly {
            schema_version: u64,
        }
        let malformed = |e: serde_json::Error| CoreError::MalformedJson {
            context: "report",
            message: e.to_string(),
            excerpt: text.chars().take(60).collect(),
        };
        let v: VersionOnly = serde_json::from_str(text).map_err(malformed)?;
        if v.schema_version != u64::from(SCHEMA_VERSION) {
            return Err(CoreError::UnsupportedSchemaVersion {
                found: v.schema_version,
                supported: SCHEMA_VERSION,
            });
        }
        serde_json::from_str(text).map_err(malformed)
    }
}

/// The program that wrote the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
}

/// The container of a dataset file: JSON Lines or one JSON array (how its bytes say which
/// is `DatasetFormat::detect`, in `dataset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DatasetFormat {
    /// JSON Lines: one entry per line.
    Jsonl,
    /// One JSON array of entries (ShareGPT's file).
    Json,
}

/// Where the prompt came from. The prompt text itself is not stored: it can be large and
/// private; its length is enough to reproduce the load shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PromptSource {
    /// `--prompt TEXT`.
    Text { chars: u64 },
    /// `--prompt-file F`.
    File { path: String, chars: u64 },
    /// `--input-tokens N[:SD]`: a generated prompt of N tokens (drawn around N with standard
    /// deviation SD when given): exactly, as `tokenizer` counts them, when one was given;
    /// otherwise an estimate (one token per common English word, the mark not counted).
    Synthetic {
        input_tokens: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input_tokens_stdev: Option<u32>,
        /// The tokenizer that counted, as its source was named; absent: estimated.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokenizer: Option<String>,
    },
    /// `--dataset F` (`bench({ dataset })`): each request's messages drawn from a file of
    /// prompts or conversations (`docs/datasets.md`).
    Dataset {
        /// The file as given (a path, the picked file's name) or its URL without credentials.
        name: String,
        /// SHA-256 of the file's bytes, lower-case hex: which data the run sent.
        sha256: String,
        /// The file's size.
        bytes: u64,
        /// `jsonl` (one entry per line) or `json` (one array, ShareGPT's file).
        format: DatasetFormat,
        /// Entries the requests were drawn from.
        entries: u64,
        /// Entries left out for want of a prompt (ShareGPT conversations without a human
        /// turn); never a malformed one, which fails the run instead.
        #[serde(default)]
        skipped: u64,
        /// The tokenizer that counted the reference answers' lengths, as its source was
        /// named; absent: estimated (⌈characters / 4⌉).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokenizer: Option<String>,
    },
}

/// The run's settings. Holds no credential: the API key is never part of it, and the URL
/// can only be a [`RedactedUrl`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunConfig {
    pub api: Api,
    pub url: RedactedUrl,
    pub model: String,
    pub levels: Vec<LoadLevel>,
    /// Measured requests per level (`--requests`), when the run is count-limited.
    pub requests: Option<u64>,
    /// Seconds per level (`--duration`), when the run is time-limited.
    pub duration_s: Option<f64>,
    /// The most seconds a request-count level could take (`--max-duration`), when capped; a
    /// level the cap cut short has a `max_duration` warning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration_s: Option<f64>,
    /// Open-loop arrival rate (`--rate`), requests per second.
    pub rate_per_s: Option<f64>,
    /// The run's seed: of the arrival schedule when open-loop (0 unless given), and of the
    /// prompts' run id when given.
    #[serde(default)]
    pub seed: Option<u64>,
    pub max_tokens: Option<u32>,
    pub prompt: PromptSource,
    /// Whether each prompt started with a mark of its own (`prefix`) or all were the same
    /// (`off`); absent in reports from before cache busting, whose prompts were all the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_bust: Option<CacheBust>,
    /// Tokens every request shared before its mark (`--shared-prefix`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_prefix_tokens: Option<u32>,
    /// The run id the marks carry (`[run <id> #<index>]`), to find the requests in a
    /// server's logs; absent when prompts were not marked, or in a merge of shards (each
    /// has its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_run_id: Option<String>,
    /// Warm-up requests per level, excluded from summaries.
    pub warmup: u32,
    /// Per-request timeout, seconds.
    pub timeout_s: Option<f64>,
    pub slo: Option<Slo>,
    /// The named workload the run used (`--workload`), which set its input and output sizes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<crate::workload::Workload>,
    /// Multi-turn runs (`--turns`): turns per conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<u32>,
    /// Seconds over which each closed-loop phase opened its streams (`--ramp-up`), when
    /// they did not all start at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp_up_s: Option<f64>,
    /// `--find-max`: the search that chose the levels (then `levels` are the levels it ran,
    /// in run order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub find_max: Option<FindMaxConfig>,
}

/// Where the run happened. Filled by the caller (this crate does no I/O).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Environment {
    /// `std::env::consts::OS` natively, `"browser"` in the browser.
    pub os: String,
    pub arch: String,
    pub cpu_count: Option<u32>,
    pub tool_version: String,
    /// Free-form facts (user agent, visibility state, HTTP version, hostname, ...).
    #[serde(default)]
    pub notes: BTreeMap<String, String>,
    /// What the browser could measure, for a run in one (none natively).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser: Option<BrowserEnvironment>,
}

/// The summary of one load level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LevelReport {
    pub level: LoadLevel,
    pub summary: PhaseSummary,
}
