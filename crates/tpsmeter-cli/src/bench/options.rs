//! `tpsmeter bench`'s flags as the core's run options: the same `BenchOptions` the browser's
//! `bench()` builds, with the set of options the command line gave, resolved by the core's
//! run spec (every rule lives there), its errors named by the flags the user typed.

use tpsmeter_core::spec::{Field, Given};
use tpsmeter_core::{BenchOptions, FindMaxOptions};

use super::args::BenchArgs;

impl BenchArgs {
    /// The run's settings in the form the core shares with the browser, checked by the
    /// core's rules (errors name the flags) and the workload applied. The prompt text is not
    /// read here (`--prompt-file` is the CLI's own); see `setup`.
    pub fn options(&self) -> anyhow::Result<BenchOptions> {
        let defaults = BenchOptions::default();
        let options = BenchOptions {
            api: self.api,
            url: self.url.clone(),
            model: self.model.clone(),
            concurrency: if self.concurrency.is_empty() {
                defaults.concurrency
            } else {
                self.concurrency.clone()
            },
            rate: self.rate.clone(),
            max_concurrency: self.max_concurrency.unwrap_or(defaults.max_concurrency),
            requests: self.requests,
            duration_s: self.duration,
            max_duration_s: self.max_duration,
            seed: self.seed,
            max_tokens: self.max_tokens.unwrap_or(defaults.max_tokens),
            // The page's own limit; the command line sets no cap on its own runs.
            max_tokens_limit: None,
            prompt: self.prompt.clone(),
            input_tokens: self.input_tokens.map(|l| l.mean),
            input_tokens_stdev: self.input_tokens.map(|l| l.stdev).filter(|&sd| sd > 0),
            tokenizer: self.tokenizer.clone(),
            cache_bust: self.cache_bust,
            shared_prefix: self.shared_prefix,
            system: self.system.clone(),
            temperature: self.temperature,
            ignore_eos: self.ignore_eos,
            warmup: self.warmup,
            timeout_s: self.timeout,
            idle_timeout_s: self.idle_timeout,
            slo: self.slo.clone(),
            workload: self.workload,
            turns: self.turns,
            ramp_up_s: self.ramp_up,
            find_max: self.find_max.then_some(FindMaxOptions {
                max_load: self.max_load,
                max_levels: self.max_levels,
                min_gain_pct: self.min_gain,
                attainment_pct: self.slo_attainment,
            }),
        };
        let given = self.given(&options);
        options.resolve(&given).map_err(|e| {
            // The prompt may have come from a file: name the flag the user typed.
            let name = |f: Field| match f {
                Field::Prompt if self.prompt_file.is_some() => "--prompt-file".to_owned(),
                other => other.flag_name(),
            };
            anyhow::anyhow!(e.render(&name))
        })
    }

    /// Which of the core's options the command line set.
    fn given(&self, o: &BenchOptions) -> Given {
        let set = [
            (Field::Api, true),
            (Field::Url, true),
            (Field::Model, true),
            (Field::ApiKey, self.api_key_env.is_some()),
            (Field::Concurrency, !self.concurrency.is_empty()),
            (Field::Rate, !self.rate.is_empty()),
            (Field::MaxConcurrency, self.max_concurrency.is_some()),
            (Field::Requests, o.requests.is_some()),
            (Field::DurationS, o.duration_s.is_some()),
            (Field::MaxDurationS, o.max_duration_s.is_some()),
            (Field::Seed, o.seed.is_some()),
            (Field::MaxTokens, self.max_tokens.is_some()),
            (
                Field::Prompt,
                self.prompt.is_some() || self.prompt_file.is_some(),
            ),
            (Field::InputTokens, o.input_tokens.is_some()),
            (Field::InputTokensStdev, o.input_tokens_stdev.is_some()),
            (Field::Tokenizer, o.tokenizer.is_some()),
            (Field::Dataset, self.dataset.is_some()),
            (Field::Workload, o.workload.is_some()),
            (Field::Turns, o.turns.is_some()),
            (Field::SharedPrefix, o.shared_prefix.is_some()),
            (Field::System, o.system.is_some()),
            (Field::Temperature, o.temperature.is_some()),
            (Field::IgnoreEos, o.ignore_eos),
            (Field::RampUpS, o.ramp_up_s.is_some()),
            (Field::Slo, o.slo.is_some()),
            (Field::FindMax, o.find_max.is_some()),
        ];
        set.into_iter()
            .filter(|&(_, on)| on)
            .map(|(f, _)| f)
            .collect()
    }
}
