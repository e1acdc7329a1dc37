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

use crate::dataset::{Dataset, Draw};
use crate::error::{CoreError, Result};
use crate::message::Message;
use crate::prompt;
use crate::seed::mix;
use crate::shard::Shard;
use crate::spec::BenchOptions;
use crate::spec::CacheBust;
use crate::synth::{Lengths, Vocabulary, Words};
use crate::tokens::TokenCounter;

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
    /// Text before the mark, the same in every request (`--shared-prefix`): given text, or
    /// the first words of `Text::Synth`'s.
    shared: String,
    text: Text,
    /// The run's id in the mark.
    run_id: u32,
    /// Seeds the draws of request lengths (`--input-tokens MEAN:STDEV`).
    seed: u64,
    /// Each request's messages drawn from a dataset instead (see [`crate::dataset`]).
    dataset: Option<Draw>,
}

/// What follows the mark.
#[derive(Debug, Clone, PartialEq)]
enum Text {
    /// The same text in every request: a given prompt or the default.
    Fixed(String),
    /// Synthesised words, cut to each request's length.
    Synth {
        words: Words,
        lengths: Lengths,
        /// Words of `words` that make the shared prefix.
        shared_words: u32,
        /// Whether a tokenizer chose the words (then the mark is counted too, and lengths
        /// are exact).
        counted: bool,
    },
}

