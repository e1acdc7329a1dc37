//! What options a run may take: the browser's values read into [`BenchOptions`]
//! ([`BenchOptions::from_json`]), the rules on given options ([`super::rules`]), the
//! workload applied, then every value and every rule between values
//! ([`BenchOptions::validate`]). The CLI, `bench()` and the benchmark page all come through
//! [`BenchOptions::resolve`], so they refuse the same option sets with the same sentence.

use serde_json::{Map, Value};

use super::field::{Field, Kind, suggest};
use super::option_error::OptionError;
use super::rules::check_given;
use super::value::OptionValue;
use super::{BenchOptions, CacheBust, FindMaxConfig, MAX_SECONDS, MAX_TURNS};
use crate::error::{CoreError, Result};
use crate::load::{LoadLevel, MAX_CONCURRENCY, MAX_LEVELS, MAX_RATE_PER_S};
use crate::prompt::{self, MAX_SYNTH_TOKENS};
use crate::slo::Slo;

/// The options a user set (as opposed to those left at their defaults): a set of
/// [`Field`]s, one bit each (a small set; no tree code in the wasm for it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Given(u64);

impl Given {
    pub fn new() -> Given {
        Given(0)
    }

    pub fn insert(&mut self, field: Field) {
        self.0 |= 1 << field as u32;
    }

    pub fn contains(&self, field: &Field) -> bool {
        self.0 & (1 << *field as u32) != 0
    }
}

impl Extend<Field> for Given {
    fn extend<I: IntoIterator<Item = Field>>(&mut self, fields: I) {
        for f in fields {
            self.insert(f);
        }
    }
}

impl FromIterator<Field> for Given {
    fn from_iter<I: IntoIterator<Item = Field>>(fields: I) -> Given {
        let mut given = Given::new();
        given.extend(fields);
        given
    }
}

type Checked = std::result::Result<(), OptionError>;

/// Checks the names and kinds of `bench()`'s options: every name must be an option (else the
/// one it most likely meant is suggested), every value of its kind, and the API named.
/// Returns which options were given; the browser's own options (callbacks, the engine) are
/// the package's to check and are left out, as is `findMax: false` (no search).
pub fn read_given<V: OptionValue>(
    entries: &[(String, V)],
) -> std::result::Result<Given, OptionError> {
    let mut given = Given::new();
    for (name, value) in entries {
        let Some(field) = Field::from_key(name) else {
            return Err(OptionError::Unknown {
                suggestion: suggest(name),
                name: name.clone(),
            });
        };
        if !field.spec().kind.fits(value) {
            return Err(OptionError::Expects {
                field,
                got: value.describe(),
            });
        }
        let kind = field.spec().kind;
        if kind != Kind::Browser && !(kind == Kind::FindMax && value.boolean() == Some(false)) {
            given.insert(field);
        }
    }
    // The browser names its API; the CLI's parser requires `--api` the same way.
    if !given.contains(&Field::Api) {
        return Err(OptionError::Missing { field: Field::Api });
    }
    Ok(given)
}

/// Whether `field`'s `value` is one the core's options read (not the key, a dataset's bytes
/// or a browser object, which the caller holds).
pub fn is_core(field: Field) -> bool {
    !matches!(field.spec().kind, Kind::External | Kind::Browser)
}

impl BenchOptions {
    /// Reads `bench()`'s options (native callers and tests; the wasm reads its `JsValue`s
    /// through [`read_given`] and serde itself): every name an option, every value of its
    /// kind, one level given as a number made a list. Returns the options and which were
    /// given; [`BenchOptions::resolve`] then checks them.
    pub fn from_json(
        options: Map<String, Value>,
    ) -> std::result::Result<(BenchOptions, Given), OptionError> {
        let entries: Vec<(String, Value)> = options.into_iter().collect();
        let given = read_given(&entries)?;
        let core: Map<String, Value> = entries
            .into_iter()
            .filter_map(|(name, value)| {
                let field = Field::from_key(&name)?;
                let no_search = field == Field::FindMax && value == Value::Bool(false);
                (is_core(field) && !no_search).then(|| (name, normalize(field.spec().kind, value)))
            })
            .collect();
        let options =
            serde_json::from_value(Value::Object(core)).map_err(|e| OptionError::Rejected {
                field: Field::Api,
                message: e.to_string(),
            })?;
        Ok((options, given))
    }

