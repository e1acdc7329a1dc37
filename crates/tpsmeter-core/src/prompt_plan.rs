//! The prompt of each request of a run: unique by default, so that no server answers one
//! from its prompt cache.
//!
//! Servers that cache prompt prefixes (vLLM and SGLang by default, llama.cpp's
//! `cache_prompt`, the big APIs' prompt caching) skip the prefill of a prompt they have seen.
//! A run that sent one prompt over and over measured the cached TTFT, worst of all for the
//! long inputs users most want measured. So each request's prompt starts with a *mark*
//! unique to the request:
//!
//! ```text
//! [run 3f9a1c2b #17] <the prompt>
//! ```
//!
//! `3f9a1c2b` is the run's id and `17` the request's index in the run (0-based, in order of
//! start, warm-ups included). The mark is about 10 tokens in common BPE vocabularies, counted
//! in the server's `usage.input_tokens`. The run id is random per run, unless a seed is given
//! (`--seed`): then it derives from the seed (and the shard), so the same options and seed
//! send the same bodies, from the CLI and from the browser alike.
//!
//! What stays shared: a chat template's preamble and the system prompt (`--system`) come
//! before the user's message, so a server can still reuse those few tokens.
//!
//! - `--cache-bust off` ([`CacheBust::Off`]) sends identical prompts (no mark), to measure the
//!   cached case on purpose.
//! - `--shared-prefix N` puts N tokens of synthesised text before the mark: every request
//!   shares exactly that prefix and differs after it, which measures prefix caching on
//!   purpose. With `--input-tokens T` the N tokens are the first N of the T (T > N).
//!
//! No I/O: the caller supplies the entropy for a random run id.

use serde::{Deserialize, Serialize};

use crate::dataset::{Dataset, Draw};
use crate::error::{CoreError, Result};
use crate::options::BenchOptions;
use crate::prompt;
use crate::request::Message;
use crate::shard::Shard;

/// How the prompts of a run differ from one another.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum CacheBust {
    /// Each prompt starts with a mark unique to its request (the default).
    #[default]
    Prefix,
    /// Every request sends the same prompt.
    Off,
}

impl CacheBust {
    /// The CLI's and the browser's spelling: `prefix` or `off`.
    pub fn parse(s: &str) -> Result<CacheBust> {
        match s {
            "prefix" | "on" => Ok(CacheBust::Prefix),
            "off" => Ok(CacheBust::Off),
            other => Err(CoreError::InvalidSpec {
                what: "cache bust",
                input: other.chars().take(40).collect(),
                reason: "must be prefix (a unique mark per request) or off".into(),
            }),
        }
    }
}

/// What one request sends beyond the run's common settings (URL, model, key, …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestInput {
    /// The conversation; the mark, when prompts are marked, starts its first user message.
    pub messages: Vec<Message>,
    /// The request's own output cap (a dataset's), instead of the run's `max_tokens`.
    pub max_tokens: Option<u32>,
    /// The request's own system text (a dataset entry's), instead of the run's `system`.
    pub system: Option<String>,
}

/// The prompts of one run (or one shard of it).
#[derive(Debug, Clone, PartialEq)]
pub struct PromptPlan {
    bust: CacheBust,
    /// Text before the mark, the same in every request (`--shared-prefix`).
    shared: String,
    /// Text after the mark.
    rest: String,
    /// The run's id in the mark.
    run_id: u32,
    /// Each request's messages drawn from a dataset instead (see [`crate::dataset`]).
    dataset: Option<Draw>,
}

impl PromptPlan {
    /// The plan for `options` on `shard` (`None`: the whole run). `entropy` makes the run id
    /// when the options give no seed: any random number the caller has.
    pub fn new(options: &BenchOptions, shard: Option<Shard>, entropy: u64) -> Result<PromptPlan> {
        check_shared_prefix(options)?;
        let text = options.prompt_text()?;
        let (shared, rest) = match options.shared_prefix {
            None => (String::new(), text),
            Some(n) => match (options.prompt.as_deref(), options.input_tokens) {
                (None, Some(_)) => split_words(&text, n),
                _ => (prompt::synthesize(n), text),
            },
        };
        let run_id = match options.prompt_seed() {
            Some(seed) => mix(shard.map_or(seed, |s| s.seed(seed))),
            None => mix(entropy),
        };
        Ok(PromptPlan {
            bust: options.cache_bust,
            shared,
            rest,
            run_id: (run_id >> 32) as u32,
            dataset: None,
        })
    }

    /// This plan with each request's messages, system text and output cap drawn from
    /// `dataset` (the mark, when prompts are marked, still starts the first user message).
    /// `options` and `shard` as given to [`PromptPlan::new`].
    pub fn with_dataset(
        mut self,
        dataset: Dataset,
        options: &BenchOptions,
        shard: Option<Shard>,
    ) -> Result<PromptPlan> {
        let draw = Draw::new(dataset, options, shard, u64::from(self.run_id))?;
        self.dataset = Some(draw);
        Ok(self)
    }

    /// The dataset requests are drawn from, when the run has one.
    pub fn dataset(&self) -> Option<&Dataset> {
        self.dataset.as_ref().map(Draw::dataset)
    }

    /// The prompt of the request with index `index` (the driver's ticket id).
    pub fn prompt(&self, index: u64) -> String {
        let mut out = String::with_capacity(self.shared.len() + self.rest.len() + 24);
        out.push_str(&self.shared);
        if !out.is_empty() {
            out.push(' ');
        }
        if self.bust == CacheBust::Prefix {
            out.push_str(&self.mark(index));
            out.push(' ');
        }
        out.push_str(&self.rest);
        out
    }

