//! What values a run's options may take, and the rules between values
//! ([`BenchOptions::validate`]: a ramp-up shorter than the level's duration, a shared prefix
//! below the input length, ...); reached through [`BenchOptions::resolve`] (`read.rs`) by
//! every surface.

use super::field::Field;
use super::option_error::OptionError;
use super::rules::check_given;
use super::{BenchOptions, CacheBust, FindMaxConfig, MAX_SECONDS, MAX_TURNS};
use crate::error::{CoreError, Result};
use crate::load::{LoadLevel, MAX_CONCURRENCY, MAX_LEVELS, MAX_RATE_PER_S};
use crate::prompt::{self, MAX_SYNTH_TOKENS};
use crate::slo::Slo;

type Checked = std::result::Result<(), OptionError>;

impl BenchOptions {
    /// Checks every value and the rules between values; errors name the option.
    pub fn validate(&self) -> Checked {
        let invalid = |field: Field, input: String, reason: &str| OptionError::Invalid {
            field,
            input,
            reason: reason.into(),
        };
        if self.url.trim().is_empty() {
            return Err(OptionError::Missing { field: Field::Url });
        }
        if self.model.trim().is_empty() {
            return Err(OptionError::Missing {
                field: Field::Model,
            });
        }
        self.check_levels()?;
        if self.max_concurrency == 0 || self.max_concurrency > MAX_CONCURRENCY {
            return Err(invalid(
                Field::MaxConcurrency,
                self.max_concurrency.to_string(),
                "must be between 1 and 100000",
            ));
        }
        if self.requests == Some(0) {
            return Err(invalid(Field::Requests, "0".into(), "must be at least 1"));
        }
        // The rules on given options, for callers that hold options but no `Given` (the
        // load driver): for these fields the options themselves say what was given.
        check_given(&|f| match f {
            Field::Requests => self.requests.is_some(),
            Field::DurationS => self.duration_s.is_some(),
            Field::MaxDurationS => self.max_duration_s.is_some(),
            _ => false,
        })?;
        for (field, v) in [
            (Field::DurationS, self.duration_s),
            (Field::MaxDurationS, self.max_duration_s),
            (Field::TimeoutS, Some(self.timeout_s)),
            (Field::IdleTimeoutS, Some(self.idle_timeout_s)),
        ] {
            if let Some(v) = v {
                if !(v.is_finite() && v > 0.0 && v <= MAX_SECONDS) {
                    return Err(invalid(
                        field,
                        v.to_string(),
                        "must be a positive number of seconds, at most 86400",
                    ));
                }
            }
        }
        if self.max_tokens == 0 {
            return Err(invalid(Field::MaxTokens, "0".into(), "must be at least 1"));
        }
        match self.max_tokens_limit {
            Some(0) => {
                return Err(invalid(
                    Field::MaxTokensLimit,
                    "0".into(),
                    "must be at least 1",
                ));
            }
            Some(limit) if self.max_tokens > limit => {
                return Err(invalid(
                    Field::MaxTokens,
                    self.max_tokens.to_string(),
                    &format!("must be at most {{maxTokensLimit}} ({limit})"),
                ));
            }
            _ => {}
        }
        if let Some(t) = self.temperature {
            if !t.is_finite() || t < 0.0 {
                return Err(invalid(
                    Field::Temperature,
                    t.to_string(),
                    "must be a finite number ≥ 0",
                ));
            }
        }
        if self.prompt.is_some() && self.input_tokens.is_some() {
            return Err(OptionError::Conflict {
                field: Field::Prompt,
                other: Field::InputTokens,
                why: "{inputTokens} generates the prompt; give one",
            });
        }
        self.check_ramp_up()?;
        self.slo().map_err(|e| rejected(Field::Slo, e))?;
        if let Some(t) = self.turns {
            if !(1..=MAX_TURNS).contains(&t) {
                return Err(invalid(
                    Field::Turns,
                    t.to_string(),
                    "must be between 1 and 64",
                ));
            }
            if t > 1 && !self.rate.is_empty() {
                return Err(invalid(
                    Field::Turns,
                    t.to_string(),
                    "needs closed-loop users ({concurrency}), not a {rate}: conversations are \
                     held by virtual users, not arrivals",
                ));
            }
        }
        self.check_find_max()?;
        self.check_input_tokens()?;
        self.check_shared_prefix()
    }

