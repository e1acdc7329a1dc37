//! Several sequences on one CPU model, for serving: each slot has its own cache and sampler,
//! and one step ([`CpuModel::step_parts`]) runs the next token of every running sequence
//! together with prompt chunks of new ones, in one forward pass.
//!
//! Why: a decode step reads every weight once whatever the number of tokens it carries, and
//! on a CPU that read is the step's cost (a 135M model's decode is bound by memory, not
//! arithmetic), so B sequences in one pass cost little more than one. The API is the GPU
//! model's (`runtime/batch.rs`, `runtime/mixed_step.rs`) with the same rules and errors, so the
//! server's scheduler drives either.
//!
//! A sequence's tokens do not depend on what else is in the step: every matrix kernel sums
//! a token's row in the same order whatever the other tokens (`kernels::dot_tokens` and
//! `dot_one` are the same loop), activations are quantized per token, and attention is per
//! token over its own cache. Tested against each sequence run alone (`tests/engine_burst.rs`).

use std::collections::VecDeque;
use tpsmeter_model::ModelError;

use super::cpu_model::{CpuModel, Row};
use crate::error::{CpuError, Result};
use tpsmeter_model::sample::SamplerConfig;
use tpsmeter_model::sampler::sample;
use tpsmeter_model::step::{StepPart, check_rewind, check_tokens, step_tokens};

/// One sequence: the tokens its cache holds, and its sampler's state (the GPU sampler's
/// twin: a step counter, and the recent tokens the repetition penalty sees, oldest first).
#[derive(Debug, Default)]
pub(super) struct Seq {
    pub history: Vec<u32>,
    pub sampling: SamplerConfig,
    step: u32,
    recent: VecDeque<u32>,
    /// The id sampled last, until a step feeds it back (a continuation of the stream).
    pub last_sampled: Option<u32>,
}

impl Seq {
    /// Samples with `s` from now on; a new setting starts a new random stream, as on the GPU.
    pub fn set_sampling(&mut self, s: SamplerConfig) {
        if s != self.sampling {
            self.last_sampled = None;
        }
        self.sampling = s;
    }

    pub fn forget(&mut self) {
        self.history.clear();
        self.last_sampled = None;
    }

    /// The sampler's state for a step running `tokens` at `start..`: its stream goes on when
    /// the step feeds back the id it sampled last at the end of the history (the GPU model's
    /// rule), and restarts after the step's context otherwise.
    pub fn begin_step(&mut self, tokens: &[u32], start: usize) {
        let continuation = tokens.len() == 1
            && start == self.history.len()
            && self.last_sampled == Some(tokens[0]);
        if !continuation {
            let mut context = self.history[..start].to_vec();
            context.extend_from_slice(tokens);
            self.restart(&context);
        }
        self.last_sampled = None;
    }

    /// Restarts the sampler's stream after `context` (the tokens up to the one sampling).
    fn restart(&mut self, context: &[u32]) {
        let w = self.sampling.penalty_window as usize;
        self.recent = context[context.len().saturating_sub(w)..]
            .iter()
            .copied()
            .collect();
        self.step = 0;
    }

    /// Samples from `logits` (changed in place, as the GPU sampler changes its buffer) with
    /// the twin of the GPU sampler and advances its state.
    pub fn pick(&mut self, logits: &mut [f32]) -> u32 {
        let id = sample(
            &self.sampling,
            logits,
            self.recent.make_contiguous(),
            self.step,
        );
        let w = self.sampling.penalty_window as usize;
        if w > 0 {
            if self.recent.len() == w {
                self.recent.pop_front();
            }
            self.recent.push_back(id);
        }
        self.step = self.step.wrapping_add(1);
        self.last_sampled = Some(id);
        id
    }
}

impl CpuModel {
    /// Sequences the model holds at once ([`tpsmeter_model::options::ModelOptions::slots`]); slot 0 is
    /// also the single-sequence path's.
    pub fn slots(&self) -> usize {
        self.seqs.len()
    }

    /// The tokens whose keys and values `slot` holds (empty for an unused slot).
    pub fn slot_history(&self, slot: usize) -> &[u32] {
        self.seqs.get(slot).map_or(&[], |s| &s.history[..])
    }

    /// Forgets what every slot holds (after a failed step): the next prompt of each runs in
    /// full.
    pub fn forget_slots(&mut self) {
        self.seqs.iter_mut().for_each(Seq::forget);
    }

    fn check_slot(&self, slot: usize) -> Result<()> {
        if slot >= self.seqs.len() {
            return Err(CpuError::from(ModelError::LimitExceeded {
                what: "sequence slot".into(),
                value: slot as u64,
                limit: self.seqs.len() as u64 - 1,
            }));
        }
        Ok(())
    }

