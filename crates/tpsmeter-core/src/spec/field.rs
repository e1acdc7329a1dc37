//! [`Field`]: every option a run takes, under the name each surface gives it (`maxTokens` in
//! `bench()`, `--max-tokens` on the command line), with the kind of value it takes. The
//! table [`FIELDS`] is the one list of option names: unknown names are matched against it,
//! errors name options through it, and the browser's options are checked against it (the
//! wasm's `checkOptions`, which `bench()` and the benchmark page call).

use serde::Serialize;

use super::value::OptionValue;

use crate::api::Api;
use crate::workload::Workload;

/// One option of a run, whatever surface it was given on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum Field {
    Api,
    Url,
    Model,
    ApiKey,
    Concurrency,
    Rate,
    MaxConcurrency,
    Requests,
    DurationS,
    MaxDurationS,
    Seed,
    MaxTokens,
    MaxTokensLimit,
    Prompt,
    InputTokens,
    InputTokensStdev,
    Tokenizer,
    Dataset,
    Workload,
    Turns,
    CacheBust,
    SharedPrefix,
    System,
    Temperature,
    IgnoreEos,
    Warmup,
    TimeoutS,
    IdleTimeoutS,
    RampUpS,
    Slo,
    FindMax,
    OnProgress,
    OnRecord,
    Signal,
    Render,
    Worker,
    Engine,
}

/// What values an option takes, as `bench()` receives them (JSON-like values). The CLI's
/// parser has its own types for the same options; these kinds say what the browser may hand
/// in and what its error says is expected. A kind is a type, not a range: ranges (at least 1,
/// above 0) are the options' rules ([`BenchOptions::validate`](super::BenchOptions::validate)), so that a value out of range gets
/// the same sentence from every surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Kind {
    Text,
    Boolean,
    /// A whole number from 0 (a 32-bit count); its range is the option's rule.
    Count,
    /// A finite number; its range is the option's rule.
    Number,
    /// A count, or a non-empty array of them (one level each).
    Levels,
    /// A number, or a non-empty array of them (one level each).
    Rates,
    Api,
    CacheBust,
    Workload,
    FindMax,
    /// Read by the caller, not by the core (the API key, a dataset's bytes): only whether it
    /// was given matters here.
    External,
    /// One of the browser's own objects (a callback, an `AbortSignal`, an element, the
    /// engine): checked by the package, listed here so misspellings find it.
    Browser,
}

/// An option's names and kind.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct FieldSpec {
    #[serde(skip)]
    pub field: Field,
    /// The name in `bench()` and in the report's settings (camelCase).
    pub key: &'static str,
    /// The command line's flag, when the CLI has the option.
    pub flag: Option<&'static str>,
    pub kind: Kind,
}

const fn f(field: Field, key: &'static str, flag: &'static str, kind: Kind) -> FieldSpec {
    FieldSpec {
        field,
        key,
        flag: if flag.is_empty() { None } else { Some(flag) },
        kind,
    }
}

/// Every option, in the order the documentation lists them.
pub const FIELDS: &[FieldSpec] = &[
    f(Field::Api, "api", "--api", Kind::Api),
    f(Field::Url, "url", "--url", Kind::Text),
    f(Field::Model, "model", "--model", Kind::Text),
    f(Field::ApiKey, "apiKey", "--api-key-env", Kind::External),
    f(
        Field::Concurrency,
        "concurrency",
        "--concurrency",
        Kind::Levels,
    ),
    f(Field::Rate, "rate", "--rate", Kind::Rates),
    f(
        Field::MaxConcurrency,
        "maxConcurrency",
        "--max-concurrency",
        Kind::Count,
    ),
    f(Field::Requests, "requests", "--requests", Kind::Count),
    f(Field::DurationS, "durationS", "--duration", Kind::Number),
    f(
        Field::MaxDurationS,
        "maxDurationS",
        "--max-duration",
        Kind::Number,
    ),
    f(Field::Seed, "seed", "--seed", Kind::Count),
    f(Field::MaxTokens, "maxTokens", "--max-tokens", Kind::Count),
    f(Field::MaxTokensLimit, "maxTokensLimit", "", Kind::Count),
    f(Field::Prompt, "prompt", "--prompt", Kind::Text),
    f(
        Field::InputTokens,
        "inputTokens",
        "--input-tokens",
        Kind::Count,
    ),
    f(
        Field::InputTokensStdev,
        "inputTokensStdev",
        "--input-tokens N:SD",
        Kind::Count,
    ),
    f(Field::Tokenizer, "tokenizer", "--tokenizer", Kind::Text),
    f(Field::Dataset, "dataset", "--dataset", Kind::External),
    f(Field::Workload, "workload", "--workload", Kind::Workload),
    f(Field::Turns, "turns", "--turns", Kind::Count),
    f(
        Field::CacheBust,
        "cacheBust",
        "--cache-bust",
        Kind::CacheBust,
    ),
    f(
        Field::SharedPrefix,
        "sharedPrefix",
        "--shared-prefix",
        Kind::Count,
    ),
    f(Field::System, "system", "--system", Kind::Text),
    f(
        Field::Temperature,
        "temperature",
        "--temperature",
        Kind::Number,
    ),
    f(Field::IgnoreEos, "ignoreEos", "--ignore-eos", Kind::Boolean),
    f(Field::Warmup, "warmup", "--warmup", Kind::Count),
    f(Field::TimeoutS, "timeoutS", "--timeout", Kind::Number),
    f(
        Field::IdleTimeoutS,
        "idleTimeoutS",
        "--idle-timeout",
        Kind::Number,
    ),
    f(Field::RampUpS, "rampUpS", "--ramp-up", Kind::Number),
    f(Field::Slo, "slo", "--slo", Kind::Text),
    f(Field::FindMax, "findMax", "--find-max", Kind::FindMax),
    f(Field::OnProgress, "onProgress", "", Kind::Browser),
    f(Field::OnRecord, "onRecord", "", Kind::Browser),
    f(Field::Signal, "signal", "", Kind::Browser),
    f(Field::Render, "render", "", Kind::Browser),
    f(Field::Worker, "worker", "", Kind::Browser),
    f(Field::Engine, "engine", "", Kind::Browser),
];