    fn check_levels(&self) -> Checked {
        let invalid = |field: Field, input: String, reason: &str| OptionError::Invalid {
            field,
            input,
            reason: reason.into(),
        };
        if self.rate.is_empty() {
            if self.concurrency.is_empty() {
                return Err(invalid(
                    Field::Concurrency,
                    "[]".into(),
                    "needs at least one level",
                ));
            }
            if let Some(&c) = self
                .concurrency
                .iter()
                .find(|&&c| c == 0 || c > MAX_CONCURRENCY)
            {
                return Err(invalid(
                    Field::Concurrency,
                    c.to_string(),
                    "each level must be between 1 and 100000",
                ));
            }
        }
        for (field, n) in [
            (Field::Rate, self.rate.len()),
            (Field::Concurrency, self.concurrency.len()),
        ] {
            if n > MAX_LEVELS {
                return Err(invalid(
                    field,
                    format!("{n} levels"),
                    "takes at most 64 levels",
                ));
            }
        }
        for &r in &self.rate {
            if !(r.is_finite() && r > 0.0 && r <= MAX_RATE_PER_S) {
                return Err(invalid(
                    Field::Rate,
                    r.to_string(),
                    "must be positive and at most 1e6 requests/s",
                ));
            }
        }
        Ok(())
    }

    /// The ramp-up's rules: a number of seconds (0 is none), for closed-loop levels, shorter
    /// than a timed level (whose streams would otherwise not all open within it).
    fn check_ramp_up(&self) -> Checked {
        let Some(r) = self.ramp_up_s else {
            return Ok(());
        };
        let invalid = |reason: &str| OptionError::Invalid {
            field: Field::RampUpS,
            input: r.to_string(),
            reason: reason.into(),
        };
        if !(r.is_finite() && (0.0..=MAX_SECONDS).contains(&r)) {
            return Err(invalid("must be a number of seconds from 0 to 86400"));
        }
        if r > 0.0 && !self.rate.is_empty() {
            return Err(invalid(
                "spreads the start of closed-loop streams ({concurrency}); open-loop arrivals \
                 ({rate}) are already spread by their rate: start with a lower rate instead",
            ));
        }
        for (field, limit) in [
            (Field::DurationS, self.duration_s),
            (Field::MaxDurationS, self.max_duration_s),
        ] {
            if let Some(d) = limit.filter(|&d| r >= d) {
                return Err(invalid(&format!(
                    "must be shorter than {{{}}} ({d}), or some streams would never start",
                    field.key()
                )));
            }
        }
        Ok(())
    }

    fn check_find_max(&self) -> Checked {
        if self.find_max.is_some() && self.slo().ok().flatten().is_none_or(|s| s.is_empty()) {
            return Err(OptionError::Needs {
                field: Field::FindMax,
                other: Field::Slo,
                why: "each level is judged by it, e.g. ttft=500ms,tpot=50ms",
            });
        }
        if self.find_max.is_some() {
            let (field, n) = if self.rate.is_empty() {
                (Field::Concurrency, self.concurrency.len())
            } else {
                (Field::Rate, self.rate.len())
            };
            if n != 1 {
                return Err(OptionError::Invalid {
                    field: Field::FindMax,
                    input: format!("{n} levels"),
                    reason: match field {
                        Field::Rate => {
                            "chooses the levels itself: give one {rate} to start from, \
                                        not a list"
                        }
                        _ => {
                            "chooses the levels itself: give one {concurrency} to start from, \
                              not a list"
                        }
                    }
                    .into(),
                });
            }
        }
        self.find_max_config()
            .map_err(|e| rejected(Field::FindMax, e))?;
        Ok(())
    }

