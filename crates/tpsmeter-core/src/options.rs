//! [`BenchOptions`]: the settings of one benchmark run, validated once for the CLI
//! (`tpsmeter bench` flags) and the browser (`bench(options)`, the same names in
//! camelCase), so both runs mean the same thing and write the same report.
//!
//! The API key is not part of it: callers keep it apart (in memory only) and hand it to
//! [`BenchOptions::request_spec`] as a [`Secret`], so options can be logged, compared and
//! stored without a key in them.

use crate::error::{CoreError, Result};
use crate::plan::{LoadLevel, MAX_CONCURRENCY, MAX_LEVELS, MAX_RATE_PER_S, StopCondition};
use crate::prompt;
use crate::prompt_plan::{self, PromptPlan};
use crate::report::{PromptSource, RedactedUrl, RunConfig};
use crate::request::{RequestSpec, Secret};
use crate::slo::Slo;
use crate::spec::{BenchOptions, FindMaxConfig, MAX_SECONDS};

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
    use crate::api::Api;
    use crate::spec::FindMaxOptions;

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
