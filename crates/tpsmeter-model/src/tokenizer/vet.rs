//! Vetting the regexes of a `tokenizer.json` before `tokenizers` compiles them.
//!
//! `tokenizers` runs a `Split` pre-tokenizer's or a `Replace` normalizer's regex with
//! `fancy-regex`, which hands a pattern without look-around, backreferences and the like to
//! the `regex` crate (time linear in the text) but runs any other on a backtracking engine.
//! There a pattern such as `(?:(?:.|..){0,16}(?=\x00)|.)` costs ~4 ms per character of text
//! counted (a 3,000-character answer took 25 s), and anyone can publish a `tokenizer.json`
//! on the Hub. So a pattern is accepted only when it is
//! - one of the [`super::patterns::KNOWN_PATTERNS`] of real models, exactly, or
//! - one that `fancy-regex` hands whole to the `regex` crate: no look-around,
//!   backreference, atomic group, possessive quantifier, `\K`, `\G`, condition or word
//!   boundary, at most [`MAX_PATTERN_BYTES`] long, compiling within
//!   [`MAX_PROGRAM_BYTES`] (a bounded repetition of a large class, `\p{L}{1000}`, compiles
//!   to a program that large, and the engine's cost per character grows with it).
//!
//! Every `{"Regex": …}` under `normalizer`, `pre_tokenizer`, `post_processor` and `decoder`
//! is checked, at any depth (`Sequence`s nest). `{"String": …}` patterns are literals.
//! Tokenizers built from a GGUF's metadata are not vetted: their regexes are this crate's
//! own, chosen by name ([`super::PreTokenizerRecipe`]).

use fancy_regex::{Assertion, Expr};
use serde_json::Value;

use super::patterns::is_known;
use crate::{ModelError, Result};

/// Longest unknown pattern accepted; real ones are at most a few hundred bytes (DeepSeek
/// LLM's letter class, the longest known, is ~700).
pub const MAX_PATTERN_BYTES: usize = 4096;

/// Largest compiled program (the `regex` crate's NFA) of an unknown pattern. Real patterns
/// without look-around compile to well under this (see the tests); the `regex` crate's own
/// default is 10 MiB.
pub const MAX_PROGRAM_BYTES: usize = 1 << 20;

/// How much of a refused pattern an error quotes.
const QUOTED_CHARS: usize = 120;

/// The parts of a `tokenizer.json` that hold regexes (serde skips the rest, the vocabulary
/// and merges included, without building it). A duplicated key is an error here, so this
/// and `tokenizers` cannot read two different values.
#[derive(Debug, serde::Deserialize)]
pub(super) struct Pipeline {
    #[serde(default)]
    normalizer: Value,
    #[serde(default)]
    pre_tokenizer: Value,
    #[serde(default)]
    post_processor: Value,
    #[serde(default)]
    pub(super) decoder: Value,
}

impl Pipeline {
    /// Parses the pipeline of `json` and vets every regex in it.
    pub(super) fn vetted(json: &[u8]) -> Result<Pipeline> {
        let pipeline: Pipeline =
            serde_json::from_slice(json).map_err(|e| ModelError::Tokenizer {
                reason: format!("tokenizer.json: {e}"),
            })?;
        for (name, part) in [
            ("normalizer", &pipeline.normalizer),
            ("pre_tokenizer", &pipeline.pre_tokenizer),
            ("post_processor", &pipeline.post_processor),
            ("decoder", &pipeline.decoder),
        ] {
            vet_tree(part, &mut name.to_owned())?;
        }
        Ok(pipeline)
    }
}

/// Vets every `{"Regex": "…"}` under `value`; `at` is its path, for the error.
fn vet_tree(value: &Value, at: &mut String) -> Result<()> {
    let len = at.len();
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                at.push('.');
                at.push_str(key);
                if key == "Regex"
                    && let Value::String(pattern) = child
                {
                    vet_pattern(pattern).map_err(|reason| ModelError::UnsafeTokenizer {
                        at: at.clone(),
                        pattern: quote(pattern),
                        reason,
                    })?;
                } else {
                    vet_tree(child, at)?;
                }
                at.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                at.push_str(&format!("[{i}]"));
                vet_tree(child, at)?;
                at.truncate(len);
            }
        }
        _ => {}
    }
    Ok(())
}