    /// The options as a run takes them: the rules on `given` options checked, the workload
    /// applied (its output cap unless `maxTokens` was given), then every value checked.
    pub fn resolve(mut self, given: &Given) -> std::result::Result<BenchOptions, OptionError> {
        check_given(&|f| given.contains(&f))?;
        if let Some(workload) = self.workload {
            let shape = workload.shape();
            self.input_tokens = Some(shape.input_tokens);
            self.input_tokens_stdev = shape.input_tokens_stdev;
            if !given.contains(&Field::MaxTokens) {
                self.max_tokens = shape.max_tokens;
            }
        }
        self.validate()?;
        Ok(self)
    }

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
        if self.requests.is_some() && self.duration_s.is_some() {
            return Err(OptionError::Conflict {
                field: Field::Requests,
                other: Field::DurationS,
                why: "a level runs for a request count or for a duration; give one",
            });
        }
        if self.max_duration_s.is_some() && self.duration_s.is_some() {
            return Err(OptionError::Conflict {
                field: Field::MaxDurationS,
                other: Field::DurationS,
                why: "{maxDurationS} caps a level run by request count; a level of {durationS} \
                      already ends on time",
            });
        }
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

/// `value` in the form the options' types read: one level as a list of one, whole numbers
/// as integers (a browser's numbers are all floating point).
fn normalize(kind: Kind, value: Value) -> Value {
    let int = |v: Value| match v.as_f64() {
        // `fits` has checked it is whole and within u32.
        Some(n) if n.fract() == 0.0 && n >= 0.0 => Value::from(n as u64),
        _ => v,
    };
    match kind {
        Kind::Count => int(value),
        Kind::Levels => match value {
            Value::Array(a) => Value::Array(a.into_iter().map(int).collect()),
            one => Value::Array(vec![int(one)]),
        },
        Kind::Rates if !value.is_array() => Value::Array(vec![value]),
        // `true`: the default limits (`false` never gets here: no search).
        Kind::FindMax if value == Value::Bool(true) => Value::Object(Map::new()),
        Kind::FindMax => match value {
            Value::Object(o) => Value::Object(
                o.into_iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| {
                        let v = if k == "maxLevels" { int(v) } else { v };
                        (k, v)
                    })
                    .collect(),
            ),
            other => other,
        },
        _ => value,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;
    use crate::api::Api;
    use crate::options::tests::options;
    use crate::spec::FindMaxOptions;

    /// `bench()`'s options read and resolved, or the message it would throw.
    fn from_browser(v: Value) -> std::result::Result<BenchOptions, String> {
        let Value::Object(map) = v else {
            panic!("an object")
        };
        BenchOptions::from_json(map)
            .and_then(|(o, given)| o.resolve(&given))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn browser_values_are_read_with_their_names_and_kinds() {
        let base = json!({"api": "openai-chat", "url": "http://h", "model": "m"});
        let with = |extra: Value| {
            let mut o = base.clone();
            o.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            from_browser(o)
        };
        let o = with(json!({"concurrency": 4, "maxTokens": 32.0, "seed": 7})).unwrap();
        assert_eq!(
            (o.concurrency, o.max_tokens, o.seed),
            (vec![4], 32, Some(7))
        );
        assert_eq!(
            with(json!({"max_tokens": 4})).unwrap_err(),
            "unknown option `max_tokens` (did you mean `maxTokens`?)"
        );
        assert_eq!(
            with(json!({"maxTokens": -5})).unwrap_err(),
            "`maxTokens` expects a whole number from 0, got -5"
        );
        assert_eq!(
            with(json!({"maxTokens": 0})).unwrap_err(),
            "`maxTokens` must be at least 1, got 0",
            "a range is the option's rule, the same sentence as the CLI's"
        );
        let api = with(json!({"api": "openai"})).unwrap_err();
        assert!(
            api.starts_with("`api` expects one of 'openai-chat', "),
            "{api}"
        );
        assert!(api.ends_with("'local', got \"openai\""), "{api}");
        assert_eq!(
            with(json!({"concurrency": [2], "rate": [1]})).unwrap_err(),
            "`concurrency` and `rate` conflict: `concurrency` runs closed-loop levels (requests \
             kept in flight), `rate` open-loop ones (arrivals per second); give one"
        );
        assert!(with(json!({"onProgress": {}, "dataset": {"url": "x"}})).is_ok());
        let e = with(json!({"dataset": "d.jsonl", "workload": "chat"})).unwrap_err();
        assert!(e.starts_with("`dataset` and `workload` conflict"), "{e}");
        let e = with(json!({"findMax": true})).unwrap_err();
        assert!(e.starts_with("`findMax` needs `slo`"), "{e}");
        assert!(with(json!({"findMax": false})).unwrap().find_max.is_none());
        let o = with(json!({"workload": "rag-1k"})).unwrap();
        assert_eq!((o.input_tokens, o.max_tokens), (Some(1000), 256));
        let o = with(json!({"workload": "llmperf", "maxTokens": 9})).unwrap();
        assert_eq!((o.input_tokens_stdev, o.max_tokens), (Some(150), 9));
    }

    #[test]
    fn browser_only_options_are_left_to_the_package() {
        let o = json!({"api": "openai-chat", "url": "http://h", "model": "m",
            "onProgress": "f", "signal": {}, "worker": false, "apiKey": "k"});
        from_browser(o).unwrap();
    }

    #[test]
    fn camel_case_names_and_defaults() {
        let (o, _) = BenchOptions::from_json(
            serde_json::from_str(
                r#"{"api":"ollama-chat","url":"http://h","model":"m","concurrency":[1,10],
                    "maxTokens":32,"timeoutS":5,"idleTimeoutS":2,"slo":"ttft=1s"}"#,
            )
            .unwrap(),
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
            let map = serde_json::from_str(&format!(r#"{{"api":"anthropic","findMax":{v}}}"#));
            BenchOptions::from_json(map.unwrap())
                .map(|(o, _)| o.find_max)
                .map_err(|e| e.to_string())
        };
        assert_eq!(parse("true").unwrap(), Some(FindMaxOptions::default()));
        assert_eq!(parse("false").unwrap(), None);
        let limits = parse(r#"{"maxLoad":64,"maxLevels":8,"minGainPct":5,"attainmentPct":99}"#)
            .unwrap()
            .unwrap();
        assert_eq!(limits.max_load, Some(64.0));
        assert_eq!(limits.attainment_pct, Some(99.0));
        for bad in [r#"{"maxload":64}"#, "1", r#""yes""#, "null"] {
            let e = parse(bad).unwrap_err();
            assert!(
                e.starts_with("`findMax` expects true, false or {"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn serde_alone_still_refuses_unknown_fields_and_apis() {
        assert!(serde_json::from_str::<BenchOptions>(r#"{"api":"openai"}"#).is_err());
        assert!(serde_json::from_str::<BenchOptions>(r#"{"concurency":[1]}"#).is_err());
    }

    type Mutation = fn(&mut BenchOptions);

    #[test]
    fn validation_names_the_option() {
        let cases: [(Mutation, &str); 9] = [
            (|o| o.concurrency = vec![0], "`concurrency` each level"),
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
