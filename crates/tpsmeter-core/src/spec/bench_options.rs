//! [`BenchOptions`]: the settings of one benchmark run as data, with their defaults. What
//! they may be is checked in [`super::validate`] and [`super::rules`]; what runs them is
//! built above the floor (`options`).
//!
//! The API key is not part of it: callers keep it apart (in memory only) and hand it to
//! `BenchOptions::request_spec` as a `request::Secret`, so options can be logged,
//! compared and stored without a key in them.

use serde::{Deserialize, Serialize};

use super::CacheBust;
use super::find_max::FindMaxOptions;
use super::schema::{FindMaxSetting, Levels, Rates};
use crate::api::Api;
use crate::workload::Workload;

/// Longest accepted duration, timeout or idle timeout: a day (and `Duration::from_secs_f64`
/// panics on huge values natively).
pub const MAX_SECONDS: f64 = 86_400.0;

/// Most turns a conversation may have: each one resends all before it.
pub const MAX_TURNS: u32 = 64;

/// The settings of a run: the CLI's `bench` flags, and `bench()`'s options in camelCase.
/// Defaults are the CLI's.
///
/// The field docs are the options' user documentation: they are written into the JSON
/// Schema (`spec.schema.json`, see [`super::schema`]) and from there into the package's
/// generated `RunSettings` type, so they name options the way `bench()` does. Notes for this
/// crate's readers are plain comments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct BenchOptions {
    /// The streaming API's wire format (`local`: the engine of `tpsmeter/engine`).
    pub api: Api,
    /// Base URL or full endpoint URL of the API.
    // See `request::url` for how the API's path is appended.
    pub url: String,
    /// The model the requests name.
    pub model: String,
    /// Closed-loop levels: requests kept in flight (one number is one level). Not with
    /// `rate`.
    #[schemars(with = "Levels")]
    pub concurrency: Vec<u32>,
    /// Open-loop levels: Poisson arrivals per second (one number is one level). Not with
    /// `concurrency`.
    #[schemars(with = "Rates")]
    pub rate: Vec<f64>,
    /// Cap on requests in flight in open-loop levels (arrivals beyond it wait; default 1000).
    pub max_concurrency: u32,
    /// Measured requests per level (default: 4 × the level's concurrency or rate, at least
    /// 8).
    pub requests: Option<u64>,
    /// Seconds per level. Not with `requests`.
    pub duration_s: Option<f64>,
    /// A time budget for each level run by request count, seconds: after it the level starts
    /// no more requests (those in flight finish), and the report warns (`max_duration`) that
    /// it was cut. Not with `durationS`.
    pub max_duration_s: Option<f64>,
    /// Seed of the open-loop arrival schedule and of the prompts' run id (same seed, same
    /// request bodies as the CLI's).
    // Arrivals take 0 when none is given; the run id is random then (see `prompts`).
    pub seed: Option<u64>,
    /// The output cap each request asks for (default 256).
    pub max_tokens: u32,
    /// The largest output cap any request may ask for: a `dataset` entry's own `max_tokens`
    /// (or its answer's length) above it is lowered to it, and a `maxTokens` above it is
    /// refused. The benchmark page passes its form's limit, so a dataset a link names cannot
    /// ask for more than the form allows.
    pub max_tokens_limit: Option<u32>,
    /// The user message every request sends (with its mark; see `cacheBust`).
    pub prompt: Option<String>,
    /// A generated prompt of this many tokens (instead of `prompt`): exactly, mark included,
    /// with `tokenizer`; about (one token per common English word) without.
    // See `crate::prompt::synthesize` and `synth`.
    pub input_tokens: Option<u32>,
    /// Draw each request's input length around `inputTokens` with this standard deviation.
    pub input_tokens_stdev: Option<u32>,
    /// The model's tokenizer, to count input tokens exactly and answers without usage, as
    /// its source is named (a file, a URL of a `tokenizer.json` or GGUF, a Hugging Face model
    /// id `ORG/NAME`); recorded in the report.
    // The caller loads it and hands the core a `tokens::TokenCounter`.
    pub tokenizer: Option<String>,
    /// `prefix` (default): each request's prompt starts with a mark of its own
    /// (`[run <id> #<n>] `), so that no server answers it from a prompt cache; `off`: every
    /// request sends the same prompt (measures the cached case).
    pub cache_bust: CacheBust,
    /// Every request shares this many tokens of text before its mark (measures prefix
    /// caching).
    pub shared_prefix: Option<u32>,
    /// A system message sent before the prompt.
    pub system: Option<String>,
    /// The sampling temperature asked for (the server's default when left out).
    pub temperature: Option<f32>,
    /// Ask the server to ignore end-of-sequence, so that every answer runs to `maxTokens`
    /// (llama.cpp, vLLM).
    pub ignore_eos: bool,
    /// Warm-up requests per level, recorded but left out of every summary.
    pub warmup: u32,
    /// No byte of the response within this many seconds: the request fails as
    /// `timeout_first_byte` (default 60).
    pub timeout_s: f64,
    /// The stream silent for this many seconds once it started: the request fails as
    /// `stall` (default 30).
    pub idle_timeout_s: f64,
    /// Service-level objectives, e.g. `"ttft=500ms,tpot=50ms"`.
    // Parsed by `crate::slo::Slo::parse`.
    pub slo: Option<String>,
    /// A named workload: `chat` (128 input / 256 output tokens), `rag-1k` (1,000 / 256),
    /// `long-10k` (10,000 / 256), `llmperf` (550±150 / 150). Sets the input size and the
    /// output cap (an explicit `maxTokens` wins); not with `prompt` or `inputTokens`.
    // Applied by `BenchOptions::resolve` (see `crate::workload`).
    pub workload: Option<Workload>,
    /// Multi-turn chats: each virtual user holds one conversation of this many turns; each
    /// turn sends the conversation so far (the model's real answers included) and a new user
    /// message. Records carry `turn` and the report `turns` (TTFT per turn). Not with `rate`.
    // See `conversations`.
    pub turns: Option<u32>,
    /// Seconds over which each closed-loop level (its warm-up and its measured phase alike)
    /// opens its streams, evenly, instead of all at once: a burst of new connections can
    /// overflow a server's listen backlog. Counts inside `durationS`. Not with `rate`.
    // See `ramp`.
    pub ramp_up_s: Option<f64>,
    /// Search for the highest load that meets `slo` instead of running listed levels: from
    /// the one `concurrency` (default 1) or `rate` given, double until a level misses the SLO
    /// or goodput stops rising, then bisect (the CLI's `--find-max`; the rule is in
    /// docs/metrics.md, "Finding the knee"). `true` takes the default limits. The report's
    /// `find_max` says the highest load that met the SLO and why the search stopped. Needs
    /// `slo`.
    // In `bench()`, `true` is the default limits and `false` no search: the spec's reader
    // turns them into `{}` and nothing before serde sees them (see `find_max`).
    #[schemars(with = "Option<FindMaxSetting>")]
    pub find_max: Option<FindMaxOptions>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            api: Api::OpenaiChat,
            url: String::new(),
            model: String::new(),
            concurrency: vec![1],
            rate: Vec::new(),
            max_concurrency: 1000,
            requests: None,
            duration_s: None,
            max_duration_s: None,
            seed: None,
            max_tokens: 256,
            max_tokens_limit: None,
            prompt: None,
            input_tokens: None,
            input_tokens_stdev: None,
            tokenizer: None,
            cache_bust: CacheBust::Prefix,
            shared_prefix: None,
            system: None,
            temperature: None,
            ignore_eos: false,
            warmup: 0,
            timeout_s: 60.0,
            idle_timeout_s: 30.0,
            slo: None,
            workload: None,
            turns: None,
            ramp_up_s: None,
            find_max: None,
        }
    }
}
