//! What a run's options become: the request every request starts from, the prompt, the
//! stop condition of each level and the report's record of the settings. The options
//! themselves, their defaults and their rules are the floor's ([`crate::spec`]); these are
//! the methods that need what stands above it (requests, prompt plans, the report).

use crate::error::Result;
use crate::load::{LoadLevel, StopCondition};
use crate::prompt;
use crate::prompts::PromptPlan;
use crate::report::{PromptSource, RedactedUrl, RunConfig};
use crate::request::{RequestSpec, Secret};
use crate::spec::BenchOptions;

impl BenchOptions {
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

    /// When a level at `load` (concurrency or rate) stops.
    pub fn stop_condition(&self, load: LoadLevel) -> StopCondition {
        match (self.requests, self.duration_s) {
            (Some(n), _) => StopCondition::Requests(n),
            (None, Some(s)) => StopCondition::DurationS(s),
            // Saturating float-to-int cast: a huge rate gives a huge but finite count.
            (None, None) => StopCondition::Requests(((load.value() * 4.0).ceil() as u64).max(8)),
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
            max_duration_s: self.max_duration_s,
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
