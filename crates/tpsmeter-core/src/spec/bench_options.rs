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
use crate::api::Api;
use crate::workload::Workload;

/// Longest accepted duration, timeout or idle timeout: a day (and `Duration::from_secs_f64`
/// panics on huge values natively).
pub const MAX_SECONDS: f64 = 86_400.0;

/// Most turns a conversation may have: each one resends all before it.
pub const MAX_TURNS: u32 = 64;

/// The settings of a run. Defaults are the CLI's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct BenchOptions {
    pub api: Api,
    /// Server base URL (see `request::url` for how the API's path is appended).
    pub url: String,
    pub model: String,
    /// Closed-loop concurrency levels. Ignored when `rate` is set (then `max_concurrency`
    /// caps requests in flight).
    pub concurrency: Vec<u32>,
    /// Open-loop Poisson arrival rates (requests/s); when non-empty, the levels are rates.
    pub rate: Vec<f64>,
    /// Open loop: the most requests in flight at once (arrivals beyond it wait).
    pub max_concurrency: u32,
    /// Measured requests per level. With neither this nor `duration_s`: 4 × the level's
    /// concurrency or rate, at least 8.
    pub requests: Option<u64>,
    /// Seconds per level instead of a request count.
    pub duration_s: Option<f64>,
    /// The most seconds a level run by request count may take: past it the level starts no
    /// more requests (those in flight finish) and the report warns that it was cut. A time
    /// budget for runs against a server that may be slower than hoped. Not with `duration_s`.
    pub max_duration_s: Option<f64>,
    /// Seed of the Poisson arrival schedule (0 when not given) and of the prompts' run id
    /// (random when not given; see `prompts`).
    pub seed: Option<u64>,
    pub max_tokens: u32,
    /// The largest output cap any request may ask for: a dataset entry's own (or its
    /// reference answer's length) above it is lowered to it, and a `max_tokens` above it
    /// is refused. The benchmark page passes its form's limit, so that a dataset a link
    /// names cannot ask a remembered key to pay for more than the form allows.
    pub max_tokens_limit: Option<u32>,
    pub prompt: Option<String>,
    /// Synthesise a prompt of about this many tokens (see [`crate::prompt::synthesize`]); exactly
    /// this many (the user message) when the run has a tokenizer (see `synth`).
    pub input_tokens: Option<u32>,
    /// Draw each request's input length around `input_tokens` with this standard deviation.
    pub input_tokens_stdev: Option<u32>,
    /// The tokenizer that counts input (and, without usage, output) tokens, as its source
    /// was named (a file, a URL, a Hugging Face model id); the caller loads it and hands the
    /// core a `tokens::TokenCounter`. Recorded in the report.
    pub tokenizer: Option<String>,
    /// Whether each request's prompt starts with a mark of its own (see
    /// `prompts`), so that no server answers it from a prompt cache.
    pub cache_bust: CacheBust,
    /// Tokens of text every request shares before its mark (measures prefix caching).
    pub shared_prefix: Option<u32>,
    pub system: Option<String>,
    pub temperature: Option<f32>,
    /// Ask the server to ignore end-of-sequence (llama.cpp, vLLM).
    pub ignore_eos: bool,
    /// Warm-up requests before each level, recorded but left out of every summary.
    pub warmup: u32,
    /// Seconds to the first body byte before a request fails as `timeout_first_byte`.
    pub timeout_s: f64,
    /// Seconds without a body byte, once the stream started, before it fails as `stall`.
    pub idle_timeout_s: f64,
    /// Service-level objectives, e.g. `ttft=500ms,tpot=50ms` (see [`crate::slo::Slo::parse`]).
    pub slo: Option<String>,
    /// A named workload (see [`crate::workload`]): its input and output sizes, applied by
    /// [`BenchOptions::resolve`].
    pub workload: Option<Workload>,
    /// Multi-turn: each virtual user holds a conversation of this many turns (see
    /// `conversations`). Closed loop only.
    pub turns: Option<u32>,
    /// Seconds over which each closed-loop phase opens its streams, evenly, instead of all
    /// at once (see `ramp`); 0 or absent: all at once. Closed loop only.
    pub ramp_up_s: Option<f64>,
    /// Search for the highest load that meets `slo`, from the one level given (see
    /// `find_max`). In `bench()`, `findMax: true` is the default limits and `false` no
    /// search: the spec's reader turns them into `{}` and nothing before serde sees them.
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
