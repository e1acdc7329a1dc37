//! [`BenchOptions`]: the settings of one benchmark run, validated once for the CLI
//! (`tpsmeter bench` flags) and the browser (`bench(options)`, the same names in
//! camelCase), so both runs mean the same thing and write the same report.
//!
//! The API key is not part of it: callers keep it apart (in memory only) and hand it to
//! [`BenchOptions::request_spec`] as a [`Secret`], so options can be logged, compared and
//! stored without a key in them.

use serde::{Deserialize, Deserializer, Serialize};

use crate::api::Api;
use crate::error::{CoreError, Result};
use crate::find_max::{FindMaxConfig, FindMaxOptions, find_max_option};
use crate::plan::{LoadLevel, MAX_CONCURRENCY, MAX_LEVELS, StopCondition};
use crate::prompt;
use crate::prompt_plan::{self, CacheBust, PromptPlan};
use crate::report::{PromptSource, RedactedUrl, RunConfig};
use crate::request::{RequestSpec, Secret};
use crate::slo::Slo;
use crate::workload::Workload;

/// Longest accepted duration, timeout or idle timeout: a day (and `Duration::from_secs_f64`
/// panics on huge values natively).
pub const MAX_SECONDS: f64 = 86_400.0;
/// Fastest accepted open-loop rate, requests per second.
pub const MAX_RATE_PER_S: f64 = 1e6;

/// The settings of a run. Defaults are the CLI's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct BenchOptions {
    #[serde(deserialize_with = "api_by_name")]
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
    /// Seed of the Poisson arrival schedule (0 when not given) and of the prompts' run id
    /// (random when not given; see [`crate::prompt_plan`]).
    pub seed: Option<u64>,
    pub max_tokens: u32,
    /// The largest output cap any request may ask for: a dataset entry's own (or its
    /// reference answer's length) above it is lowered to it, and a `max_tokens` above it
    /// is refused. The benchmark page passes its form's limit, so that a dataset a link
    /// names cannot ask a remembered key to pay for more than the form allows.
    pub max_tokens_limit: Option<u32>,
    pub prompt: Option<String>,
    /// Synthesise a prompt of about this many tokens (see [`prompt::synthesize`]); exactly
    /// this many (the user message) when the run has a tokenizer (see [`crate::synth`]).
    pub input_tokens: Option<u32>,
    /// Draw each request's input length around `input_tokens` with this standard deviation.
    pub input_tokens_stdev: Option<u32>,
    /// The tokenizer that counts input (and, without usage, output) tokens, as its source
    /// was named (a file, a URL, a Hugging Face model id); the caller loads it and hands the
    /// core a [`crate::tokens::TokenCounter`]. Recorded in the report.
    pub tokenizer: Option<String>,
    /// Whether each request's prompt starts with a mark of its own (see
    /// [`crate::prompt_plan`]), so that no server answers it from a prompt cache.
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
    /// Service-level objectives, e.g. `ttft=500ms,tpot=50ms` (see [`Slo::parse`]).
    pub slo: Option<String>,
    /// A named workload (see [`crate::workload`]): its input and output sizes, applied by
    /// [`BenchOptions::apply_workload`].
    pub workload: Option<Workload>,
    /// Multi-turn: each virtual user holds a conversation of this many turns (see
    /// [`crate::conversations`]). Closed loop only.
    pub turns: Option<u32>,
    /// Seconds over which each closed-loop phase opens its streams, evenly, instead of all
    /// at once (see [`crate::ramp`]); 0 or absent: all at once. Closed loop only.
    pub ramp_up_s: Option<f64>,
    /// Search for the highest load that meets `slo`, from the one level given (see
    /// [`crate::find_max`]); `findMax: true` in `bench()` takes the default limits.
    #[serde(deserialize_with = "find_max_option")]
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