/// The limits a `findMax` object may set, with what each takes.
pub const FIND_MAX_LIMITS: &[(&str, Kind)] = &[
    ("maxLoad", Kind::Number),
    ("maxLevels", Kind::Count),
    ("minGainPct", Kind::Number),
    ("attainmentPct", Kind::Number),
];

/// The largest whole number a count option takes (the core reads 32-bit counts).
const MAX_COUNT: f64 = u32::MAX as f64;

impl Field {
    /// The option's entry in [`FIELDS`].
    pub fn spec(self) -> &'static FieldSpec {
        // Every variant has a row; `fields_are_listed_once` proves it.
        FIELDS
            .iter()
            .find(|s| s.field == self)
            .unwrap_or(&FIELDS[0])
    }

    /// The camelCase name (`maxTokens`).
    pub fn key(self) -> &'static str {
        self.spec().key
    }

    /// The option whose camelCase name is `key`.
    pub fn from_key(key: &str) -> Option<Field> {
        FIELDS.iter().find(|s| s.key == key).map(|s| s.field)
    }

    /// The name as `bench()`'s messages write it: `` `maxTokens` ``.
    pub fn quoted_key(self) -> String {
        format!("`{}`", self.key())
    }

    /// The name as the command line's messages write it: `--max-tokens` (the quoted key for
    /// an option the CLI does not have).
    pub fn flag_name(self) -> String {
        match self.spec().flag {
            Some(flag) => flag.to_owned(),
            None => self.quoted_key(),
        }
    }
}

impl Kind {
    /// What the option expects, for "`x` expects …, got …".
    pub fn expected(self) -> String {
        match self {
            Kind::Text => "a string".into(),
            Kind::Boolean => "true or false".into(),
            Kind::Count => "a whole number from 0".into(),
            Kind::Number => "a finite number".into(),
            Kind::Levels => {
                "a whole number, or an array of them (one level each), such as [1, 4, 16]".into()
            }
            Kind::Rates => {
                "a number of requests per second, or an array of them, such as [0.5, 2]".into()
            }
            Kind::Api => {
                let names: Vec<String> = Api::ALL
                    .iter()
                    .map(|a| a.name())
                    .chain([Api::Local.name()])
                    .map(|n| format!("'{n}'"))
                    .collect();
                format!("one of {}", names.join(", "))
            }
            Kind::CacheBust => "'prefix' or 'off'".into(),
            Kind::Workload => {
                let names: Vec<String> = Workload::ALL
                    .iter()
                    .map(|w| format!("'{}'", w.name()))
                    .collect();
                format!("one of {}", names.join(", "))
            }
            Kind::FindMax => {
                "true, false or { maxLoad?, maxLevels?, minGainPct?, attainmentPct? } (numbers)"
                    .into()
            }
            Kind::External | Kind::Browser => "a value the package checks".into(),
        }
    }

