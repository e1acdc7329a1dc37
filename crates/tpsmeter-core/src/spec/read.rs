//! Reading `bench()`'s options ([`read_given`], [`BenchOptions::from_json`]): every name an
//! option, every value of its kind, which options were given ([`Given`]); and
//! [`BenchOptions::resolve`], the one path every surface takes: the rules on given options,
//! the workload applied, then every value checked ([`BenchOptions::validate`]).

use serde_json::{Map, Value};

use super::BenchOptions;
use super::field::{Field, Kind, suggest};
use super::option_error::OptionError;
use super::rules::check_given;
use super::value::OptionValue;

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
}
