//! [`Generator`]: the loop from prompt ids to streamed, timestamped text.

use super::cancel::CancelToken;
use super::prefix::reusable_prefix;
use super::sequence::Sequence;
use super::token_step::TokenStep;
use crate::tokenizer::Tokenizer;
use crate::{ModelError, Result};

/// What to generate.
#[derive(Debug, Clone, Default)]
pub struct GenerateParams {
    /// Most tokens sampled, the end-of-generation token included.
    pub max_tokens: usize,
    /// Texts that end generation; never shown.
    pub stop_strings: Vec<String>,
    /// More ids that end generation, besides the model's own end-of-generation tokens.
    pub stop_tokens: Vec<u32>,
    /// Keep going past end-of-generation tokens (benchmarks that need exactly `max_tokens`).
    pub ignore_eos: bool,
}

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The model sampled an end-of-generation token (not shown as text).
    EndOfGeneration {
        token: u32,
    },
    /// Stop string number `index` appeared in the text.
    StopString {
        index: usize,
    },
    MaxTokens,
    Cancelled,
    /// The KV cache is full: no position is left for the next token.
    ContextFull,
}

/// One streamed piece of output.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenEvent {
    /// The sampled id; `None` for the final flush of text held back at the end.
    pub token: Option<u32>,
    /// Text that became showable with this token (may be empty: half a character, or text
    /// held back as the possible start of a stop string).
    pub text: String,
    /// The caller's clock when the id came back from the model, in the clock's unit.
    pub time: f64,
}

/// The result of one [`Generator::generate`] call.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    pub prompt_tokens: usize,
    /// Prompt positions whose KV entries were kept from the previous turn.
    pub reused_tokens: usize,
    /// Every sampled id, in order (the end-of-generation token included).
    pub tokens: Vec<u32>,
    /// The caller's clock when each of `tokens` came back.
    pub token_times: Vec<f64>,
    /// All the text streamed.
    pub text: String,
    pub stop: StopReason,
    /// The clock before the prompt was run: `token_times[0] - start` is the time to first
    /// token, prefill included.
    pub start: f64,
    pub end: f64,
}

/// Drives a [`TokenStep`] model and remembers what its KV cache holds between calls.
#[derive(Debug)]
pub struct Generator<M> {
    model: M,
    /// Tokens whose keys/values sit in the cache, position by position.
    cached: Vec<u32>,
}

impl<M: TokenStep> Generator<M> {
    pub fn new(model: M) -> Self {
        Self {
            model,
            cached: Vec::new(),
        }
    }

    pub fn model(&self) -> &M {
        &self.model
    }

    /// The model, for changes that leave its cache valid (sampling settings). Call
    /// [`Generator::forget_cache`] after anything that does not.
    pub fn model_mut(&mut self) -> &mut M {
        &mut self.model
    }

    pub fn into_model(self) -> M {
        self.model
    }

    /// The tokens whose KV entries the cache holds.
    pub fn cached_tokens(&self) -> &[u32] {
        &self.cached
    }

    /// Treats the cache as empty: the next prompt runs in full.
    pub fn forget_cache(&mut self) {
        self.cached.clear();
    }

    /// Generates from `prompt`, calling `on_event` with each piece of text as it becomes
    /// showable. `clock` is read once before the prompt runs, once per sampled token and at the
    /// end. A prompt longer than the context is [`ModelError::ContextFull`]; reaching the limit
    /// while generating ends with [`StopReason::ContextFull`], keeping what was generated.
    /// `cancel` is checked after every token and between the chunks of a long prompt, so a
    /// cancellation (from another task while this one awaits the model) stops it within one
    /// token or one prompt chunk.
    pub async fn generate(
        &mut self,
        tokenizer: &Tokenizer,
        prompt: &[u32],
        params: &GenerateParams,
        cancel: &CancelToken,
        clock: &mut dyn FnMut() -> f64,
        on_event: &mut dyn FnMut(&TokenEvent),
    ) -> Result<Generation, M::Error> {
        let limit = self.model.max_context();
        if prompt.is_empty() {
            return Err(ModelError::EmptyPrompt.into());
        }
        if prompt.len() > limit {
            return Err(ModelError::ContextFull {
                position: prompt.len(),
                limit,
            }
            .into());
        }
        if let Some(&bad) = prompt
            .iter()
            .find(|&&t| t as usize >= tokenizer.vocab_size())
        {
            return Err(ModelError::TokenOutOfRange {
                token: bad,
                vocab: tokenizer.vocab_size(),
            }
            .into());
        }
        let keep = reusable_prefix(&self.cached, prompt);
        let start = clock();
        let mut seq = Sequence::new(tokenizer, params, prompt.len(), keep, start)?;
        if seq.end_early(cancel.is_cancelled()) {
            return Ok(seq.finish(clock()).1);
        }

        // Entries past `keep` are about to be overwritten: forget them first, so an error in
        // the step leaves the bookkeeping true.
        self.cached.truncate(keep);
        // A long prompt runs in chunks and stops between them once cancelled: what it left
        // in the cache past `keep` is not counted as cached.
        let Some(mut next) = self
            .model
            .step_cancellable(&prompt[keep..], keep, cancel)
            .await?
        else {
            seq.end_early(true);
            return Ok(seq.finish(clock()).1);
        };
        self.cached.extend_from_slice(&prompt[keep..]);

        let depth = self.model.in_flight().max(1);
        // Chained steps submitted beyond the one whose id comes next.
        let mut ahead = 0usize;
        loop {
            let token = next;
            let time = clock();
            if let Some(event) = seq.push(token, time)? {
                on_event(&event);
            }
            let position = self.cached.len();
            if !seq.check(cancel.is_cancelled(), position, limit) {
                // Steps queued past the end are computed and never read.
                if ahead > 0 {
                    self.model.discard();
                }
                break;
            }
            if depth == 1 {
                next = self.model.step(&[token], position).await?;
                self.cached.push(token);
                continue;
            }
            let read = match self.advance(token, position, &mut ahead, depth, &seq, limit) {
                Ok(()) => self.model.read().await,
                Err(e) => Err(e),
            };
            // A failed step leaves nothing in flight worth reading.
            next = read.inspect_err(|_| self.model.discard())?;
        }
        let (flush, out) = seq.finish(clock());
        if let Some(event) = flush {
            on_event(&event);
        }
        Ok(out)
    }

    /// The chained loop's step for `token` at `position`: submitted now unless a chained
    /// step already runs it, then more chained steps behind it, up to `depth` in flight, as
    /// long as the ids they sample can still be wanted (within `max_tokens` and the cache).
    fn advance(
        &mut self,
        token: u32,
        position: usize,
        ahead: &mut usize,
        depth: usize,
        seq: &Sequence<'_>,
        limit: usize,
    ) -> Result<(), M::Error> {
        if *ahead == 0 {
            self.model.submit(token, position)?;
        } else {
            *ahead -= 1;
        }
        self.cached.push(token);
        // Ids sampled so far, and what the steps in flight will add: one per step.
        let sampled = seq.sampled();
        let max = seq.max_tokens();
        while *ahead + 1 < depth && sampled + *ahead + 2 <= max && position + *ahead + 1 < limit {
            self.model.chain()?;
            *ahead += 1;
        }
        Ok(())
    }
}