    /// Makes `slot` hold positions `..start` only and sample with `sampling` from then on, so
    /// that its next `Decode` part runs the token at `start` (a prompt whose last token is
    /// all that is left to run joins a decode step). `start` at least 1 and at most what the
    /// slot holds.
    pub fn rewind_slot(
        &mut self,
        slot: usize,
        start: usize,
        sampling: &SamplerConfig,
    ) -> Result<()> {
        self.check_slot(slot)?;
        sampling.check()?;
        check_rewind(start, self.seqs[slot].history.len())?;
        self.claim(slot, start, sampling);
        Ok(())
    }

    /// A slot's new prompt from `start`: its sampler matches `sampling`, its history ends at
    /// `start`, nothing sampled is pending.
    fn claim(&mut self, slot: usize, start: usize, sampling: &SamplerConfig) -> &mut Seq {
        let s = &mut self.seqs[slot];
        s.set_sampling(*sampling);
        s.history.truncate(start);
        s.last_sampled = None;
        s
    }

    /// Runs one step of `parts` (each slot at most once, at most
    /// [`tpsmeter_model::step::PREFILL_CHUNK`] tokens in all) in one forward pass and returns the
    /// sampled ids, in the order of the parts that sample (every `Decode`, and each `Prompt`
    /// with `sample`). Everything is checked before any slot changes, so a refused step
    /// leaves every slot as it was.
    pub fn step_parts(&mut self, parts: &[StepPart<'_>]) -> Result<Vec<u32>> {
        let n = step_tokens(parts)?;
        let (limit, vocab) = (self.max_context(), self.config().vocab_size);
        for (i, p) in parts.iter().enumerate() {
            let slot = p.slot();
            self.check_slot(slot)?;
            if parts[..i].iter().any(|q| q.slot() == slot) {
                return Err(CpuError::ShapeMismatch {
                    op: "batched step",
                    detail: format!("slot {slot} appears twice in one step"),
                });
            }
            let held = self.seqs[slot].history.len();
            match *p {
                StepPart::Decode { token, .. } => {
                    if held == 0 {
                        return Err(CpuError::from(ModelError::BatchState {
                            reason: "decode step for a slot without a prompt",
                        }));
                    }
                    check_tokens(&[token], held, held, limit, vocab)?;
                }
                StepPart::Prompt {
                    tokens,
                    start,
                    sampling,
                    ..
                } => {
                    sampling.check()?;
                    check_tokens(tokens, start, held, limit, vocab)?;
                }
            }
        }

        // Rows in the order of the parts; the head runs on each sampling part's last row.
        let mut tokens = Vec::with_capacity(n);
        let mut rows = Vec::with_capacity(n);
        let mut heads = Vec::new();
        let mut sampling_slots = Vec::new();
        for p in parts {
            let slot = p.slot();
            let (run, start): (&[u32], usize) = match p {
                StepPart::Decode { token, .. } => {
                    (std::slice::from_ref(token), self.seqs[slot].history.len())
                }
                StepPart::Prompt { tokens, start, .. } => (tokens, *start),
            };
            tokens.extend_from_slice(run);
            rows.extend((start..start + run.len()).map(|pos| Row { slot, pos }));
            if p.samples() {
                heads.push(tokens.len() - 1);
                sampling_slots.push(slot);
            }
        }

        // The slots' bookkeeping, as the single-sequence path keeps it: a prompt that samples,
        // or a decode token other than the id sampled last, restarts the slot's stream.
        for p in parts {
            match *p {
                StepPart::Decode { slot, token } => {
                    let s = &mut self.seqs[slot];
                    s.begin_step(&[token], s.history.len());
                    s.history.push(token);
                }
                StepPart::Prompt {
                    slot,
                    tokens,
                    start,
                    sampling,
                    sample,
                } => {
                    let s = self.claim(slot, start, sampling);
                    s.history.extend_from_slice(tokens);
                    if sample {
                        let context = s.history.clone();
                        s.restart(&context);
                    }
                }
            }
        }

        let mut logits = match self.forward(&tokens, &rows, &heads) {
            Ok(l) => l,
            Err(e) => {
                // What the step's slots hold is unknown: none of it may be reused.
                for p in parts {
                    self.seqs[p.slot()].forget();
                }
                return Err(e);
            }
        };
        let vocab = self.config().vocab_size;
        Ok(sampling_slots
            .into_iter()
            .zip(logits.chunks_exact_mut(vocab))
            .map(|(slot, l)| self.seqs[slot].pick(l))
            .collect())
    }
}
