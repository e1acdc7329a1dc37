//! [`Sequence`]: what happens to each sampled id of one generation (end-of-generation and
//! stop tokens, stop strings, `max_tokens`, cancellation, the context limit, streaming
//! detokenization, timestamps), apart from how the ids are computed: the one-sequence loop
//! ([`super::Generator`]) and a server's batched decoding share it, so a batched request ends
//! exactly where the same request run alone would.

use super::controller::{GenerateParams, Generation, StopReason, TokenEvent};
use super::stop::StopMatcher;
use crate::Result;
use crate::detok::Detokenizer;
use crate::tokenizer::Tokenizer;

/// One generation in progress.
#[derive(Debug)]
pub struct Sequence<'t> {
    tokenizer: &'t Tokenizer,
    params: GenerateParams,
    stops: StopMatcher,
    detok: Detokenizer<'t>,
    out: Generation,
    /// A stop string matched (the held-back text is then never shown).
    matched: bool,
    done: bool,
}

impl<'t> Sequence<'t> {
    /// A generation from a prompt of `prompt_tokens` ids, of which `reused_tokens` were kept
    /// in the cache, started at `start` on the caller's clock.
    pub fn new(
        tokenizer: &'t Tokenizer,
        params: &GenerateParams,
        prompt_tokens: usize,
        reused_tokens: usize,
        start: f64,
    ) -> Result<Self> {
        Ok(Self {
            tokenizer,
            params: params.clone(),
            stops: StopMatcher::new(&params.stop_strings)?,
            detok: Detokenizer::new(tokenizer),
            out: Generation {
                prompt_tokens,
                reused_tokens,
                tokens: Vec::new(),
                token_times: Vec::new(),
                text: String::new(),
                stop: StopReason::MaxTokens,
                start,
                end: start,
            },
            matched: false,
            done: false,
        })
    }

    /// Ids taken so far.
    pub fn sampled(&self) -> usize {
        self.out.tokens.len()
    }

    /// Most ids the generation takes.
    pub fn max_tokens(&self) -> usize {
        self.params.max_tokens
    }

    /// Whether the generation has ended (no more ids wanted).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Ends before the first id when nothing is to be generated (`max_tokens` 0) or the
    /// request was cancelled already; true if it ended.
    pub fn end_early(&mut self, cancelled: bool) -> bool {
        if self.params.max_tokens == 0 || cancelled {
            self.out.stop = if cancelled {
                StopReason::Cancelled
            } else {
                StopReason::MaxTokens
            };
            self.done = true;
        }
        self.done
    }

    /// Takes the id sampled at `time`; returns the event to stream (text may be empty), and
    /// ends the generation on an end-of-generation or stop token, a stop string or
    /// `max_tokens`. Then [`Sequence::check`] decides on the rest.
    pub fn push(&mut self, token: u32, time: f64) -> Result<Option<TokenEvent>> {
        self.out.tokens.push(token);
        self.out.token_times.push(time);
        let ends = !self.params.ignore_eos && self.tokenizer.is_end_of_generation(token)
            || self.params.stop_tokens.contains(&token);
        if ends {
            self.out.stop = StopReason::EndOfGeneration { token };
            self.done = true;
            return Ok(None);
        }
        let (text, hit) = self.stops.push(&self.detok.push(token)?);
        self.out.text.push_str(&text);
        let event = TokenEvent {
            token: Some(token),
            text,
            time,
        };
        if let Some(index) = hit {
            self.out.stop = StopReason::StopString { index };
            self.matched = true;
            self.done = true;
        } else if self.out.tokens.len() >= self.params.max_tokens {
            self.out.stop = StopReason::MaxTokens;
            self.done = true;
        }
        Ok(Some(event))
    }

    /// After a token's event was handed on: ends the generation if it was `cancelled`
    /// meanwhile, or if the next id would run at `position`, past the cache's `limit`. True
    /// when another id is wanted.
    pub fn check(&mut self, cancelled: bool, position: usize, limit: usize) -> bool {
        if !self.done {
            if cancelled {
                self.out.stop = StopReason::Cancelled;
                self.done = true;
            } else if position >= limit {
                self.out.stop = StopReason::ContextFull;
                self.done = true;
            }
        }
        !self.done
    }

    /// Ends the generation now (the client went away): the stop reason becomes `Cancelled`
    /// unless it had ended already.
    pub fn cancel(&mut self) {
        if !self.done {
            self.out.stop = StopReason::Cancelled;
            self.done = true;
        }
    }

    /// Finishes at `end` on the caller's clock: returns the final flush of text held back
    /// (an unfinished character, text held for a stop string that can no longer complete),
    /// if any, and the whole generation.
    pub fn finish(mut self, end: f64) -> (Option<TokenEvent>, Generation) {
        let mut flush = None;
        if !self.matched {
            let (tail, hit) = self.stops.push(&self.detok.finish());
            let tail = if hit.is_some() {
                tail
            } else {
                tail + &self.stops.finish()
            };
            if let Some(index) = hit {
                self.out.stop = StopReason::StopString { index };
            }
            if !tail.is_empty() {
                self.out.text.push_str(&tail);
                flush = Some(TokenEvent {
                    token: None,
                    text: tail,
                    time: self
                        .out
                        .token_times
                        .last()
                        .copied()
                        .unwrap_or(self.out.start),
                });
            }
        }
        self.out.end = end;
        (flush, self.out)
    }
}