impl PromptPlan {
    /// The plan for `options` on `shard` (`None`: the whole run). `entropy` makes the run id
    /// when the options give no seed: any random number the caller has. `counter`, when the
    /// run has a tokenizer, makes synthesised prompts exactly `input_tokens` long (see
    /// [`crate::synth`]); it must be the one later passed to [`PromptPlan::input`].
    pub fn new(
        options: &BenchOptions,
        shard: Option<Shard>,
        entropy: u64,
        counter: Option<&dyn TokenCounter>,
    ) -> Result<PromptPlan> {
        options.check_shared_prefix()?;
        let seed = match options.prompt_seed() {
            Some(seed) => mix(shard.map_or(seed, |s| s.seed(seed))),
            None => mix(entropy),
        };
        let (shared, text) = match (options.prompt.as_deref(), options.input_lengths()) {
            (None, Some(lengths)) => {
                let vocabulary = match counter {
                    Some(c) => Vocabulary::counted(c)?,
                    None => Vocabulary::estimate(),
                };
                let words = vocabulary.words(lengths.max(), true);
                let shared_words = options.shared_prefix.unwrap_or(0);
                let shared = words.first(shared_words).to_owned();
                let text = Text::Synth {
                    words,
                    lengths,
                    shared_words,
                    counted: counter.is_some(),
                };
                (shared, text)
            }
            _ => {
                let shared = options.shared_prefix.map(prompt::synthesize);
                (
                    shared.unwrap_or_default(),
                    Text::Fixed(options.prompt_text()?),
                )
            }
        };
        let plan = PromptPlan {
            bust: options.cache_bust,
            shared,
            text,
            run_id: (seed >> 32) as u32,
            seed,
            dataset: None,
        };
        plan.check_room(counter)?;
        Ok(plan)
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

    /// With a tokenizer, a synthesised prompt must have room for its shared prefix and mark:
    /// a request asked shorter than those could not be honoured.
    fn check_room(&self, counter: Option<&dyn TokenCounter>) -> Result<()> {
        let (Some(c), Text::Synth { lengths, .. }) = (counter, &self.text) else {
            return Ok(());
        };
        let Some(mark) = self.bust.eq(&CacheBust::Prefix).then(|| self.mark(0)) else {
            return Ok(());
        };
        let fixed = c.count(format!("{} {mark}", self.shared).trim_start())?;
        if lengths.mean <= fixed {
            return Err(CoreError::InvalidSpec {
                what: "input token count",
                input: lengths.mean.to_string(),
                reason: format!(
                    "the shared prefix and the unique mark already take {fixed} tokens: ask \
                     for more, or send identical prompts (cache bust off)"
                ),
            });
        }
        Ok(())
    }

    /// The prompt of the request with index `index` (the driver's ticket id). `counter`:
    /// the run's tokenizer, as given to [`PromptPlan::new`].
    pub fn prompt(&self, index: u64, counter: Option<&dyn TokenCounter>) -> Result<String> {
        let mark = (self.bust == CacheBust::Prefix).then(|| self.mark(index));
        let rest = match &self.text {
            Text::Fixed(text) => text.as_str(),
            Text::Synth {
                words,
                lengths,
                shared_words,
                counted,
            } => {
                let want = lengths.draw(self.seed, index);
                let mark_tokens = match (&mark, counter) {
                    (Some(mark), Some(c)) if *counted => {
                        if self.shared.is_empty() {
                            c.count(mark)?
                        } else {
                            crate::synth::spaced_cost(c, mark)?
                        }
                    }
                    _ => 0,
                };
                let n = want.saturating_sub(shared_words + mark_tokens);
                words.between(*shared_words, shared_words + n)
            }
        };
        let mut out = String::with_capacity(self.shared.len() + rest.len() + 24);
        out.push_str(&self.shared);
        for part in [mark.as_deref().unwrap_or(""), rest] {
            if part.is_empty() {
                continue;
            }
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(part);
        }
        Ok(out)
    }

    /// A later turn's user message in a multi-turn run (see the `conversations` module):
    /// synthesised words of a length drawn as the first message's are (no mark: the
    /// conversation's first message has it), or, for a given prompt, a plain follow-up.
    pub fn follow_up(&self, conversation: u64, turn: u32) -> String {
        const FOLLOW_UPS: [&str; 4] = [
            "Go on, in more detail.",
            "Now summarise what you said so far, then add something new.",
            "Give an example of that.",
            "What would someone who disagrees say?",
        ];
        match &self.text {
            Text::Fixed(_) => FOLLOW_UPS[(turn as usize) % FOLLOW_UPS.len()].to_owned(),
            Text::Synth {
                words,
                lengths,
                shared_words,
                ..
            } => {
                let n = lengths.draw(self.seed ^ u64::from(turn).rotate_left(32), conversation);
                words.between(*shared_words, shared_words + n).to_owned()
            }
        }
    }

    /// What request `index` sends: its prompt as one user message.
    pub fn input(&self, index: u64, counter: Option<&dyn TokenCounter>) -> Result<RequestInput> {
        if let Some(draw) = &self.dataset {
            let mark = (self.bust == CacheBust::Prefix).then(|| self.mark(index));
            return draw.input(index, mark.as_deref(), counter);
        }
        Ok(RequestInput {
            messages: vec![Message::user(self.prompt(index, counter)?)],
            max_tokens: None,
            system: None,
        })
    }

    /// Whether every request sends the same input (then one body serves them all).
    pub fn is_constant(&self) -> bool {
        let same_length = match &self.text {
            Text::Fixed(_) => true,
            Text::Synth { lengths, .. } => lengths.stdev == 0,
        };
        self.bust == CacheBust::Off && same_length && self.dataset.is_none()
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
        let plan = PromptPlan::new(&options(), None, 42, None).unwrap();
        let (a, b) = (plan.prompt(0, None).unwrap(), plan.prompt(1, None).unwrap());
        assert_ne!(a, b);
        let id = plan.run_id().unwrap();
        assert_eq!(a, format!("[run {id} #0] Hello there"));
        assert!(b.starts_with(&format!("[run {id} #1] ")));
        // The first characters already differ: no shared cacheable prefix beyond "[run ".
        let other = PromptPlan::new(&options(), None, 43, None).unwrap();
        assert_ne!(other.prompt(0, None).unwrap(), a, "another run, another id");
    }

    #[test]
    fn off_sends_the_same_prompt() {
        let o = BenchOptions {
            cache_bust: CacheBust::Off,
            ..options()
        };
        let plan = PromptPlan::new(&o, None, 1, None).unwrap();
        assert_eq!(plan.prompt(0, None).unwrap(), "Hello there");
        assert_eq!(plan.prompt(5, None).unwrap(), "Hello there");
        assert_eq!(plan.run_id(), None);
    }

    #[test]
    fn a_seed_fixes_the_run_id_and_shards_differ() {
        let o = BenchOptions {
            seed: Some(7),
            ..options()
        };
        let a = PromptPlan::new(&o, None, 1, None).unwrap();
        let b = PromptPlan::new(&o, None, 2, None).unwrap();
        assert_eq!(
            a.prompt(3, None).unwrap(),
            b.prompt(3, None).unwrap(),
            "same seed, same prompts"
        );
        let s0 = PromptPlan::new(&o, Some(Shard::new(0, 2).unwrap()), 1, None).unwrap();
        let s1 = PromptPlan::new(&o, Some(Shard::new(1, 2).unwrap()), 1, None).unwrap();
        assert_ne!(
            s0.prompt(0, None).unwrap(),
            s1.prompt(0, None).unwrap(),
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
        let plan = PromptPlan::new(&o, None, 9, None).unwrap();
        let (a, b) = (plan.prompt(0, None).unwrap(), plan.prompt(1, None).unwrap());
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
        assert!(PromptPlan::new(&bad, None, 1, None).is_err());
    }

    #[test]
    fn parse_names_the_choices() {
        assert_eq!(CacheBust::parse("off").unwrap(), CacheBust::Off);
        assert_eq!(CacheBust::parse("prefix").unwrap(), CacheBust::Prefix);
        let e = CacheBust::parse("sometimes").unwrap_err().to_string();
        assert!(e.contains("prefix") && e.contains("off"), "{e}");
    }

    /// Counts words, and a mark's digits one token each (as many tokenizers do).
    struct DigitCounter;
    impl TokenCounter for DigitCounter {
        fn count(&self, text: &str) -> Result<u32> {
            Ok(text
                .split_whitespace()
                .map(|w| 1 + w.chars().filter(char::is_ascii_digit).count() as u32)
                .sum())
        }
        fn name(&self) -> &str {
            "digits"
        }
    }

    #[test]
    fn with_a_tokenizer_every_prompt_has_its_exact_length_mark_included() {
        let counter = DigitCounter;
        for (shared, stdev) in [(None, None), (Some(30), None), (Some(30), Some(20))] {
            let o = BenchOptions {
                prompt: None,
                input_tokens: Some(100),
                input_tokens_stdev: stdev,
                shared_prefix: shared,
                seed: Some(3),
                ..options()
            };
            let plan = PromptPlan::new(&o, None, 0, Some(&counter)).unwrap();
            let lengths = o.input_lengths().unwrap();
            for i in [0, 7, 123, 10_000] {
                let p = plan.prompt(i, Some(&counter)).unwrap();
                assert!(p.contains(&plan.mark(i)), "{p}");
                let want = lengths.draw(plan.seed, i);
                assert_eq!(
                    counter.count(&p).unwrap(),
                    want,
                    "{shared:?} {stdev:?} #{i}: {p}"
                );
            }
            if stdev.is_some() {
                assert!(!plan.is_constant());
                let n = |i| {
                    counter
                        .count(&plan.prompt(i, Some(&counter)).unwrap())
                        .unwrap()
                };
                assert!((0..20).any(|i| n(i) != n(0)), "lengths vary");
            }
        }
        // Without the tokenizer the mark comes on top: the estimate of before.
        let o = BenchOptions {
            prompt: None,
            input_tokens: Some(100),
            ..options()
        };
        let plan = PromptPlan::new(&o, None, 0, None).unwrap();
        assert_eq!(plan.prompt(5, None).unwrap().split(' ').count(), 103);
    }
}