/// `Ok` when `pattern` may run (see the module docs), else why not.
pub fn vet_pattern(pattern: &str) -> std::result::Result<(), String> {
    if is_known(pattern) {
        return Ok(());
    }
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(format!(
            "{} bytes long, over the limit of {MAX_PATTERN_BYTES} for a pattern of no known model",
            pattern.len()
        ));
    }
    let tree = Expr::parse_tree(pattern).map_err(|e| format!("it does not parse: {e}"))?;
    backtracking_feature(&tree.expr).map_or(Ok(()), |what| {
        Err(format!(
            "it uses {what}, which runs on a backtracking engine whose time can grow \
             exponentially with the text; only the patterns of known models may"
        ))
    })?;
    fancy_regex::RegexBuilder::new(pattern)
        .delegate_size_limit(MAX_PROGRAM_BYTES)
        .build()
        .map_err(|e| {
            format!("it does not compile to a program within {MAX_PROGRAM_BYTES} bytes: {e}")
        })?;
    Ok(())
}

/// The first construct in `expr` that makes `fancy-regex` backtrack, named for the error.
/// This mirrors `fancy-regex`'s own analysis (what it calls "hard"); any variant not known
/// to be plain counts as one, so a new one in a later version is refused, not trusted.
fn backtracking_feature(expr: &Expr) -> Option<&'static str> {
    match expr {
        Expr::Empty | Expr::Any { .. } | Expr::Literal { .. } | Expr::Delegate { .. } => None,
        Expr::Assertion(a) => match a {
            Assertion::StartText
            | Assertion::EndText
            | Assertion::StartLine { .. }
            | Assertion::EndLine { .. } => None,
            _ => Some("a word boundary"),
        },
        Expr::Concat(children) | Expr::Alt(children) => {
            children.iter().find_map(backtracking_feature)
        }
        Expr::Group(child) | Expr::Repeat { child, .. } => backtracking_feature(child),
        Expr::LookAround(..) => Some("look-around"),
        Expr::Backref(_) | Expr::BackrefExistsCondition(_) | Expr::Conditional { .. } => {
            Some("a backreference")
        }
        Expr::AtomicGroup(_) => Some("an atomic group or a possessive quantifier"),
        Expr::KeepOut => Some(r"\K"),
        Expr::ContinueFromPreviousMatchEnd => Some(r"\G"),
    }
}