    fn check_input_tokens(&self) -> Checked {
        if let Some(n) = self.input_tokens {
            if n == 0 || n > MAX_SYNTH_TOKENS {
                return Err(OptionError::Invalid {
                    field: Field::InputTokens,
                    input: n.to_string(),
                    reason: format!("must be between 1 and {MAX_SYNTH_TOKENS}"),
                });
            }
        }
        match (self.input_tokens_stdev, self.input_tokens) {
            (Some(_), None) => Err(OptionError::Needs {
                field: Field::InputTokensStdev,
                other: Field::InputTokens,
                why: "the mean it draws lengths around",
            }),
            (Some(sd), Some(n)) if n.saturating_add(sd.saturating_mul(3)) > MAX_SYNTH_TOKENS => {
                Err(OptionError::Invalid {
                    field: Field::InputTokensStdev,
                    input: sd.to_string(),
                    reason: "must keep the mean plus 3 deviations within 2000000 tokens".into(),
                })
            }
            _ => Ok(()),
        }
    }

    /// The shared prefix against the other options: [`BenchOptions::validate`] and
    /// `PromptPlan::new` both check it.
    pub fn check_shared_prefix(&self) -> Checked {
        let Some(n) = self.shared_prefix else {
            return Ok(());
        };
        let invalid = |reason: String| OptionError::Invalid {
            field: Field::SharedPrefix,
            input: n.to_string(),
            reason,
        };
        if self.cache_bust == CacheBust::Off {
            return Err(invalid(
                "needs {cacheBust} on: with identical prompts every request shares all of its \
                 prompt"
                    .into(),
            ));
        }
        if n == 0 || n > prompt::MAX_SYNTH_TOKENS {
            return Err(invalid("must be a token count from 1".into()));
        }
        if let (None, Some(t)) = (&self.prompt, self.input_tokens) {
            if n >= t {
                return Err(invalid(format!("must be below {{inputTokens}} ({t})")));
            }
        }
        Ok(())
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

    /// The parsed SLOs, when given.
    pub fn slo(&self) -> Result<Option<Slo>> {
        self.slo.as_deref().map(Slo::parse).transpose()
    }

    /// The find-max search asked for, resolved against its start: the one level given.
    pub fn find_max_config(&self) -> Result<Option<FindMaxConfig>> {
        let Some(o) = &self.find_max else {
            return Ok(None);
        };
        match self.levels().as_slice() {
            [start] => o.resolve(*start).map(Some),
            levels => Err(CoreError::InvalidSpec {
                what: "find-max",
                input: format!("{} levels", levels.len()),
                reason: "chooses the levels itself: give one concurrency (or rate) to start from"
                    .into(),
            }),
        }
    }
}

/// A parser's own error, as the option's.
fn rejected(field: Field, e: CoreError) -> OptionError {
    OptionError::Rejected {
        field,
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::options::tests::options;

    type Mutation = fn(&mut BenchOptions);

    #[test]
    fn validation_names_the_option() {
        let cases: [(Mutation, &str); 11] = [
            (|o| o.concurrency = vec![0], "`concurrency` each level"),
            // Rules on given options hold for callers without a `Given` (the driver).
            (
                |o| {
                    o.requests = Some(3);
                    o.duration_s = Some(2.0);
                },
                "`requests` and `durationS` conflict",
            ),
            (
                |o| {
                    o.max_duration_s = Some(9.0);
                    o.duration_s = Some(2.0);
                },
                "`maxDurationS` and `durationS` conflict",
            ),
            (|o| o.requests = Some(0), "requests"),
            (|o| o.timeout_s = f64::INFINITY, "`timeoutS` must be"),
            (|o| o.rate = vec![-1.0], "rate"),
            (|o| o.slo = Some("ttft=5".into()), "`slo`: invalid SLO"),
            (
                |o| o.input_tokens = Some(0),
                "`inputTokens` must be between 1",
            ),
            (
                |o| o.ramp_up_s = Some(f64::NAN),
                "`rampUpS` must be a number",
            ),
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
                "must be shorter than `durationS`",
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
}