    /// Whether `v` is a value of this kind.
    pub fn fits<V: OptionValue>(self, v: &V) -> bool {
        let whole = |v: &V| {
            v.number()
                .is_some_and(|n| n.fract() == 0.0 && (0.0..=MAX_COUNT).contains(&n))
        };
        let number = |v: &V| v.number().is_some_and(f64::is_finite);
        let list = |v: &V, one: &dyn Fn(&V) -> bool| {
            one(v)
                || v.items()
                    .is_some_and(|a| !a.is_empty() && a.iter().all(one))
        };
        match self {
            Kind::Text => v.text().is_some(),
            Kind::Boolean => v.boolean().is_some(),
            Kind::Count => whole(v),
            Kind::Number => number(v),
            Kind::Levels => list(v, &whole),
            Kind::Rates => list(v, &number),
            Kind::Api => v
                .text()
                .is_some_and(|s| Api::from_name(&s).is_some() && s != "ollama"),
            Kind::CacheBust => v.text().is_some_and(|s| s == "prefix" || s == "off"),
            Kind::Workload => v.text().is_some_and(|s| Workload::parse(&s).is_ok()),
            Kind::FindMax => {
                v.boolean().is_some()
                    || v.entries().is_some_and(|o| {
                        o.iter().all(|(k, x)| {
                            x.is_null()
                                || FIND_MAX_LIMITS
                                    .iter()
                                    .any(|(name, kind)| name == k && kind.fits(x))
                        })
                    })
            }
            Kind::External | Kind::Browser => true,
        }
    }
}

/// The known option a misspelt, snake_case, kebab-case or flag-style name most likely meant:
/// `max_tokens`, `--max-tokens` and `maxtokens` all give [`Field::MaxTokens`].
pub fn suggest(name: &str) -> Option<Field> {
    let lower: String = name
        .trim_start_matches('-')
        .chars()
        .filter(|c| !matches!(c, '_' | '-'))
        .map(|c| c.to_ascii_lowercase())
        .collect();
    // Option names are ASCII: no Unicode case tables in the wasm for them.
    let normal = |key: &str| key.to_ascii_lowercase();
    if let Some(s) = FIELDS.iter().find(|s| normal(s.key) == lower) {
        return Some(s.field);
    }
    // A flag's name without its unit: `--duration` is `durationS`.
    if let Some(s) = FIELDS.iter().find(|s| {
        s.flag.is_some_and(|flag| {
            flag.trim_start_matches('-')
                .split(' ')
                .next()
                .is_some_and(|f| f.replace('-', "") == lower)
        })
    }) {
        return Some(s.field);
    }
    let (best, d) = FIELDS
        .iter()
        .map(|s| (s.field, distance(&lower, &normal(s.key))))
        .min_by_key(|&(_, d)| d)?;
    (d <= (lower.chars().count() / 4).max(1)).then_some(best)
}

/// Edit distance, for "did you mean" (names are short: the plain table is fine).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = (up + 1).min(row[j] + 1).min(diag + usize::from(ca != cb));
            diag = up;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_fits_in_the_given_set() {
        // `Given` is one bit per field in a u64.
        assert!(FIELDS.len() <= 64 && FIELDS.iter().all(|s| (s.field as u32) < 64));
    }

    #[test]
    fn fields_are_listed_once() {
        for (i, s) in FIELDS.iter().enumerate() {
            assert_eq!(s.field.spec().key, s.key, "{:?}", s.field);
            assert!(
                FIELDS[i + 1..]
                    .iter()
                    .all(|o| o.key != s.key && o.field != s.field),
                "{} listed twice",
                s.key
            );
        }
    }

    #[test]
    fn misspellings_find_their_option() {
        for (typed, meant) in [
            ("max_tokens", Field::MaxTokens),
            ("--max-tokens", Field::MaxTokens),
            ("concurrncy", Field::Concurrency),
            ("--duration", Field::DurationS),
            ("--timeout", Field::TimeoutS),
            ("onprogres", Field::OnProgress),
        ] {
            assert_eq!(suggest(typed), Some(meant), "{typed}");
        }
        assert_eq!(suggest("colour"), None);
    }

    #[test]
    fn kinds_take_what_they_say() {
        use serde_json::json;
        assert!(!Kind::FindMax.fits(&json!([])), "an array is no object");
        assert!(Kind::Levels.fits(&json!(4)) && Kind::Levels.fits(&json!([1, 2])));
        assert!(!Kind::Levels.fits(&json!([])) && !Kind::Levels.fits(&json!([1.5])));
        assert!(!Kind::Count.fits(&json!(-5)) && Kind::Count.fits(&json!(0)));
        assert!(Kind::Number.fits(&json!(-0.5)) && !Kind::Number.fits(&json!("1")));
        assert!(Kind::Api.fits(&json!("local")) && !Kind::Api.fits(&json!("openai")));
        assert!(!Kind::Api.fits(&json!("ollama")), "the alias is the CLI's");
        assert!(Kind::FindMax.fits(&json!({"maxLoad": 64})));
        assert!(!Kind::FindMax.fits(&json!({"maxload": 64})) && !Kind::FindMax.fits(&json!(1)));
        assert!(Kind::Workload.fits(&json!("rag-1k")) && !Kind::Workload.fits(&json!("rag")));
    }
}