/// The start of `pattern`, for an error message.
fn quote(pattern: &str) -> String {
    let mut chars = pattern.chars();
    let head: String = chars.by_ref().take(QUOTED_CHARS).collect();
    if chars.next().is_some() {
        format!("{head}…")
    } else {
        head
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::patterns::KNOWN_PATTERNS;
    use super::super::pre::PreTokenizerRecipe;
    use super::*;

    /// The pattern of issue 35: ~4 ms per character on the backtracking engine.
    const HOSTILE: &str = r"(?:(?:.|..){0,16}(?=\x00)|.)";

    #[test]
    fn every_known_pattern_is_accepted_and_compiles() {
        for (who, pattern) in KNOWN_PATTERNS {
            assert_eq!(vet_pattern(pattern), Ok(()), "{who}");
            fancy_regex::Regex::new(pattern).unwrap_or_else(|e| panic!("{who}: {e}"));
        }
    }

    /// Patterns of real tokenizers without look-around: accepted by the general rule. (DeepSeek
    /// LLM's letter class is not here: the `regex` crate refuses one of its ranges, so
    /// `tokenizers` on `fancy-regex` cannot load that file with or without vetting.)
    #[test]
    fn real_patterns_without_look_around_are_accepted() {
        for pattern in [
            r"\p{N}{1,3}",
            "[一-龥぀-ゟ゠-ヿ]+",
            r"\p{N}",
            r"\p{N}+",
            "[\r\n]",
            r"\s?\p{L}+",
            r"\s?\p{P}+",
            "[一-龥ࠀ-一가-퟿]+",
            r"\s+$",
            " ?[^(\\s|.,!?…。，、।۔،)]+",
            r"\s?[!-/:-~！-／：-～‘-‟　-。]+",
            "[^\\n]+|[\\n]+",
            r"\S+",
            r"[\p{P}\$\+<=>\^~\|`]+",
            "<sentinel:[0-9]+>",
            "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
            "([\\t\\n]|    |  )",
            r"[\p{P}!-/:-@\[-`{-~]",
            r"\s+",
        ] {
            assert_eq!(vet_pattern(pattern), Ok(()), "{pattern}");
        }
    }

    /// A `tokenizer.json` written from a GGUF tokenizer (as the CLI's tests do) must load
    /// again: every regex of every recipe passes.
    #[test]
    fn every_gguf_recipe_regex_is_accepted() {
        for pre in [
            "default",
            "llama3",
            "qwen2",
            "smollm",
            "gpt-2",
            "falcon",
            "dbrx",
            "stablelm2",
        ] {
            for re in PreTokenizerRecipe::for_pre(pre).unwrap().regexes {
                assert_eq!(vet_pattern(re), Ok(()), "{pre}: {re}");
            }
        }
    }

    #[test]
    fn backtracking_constructs_are_refused_with_their_name() {
        for (pattern, what) in [
            (HOSTILE, "look-around"),
            (r"a(?!b)", "look-around"),
            (r"(?<=a)b", "look-around"),
            (r"(?<!a)b", "look-around"),
            (r"(a+)\1", "backreference"),
            (r"(?>a|ab)c", "atomic group"),
            (r"a++b", "possessive"),
            (r"a\Kb", r"\K"),
            (r"\Ga", r"\G"),
            (r"\bword\b", "word boundary"),
            (r"(a)?(?(1)b|c)", "backreference"),
            // One character off a known pattern is an unknown one.
            (&format!("{}|x", KNOWN_PATTERNS[0].1), "look-around"),
        ] {
            let e = vet_pattern(pattern).unwrap_err();
            assert!(e.contains(what), "{pattern}: {e}");
        }
    }

    #[test]
    fn large_programs_and_long_patterns_are_refused() {
        let e = vet_pattern(r"(?:\p{L}{100}){100}").unwrap_err();
        assert!(e.contains("within 1048576 bytes"), "{e}");
        let e = vet_pattern(&"a".repeat(MAX_PATTERN_BYTES + 1)).unwrap_err();
        assert!(e.contains("over the limit"), "{e}");
        assert_eq!(vet_pattern(&"a".repeat(MAX_PATTERN_BYTES)), Ok(()));
    }

    #[test]
    fn the_whole_pipeline_is_walked() {
        let split = |re: &str| serde_json::json!({"type": "Split", "pattern": {"Regex": re}, "behavior": "Isolated", "invert": false});
        let nested = serde_json::json!({
            "normalizer": {"type": "Sequence", "normalizers": [
                {"type": "Replace", "pattern": {"String": "(?=x)"}, "content": " "},
            ]},
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                split(r"\p{N}{1,3}"),
                {"type": "Sequence", "pretokenizers": [split(HOSTILE)]},
            ]},
            "model": {"type": "BPE", "vocab": {"Regex": 0}, "merges": []},
        });
        let e = Pipeline::vetted(nested.to_string().as_bytes()).unwrap_err();
        match &e {
            ModelError::UnsafeTokenizer { at, .. } => {
                assert_eq!(
                    at,
                    "pre_tokenizer.pretokenizers[1].pretokenizers[0].pattern.Regex"
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(e.kind(), "UnsafeTokenizer");
        for part in ["normalizer", "decoder", "post_processor"] {
            let json = serde_json::json!({ part: {"type": "Replace", "pattern": {"Regex": HOSTILE}, "content": ""} });
            let e = Pipeline::vetted(json.to_string().as_bytes()).unwrap_err();
            assert!(e.to_string().contains(part), "{e}");
        }
        // A second `pre_tokenizer` key is refused rather than read differently from
        // `tokenizers`.
        let twice = format!(
            r#"{{"pre_tokenizer": {}, "pre_tokenizer": {}}}"#,
            split(r"\s+"),
            split(HOSTILE)
        );
        assert!(Pipeline::vetted(twice.as_bytes()).is_err());
    }
}