    /// What request `index` sends: its prompt as one user message.
    pub fn input(&self, index: u64) -> RequestInput {
        if let Some(draw) = &self.dataset {
            let mark = (self.bust == CacheBust::Prefix).then(|| self.mark(index));
            return draw.input(index, mark.as_deref());
        }
        RequestInput {
            messages: vec![Message::user(self.prompt(index))],
            max_tokens: None,
            system: None,
        }
    }

    /// Whether every request sends the same input (then one body serves them all).
    pub fn is_constant(&self) -> bool {
        self.bust == CacheBust::Off && self.dataset.is_none()
    }

    /// The mark of request `index` (see the module docs).
    pub fn mark(&self, index: u64) -> String {
        format!("[run {:08x} #{index}]", self.run_id)
    }

    /// The run id as the marks write it, when prompts are marked.
    pub fn run_id(&self) -> Option<String> {
        (self.bust == CacheBust::Prefix).then(|| format!("{:08x}", self.run_id))
    }

    pub fn cache_bust(&self) -> CacheBust {
        self.bust
    }
}

/// Checks `shared_prefix` against the other options: the one check, which
/// [`BenchOptions::validate`] and [`PromptPlan::new`] both make.
pub(crate) fn check_shared_prefix(options: &BenchOptions) -> Result<()> {
    let Some(n) = options.shared_prefix else {
        return Ok(());
    };
    let bad = |reason: String| CoreError::InvalidSpec {
        what: "shared prefix",
        input: n.to_string(),
        reason,
    };
    if options.cache_bust == CacheBust::Off {
        return Err(bad(
            "needs cache busting on: with identical prompts every request shares all of its prompt"
                .into(),
        ));
    }
    if n == 0 || n > prompt::MAX_SYNTH_TOKENS {
        return Err(bad("must be a token count from 1".into()));
    }
    if let (None, Some(t)) = (&options.prompt, options.input_tokens) {
        if n >= t {
            return Err(bad(format!("must be below the input token count ({t})")));
        }
    }
    Ok(())
}

/// The first `n` (from 1, fewer than the text has) and the remaining words of a synthesised
/// prompt.
fn split_words(text: &str, n: u32) -> (String, String) {
    // Synthesised text is one space between words (see `prompt::synthesize`).
    let cut = text
        .match_indices(' ')
        .nth(n as usize - 1)
        .map_or(text.len(), |(i, _)| i);
    (text[..cut].to_owned(), text[cut..].trim_start().to_owned())
}

/// SplitMix64's finaliser: spreads a seed's bits over the whole word.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn options() -> BenchOptions {
        BenchOptions {
            prompt: Some("Hello there".into()),
            ..crate::options::tests::options()
        }
    }

    #[test]
    fn every_request_has_its_own_mark_before_the_prompt() {
        let plan = PromptPlan::new(&options(), None, 42).unwrap();
        let (a, b) = (plan.prompt(0), plan.prompt(1));
        assert_ne!(a, b);
        let id = plan.run_id().unwrap();
        assert_eq!(a, format!("[run {id} #0] Hello there"));
        assert!(b.starts_with(&format!("[run {id} #1] ")));
        // The first characters already differ: no shared cacheable prefix beyond "[run ".
        let other = PromptPlan::new(&options(), None, 43).unwrap();
        assert_ne!(other.prompt(0), a, "another run, another id");
    }

    #[test]
    fn off_sends_the_same_prompt() {
        let o = BenchOptions {
            cache_bust: CacheBust::Off,
            ..options()
        };
        let plan = PromptPlan::new(&o, None, 1).unwrap();
        assert_eq!(plan.prompt(0), "Hello there");
        assert_eq!(plan.prompt(5), "Hello there");
        assert_eq!(plan.run_id(), None);
    }

    #[test]
    fn a_seed_fixes_the_run_id_and_shards_differ() {
        let o = BenchOptions {
            seed: Some(7),
            ..options()
        };
        let a = PromptPlan::new(&o, None, 1).unwrap();
        let b = PromptPlan::new(&o, None, 2).unwrap();
        assert_eq!(a.prompt(3), b.prompt(3), "same seed, same prompts");
        let s0 = PromptPlan::new(&o, Some(Shard::new(0, 2).unwrap()), 1).unwrap();
        let s1 = PromptPlan::new(&o, Some(Shard::new(1, 2).unwrap()), 1).unwrap();
        assert_ne!(
            s0.prompt(0),
            s1.prompt(0),
            "shards of one run never share a mark"
        );
    }

    #[test]
    fn shared_prefix_comes_before_the_mark() {
        let o = BenchOptions {
            prompt: None,
            input_tokens: Some(100),
            shared_prefix: Some(40),
            ..options()
        };
        let plan = PromptPlan::new(&o, None, 9).unwrap();
        let (a, b) = (plan.prompt(0), plan.prompt(1));
        let full = prompt::synthesize(100);
        let words: Vec<&str> = full.split(' ').collect();
        let shared = words[..40].join(" ");
        assert!(a.starts_with(&format!("{shared} [run ")), "{a}");
        assert!(b.starts_with(&format!("{shared} [run ")));
        assert!(a.ends_with(&words[40..].join(" ")));
        // 100 words in all, plus the mark's three.
        assert_eq!(a.split(' ').count(), 103);
        let bad = BenchOptions {
            shared_prefix: Some(100),
            ..o
        };
        assert!(PromptPlan::new(&bad, None, 1).is_err());
    }

    #[test]
    fn parse_names_the_choices() {
        assert_eq!(CacheBust::parse("off").unwrap(), CacheBust::Off);
        assert_eq!(CacheBust::parse("prefix").unwrap(), CacheBust::Prefix);
        let e = CacheBust::parse("sometimes").unwrap_err().to_string();
        assert!(e.contains("prefix") && e.contains("off"), "{e}");
    }
}