fn api_by_name<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Api, D::Error> {
    let name = String::deserialize(d)?;
    Api::from_name(&name).ok_or_else(|| {
        let names: Vec<&str> = Api::ALL.iter().map(|a| a.name()).collect();
        serde::de::Error::custom(format!(
            "unknown api {:?}; expected one of {}, ollama",
            name.chars().take(40).collect::<String>(),
            names.join(", ")
        ))
    })
}

impl BenchOptions {
    /// Checks every value; errors name the option and the reason.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: &'static str, input: String, reason: &str| CoreError::InvalidSpec {
            what,
            input,
            reason: reason.into(),
        };
        if self.model.trim().is_empty() {
            return Err(bad("model", self.model.clone(), "must not be empty"));
        }
        if self.rate.is_empty() {
            if self.concurrency.is_empty() {
                return Err(bad("concurrency", "[]".into(), "needs at least one level"));
            }
            if let Some(&c) = self
                .concurrency
                .iter()
                .find(|&&c| c == 0 || c > MAX_CONCURRENCY)
            {
                return Err(bad(
                    "concurrency",
                    c.to_string(),
                    "each level must be between 1 and 100000",
                ));
            }
        }
        if self.rate.len() > MAX_LEVELS || self.concurrency.len() > MAX_LEVELS {
            return Err(bad(
                "levels",
                format!("{}", self.rate.len().max(self.concurrency.len())),
                "at most 64 levels",
            ));
        }
        for &r in &self.rate {
            if !(r.is_finite() && r > 0.0 && r <= MAX_RATE_PER_S) {
                return Err(bad(
                    "rate",
                    r.to_string(),
                    "must be positive and at most 1e6 requests/s",
                ));
            }
        }
        if self.max_concurrency == 0 || self.max_concurrency > MAX_CONCURRENCY {
            return Err(bad(
                "max concurrency",
                self.max_concurrency.to_string(),
                "must be between 1 and 100000",
            ));
        }
        if self.requests == Some(0) {
            return Err(bad("requests", "0".into(), "must be at least 1"));
        }
        if self.requests.is_some() && self.duration_s.is_some() {
            return Err(bad(
                "stop condition",
                "requests and duration".into(),
                "give a request count or a duration, not both",
            ));
        }
        for (what, v) in [
            ("duration", self.duration_s),
            ("timeout", Some(self.timeout_s)),
            ("idle timeout", Some(self.idle_timeout_s)),
        ] {
            if let Some(v) = v {
                if !(v.is_finite() && v > 0.0 && v <= MAX_SECONDS) {
                    return Err(bad(
                        what,
                        v.to_string(),
                        "must be a positive number of seconds, at most 86400",
                    ));
                }
            }
        }
        if self.max_tokens == 0 {
            return Err(bad("max tokens", "0".into(), "must be at least 1"));
        }
        match self.max_tokens_limit {
            Some(0) => return Err(bad("max tokens limit", "0".into(), "must be at least 1")),
            Some(limit) if self.max_tokens > limit => {
                return Err(bad(
                    "max tokens",
                    self.max_tokens.to_string(),
                    &format!("must be at most the max tokens limit, {limit}"),
                ));
            }
            _ => {}
        }
        if let Some(t) = self.temperature {
            if !t.is_finite() || t < 0.0 {
                return Err(bad(
                    "temperature",
                    t.to_string(),
                    "must be a finite number ≥ 0",
                ));
            }
        }
        if self.prompt.is_some() && self.input_tokens.is_some() {
            return Err(bad(
                "prompt",
                "prompt and inputTokens".into(),
                "give a prompt or an input token count, not both",
            ));
        }
        self.check_ramp_up()?;
        self.slo()?;
        if let Some(t) = self.turns {
            if !(1..=crate::conversations::MAX_TURNS).contains(&t) {
                return Err(bad("turns", t.to_string(), "must be between 1 and 64"));
            }
            if t > 1 && !self.rate.is_empty() {
                return Err(bad(
                    "turns",
                    t.to_string(),
                    "multi-turn conversations are held by closed-loop users: give concurrency \
                     levels, not a rate",
                ));
            }
        }
        self.find_max_config()?;
        prompt::resolve(None, self.input_tokens)?;
        if let (Some(sd), None) = (self.input_tokens_stdev, self.input_tokens) {
            return Err(bad(
                "input tokens stdev",
                sd.to_string(),
                "needs an input token count to draw around",
            ));
        }
        if let (Some(sd), Some(n)) = (self.input_tokens_stdev, self.input_tokens) {
            if n.saturating_add(sd.saturating_mul(3)) > prompt::MAX_SYNTH_TOKENS {
                return Err(bad(
                    "input tokens stdev",
                    sd.to_string(),
                    "the mean plus 3 deviations must stay within 2000000 tokens",
                ));
            }
        }
        prompt_plan::check_shared_prefix(self)?;
        Ok(())
    }

    /// Sets what the workload defines: its input sizes (a prompt or input length of the
    /// user's own conflicts), and its output cap unless `max_tokens_given` (an explicit cap
    /// wins). Callers apply it once, before [`BenchOptions::validate`].
    pub fn apply_workload(&mut self, max_tokens_given: bool) -> Result<()> {
        let Some(workload) = self.workload else {
            return Ok(());
        };
        if self.prompt.is_some() || self.input_tokens.is_some() || self.input_tokens_stdev.is_some()
        {
            return Err(CoreError::InvalidSpec {
                what: "workload",
                input: workload.name().into(),
                reason: "sets the input itself: give a workload or a prompt / input token count, \
                         not both"
                    .into(),
            });
        }
        let shape = workload.shape();
        self.input_tokens = Some(shape.input_tokens);
        self.input_tokens_stdev = shape.input_tokens_stdev;
        if !max_tokens_given {
            self.max_tokens = shape.max_tokens;
        }
        Ok(())
    }

    /// The ramp-up's rules: a number of seconds (0 is none), for closed-loop levels, shorter
    /// than a timed level (whose streams would otherwise not all open within it).
    fn check_ramp_up(&self) -> Result<()> {
        let Some(r) = self.ramp_up_s else {
            return Ok(());
        };
        let bad = |reason: &str| CoreError::InvalidSpec {
            what: "ramp-up",
            input: r.to_string(),
            reason: reason.into(),
        };
        if !(r.is_finite() && (0.0..=MAX_SECONDS).contains(&r)) {
            return Err(bad("must be a number of seconds from 0 to 86400"));
        }
        if r > 0.0 && !self.rate.is_empty() {
            return Err(bad(
                "spreads the start of closed-loop streams (--concurrency); open-loop \
                 arrivals (--rate) are already spread by their rate: start with a lower rate \
                 instead",
            ));
        }
        if self.duration_s.is_some_and(|d| r >= d) {
            return Err(bad(
                "must be shorter than the level's duration, or some streams would never start",
            ));
        }
        Ok(())
    }

    /// The ramp-up in ms (0 when none).
    pub fn ramp_up_ms(&self) -> f64 {
        self.ramp_up_s.unwrap_or(0.0) * 1000.0
    }

    /// The seed the prompts' run id derives from, when one was given.
    pub fn prompt_seed(&self) -> Option<u64> {
        self.seed
    }

    /// The input lengths to synthesise, when `input_tokens` is set.
    pub fn input_lengths(&self) -> Option<crate::synth::Lengths> {
        self.input_tokens.map(|mean| crate::synth::Lengths {
            mean,
            stdev: self.input_tokens_stdev.unwrap_or(0),
        })
    }

    /// The Poisson schedule's seed (0 when none was given).
    pub fn arrival_seed(&self) -> u64 {
        self.seed.unwrap_or(0)
    }

    /// The levels to run, in order: rates when `rate` is set, else concurrencies.
    pub fn levels(&self) -> Vec<LoadLevel> {
        if self.rate.is_empty() {
            self.concurrency
                .iter()
                .map(|&c| LoadLevel::Concurrency(c))
                .collect()
        } else {
            self.rate.iter().map(|&r| LoadLevel::Rate(r)).collect()
        }
    }

    /// When a level at `load` (concurrency or rate) stops.
    pub fn stop_condition(&self, load: LoadLevel) -> StopCondition {
        match (self.requests, self.duration_s) {
            (Some(n), _) => StopCondition::Requests(n),
            (None, Some(s)) => StopCondition::DurationS(s),
            // Saturating float-to-int cast: a huge rate gives a huge but finite count.
            (None, None) => StopCondition::Requests(((load.value() * 4.0).ceil() as u64).max(8)),
        }
    }

    /// The parsed SLOs, when given.
    pub fn slo(&self) -> Result<Option<Slo>> {
        self.slo.as_deref().map(Slo::parse).transpose()
    }

    /// The find-max search asked for, resolved against its start: the one level given. It
    /// needs an SLO to judge levels by, and chooses the levels itself.
    pub fn find_max_config(&self) -> Result<Option<FindMaxConfig>> {
        let Some(o) = &self.find_max else {
            return Ok(None);
        };
        let bad = |input: String, reason: &str| CoreError::InvalidSpec {
            what: "find-max",
            input,
            reason: reason.into(),
        };
        if self.slo()?.is_none_or(|s| s.is_empty()) {
            return Err(bad(
                "without an SLO".into(),
                "needs an SLO to judge each level by, e.g. ttft=500ms,tpot=50ms",
            ));
        }
        match self.levels().as_slice() {
            [start] => o.resolve(*start).map(Some),
            levels => Err(bad(
                format!("{} levels", levels.len()),
                "chooses the levels itself: give one concurrency (or rate) to start from",
            )),
        }
    }

    /// The prompt text: `prompt`, else a synthesised one, else the default.
    pub fn prompt_text(&self) -> Result<String> {
        prompt::resolve(self.prompt.as_deref(), self.input_tokens)
    }

    /// What every request of the run asks for.
    pub fn request_spec(&self, api_key: Option<Secret>) -> Result<RequestSpec> {
        Ok(RequestSpec {
            api: self.api,
            base_url: self.url.clone(),
            model: self.model.clone(),
            messages: vec![crate::request::Message::user(self.prompt_text()?)],
            system: self.system.clone(),
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            api_key,
            ignore_eos: self.ignore_eos,
        })
    }

    /// Where the prompt came from, for the report (`prompt_chars`: the text's length).
    pub fn prompt_source(&self, prompt_chars: u64) -> PromptSource {
        match (&self.prompt, self.input_tokens) {
            (None, Some(n)) => PromptSource::Synthetic {
                input_tokens: u64::from(n),
                input_tokens_stdev: self.input_tokens_stdev,
                tokenizer: self.tokenizer.clone(),
            },
            _ => PromptSource::Text {
                chars: prompt_chars,
            },
        }
    }

    /// The report's record of these settings: no key, the URL redacted; `plan` the run's
    /// prompts (its run id, when they are marked).
    pub fn run_config(&self, prompt: PromptSource, plan: &PromptPlan) -> Result<RunConfig> {
        Ok(RunConfig {
            api: self.api,
            url: RedactedUrl::new(&self.url),
            model: self.model.clone(),
            levels: self.levels(),
            requests: self.requests,
            duration_s: self.duration_s,
            rate_per_s: match self.rate.as_slice() {
                [r] => Some(*r),
                _ => None,
            },
            seed: if self.rate.is_empty() {
                self.seed
            } else {
                Some(self.arrival_seed())
            },
            max_tokens: Some(self.max_tokens),
            prompt,
            cache_bust: Some(plan.cache_bust()),
            shared_prefix_tokens: self.shared_prefix,
            prompt_run_id: plan.run_id(),
            warmup: self.warmup,
            timeout_s: Some(self.timeout_s),
            slo: self.slo()?,
            workload: self.workload,
            turns: self.turns.filter(|&t| t > 1),
            ramp_up_s: self.ramp_up_s.filter(|&r| r > 0.0),
            find_max: self.find_max_config()?,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Valid options for tests: a URL, a model, the defaults (other modules' tests too).
    pub(crate) fn options() -> BenchOptions {
        BenchOptions {
            url: "http://127.0.0.1:1".into(),
            model: "m".into(),
            ..BenchOptions::default()
        }
    }

    #[test]
    fn camel_case_names_and_defaults() {
        let o: BenchOptions = serde_json::from_str(
            r#"{"api":"ollama","url":"http://h","model":"m","concurrency":[1,10],
                "maxTokens":32,"timeoutS":5,"idleTimeoutS":2,"slo":"ttft=1s"}"#,
        )
        .unwrap();
        assert_eq!(o.api, Api::OllamaChat);
        assert_eq!(o.concurrency, vec![1, 10]);
        assert_eq!(o.max_tokens, 32);
        assert_eq!(o.warmup, 0);
        o.validate().unwrap();
        assert_eq!(o.slo().unwrap().unwrap().ttft_ms, Some(1000.0));
    }

    #[test]
    fn find_max_is_true_false_or_limits() {
        let parse = |v: &str| {
            serde_json::from_str::<BenchOptions>(&format!(r#"{{"findMax":{v}}}"#))
                .map(|o| o.find_max)
        };
        assert_eq!(parse("true").unwrap(), Some(FindMaxOptions::default()));
        assert_eq!(parse("false").unwrap(), None);
        assert_eq!(parse("null").unwrap(), None);
        let limits = parse(r#"{"maxLoad":64,"maxLevels":8,"minGainPct":5,"attainmentPct":99}"#)
            .unwrap()
            .unwrap();
        assert_eq!(limits.max_load, Some(64.0));
        assert_eq!(limits.attainment_pct, Some(99.0));
        for bad in [r#"{"maxload":64}"#, "1", r#""yes""#] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains("findMax takes true, false or"), "{bad}: {e}");
        }
    }

    #[test]
    fn unknown_fields_and_apis_are_rejected() {
        assert!(serde_json::from_str::<BenchOptions>(r#"{"api":"openai"}"#).is_err());
        assert!(serde_json::from_str::<BenchOptions>(r#"{"concurency":[1]}"#).is_err());
    }

    type Mutation = fn(&mut BenchOptions);

    #[test]
    fn validation_names_the_option() {
        let cases: [(Mutation, &str); 9] = [
            (|o| o.concurrency = vec![0], "concurrency"),
            (|o| o.requests = Some(0), "requests"),
            (|o| o.timeout_s = f64::INFINITY, "timeout"),
            (|o| o.rate = vec![-1.0], "rate"),
            (|o| o.slo = Some("ttft=5".into()), "SLO"),
            (|o| o.input_tokens = Some(0), "input token count"),
            (|o| o.ramp_up_s = Some(f64::NAN), "ramp-up"),
            (
                |o| {
                    o.rate = vec![5.0];
                    o.ramp_up_s = Some(2.0);
                },
                "open-loop arrivals",
            ),
            (
                |o| {
                    o.duration_s = Some(5.0);
                    o.ramp_up_s = Some(5.0);
                },
                "shorter than the level's duration",
            ),
        ];
        for (mutate, what) in cases {
            let mut o = options();
            mutate(&mut o);
            let e = o.validate().unwrap_err().to_string();
            assert!(e.contains(what), "{e} should name {what}");
        }
        options().validate().unwrap();
        let mut o = options();
        o.rate = vec![5.0];
        o.ramp_up_s = Some(0.0);
        o.validate().expect("no ramp is no ramp, whatever the load");
    }

    #[test]
    fn default_request_count_scales_with_the_level() {
        let o = options();
        assert_eq!(
            o.stop_condition(LoadLevel::Concurrency(1)),
            StopCondition::Requests(8)
        );
        assert_eq!(
            o.stop_condition(LoadLevel::Concurrency(10)),
            StopCondition::Requests(40)
        );
    }
}
