//! Mixed steps for serving (chunked prefill, as vLLM schedules it): one engine step carries
//! the next token of every running sequence together with prompt chunks of new ones, up to
//! [`PREFILL_CHUNK`](super::PREFILL_CHUNK) tokens in all, so that a burst of new requests prefills together (their
//! first tokens come out together) while the running streams keep flowing.
//!
//! Why it works: RoPE, the KV append and attention read each token's own (position, cache
//! base) pair from the `pos` buffer, and every layer appends the keys and values of all the
//! step's tokens before its attention reads them, so the tokens of one step may come from any
//! sequences, in any order, and a prompt's chunk may have any length. The step runs the
//! prefill graph of its token count (built once per count, cached) and the output head only
//! on the rows that sample: those come first in the step (the decode tokens, then each
//! finishing prompt's last token), the rest of the prompt tokens after them.
//!
//! A sequence's tokens do not depend on what else is in the step: the matrix kernels' per-row
//! sums do not depend on the other rows (see `batch.rs`), and attention is per token. Only on
//! CPU-type adapters, with a cache longer than the split chunk, a decode token in a mixed
//! step goes through the one-pass attention kernel rather than the split decode one: the
//! same sums in another order, so its logits may differ in the last bits from a decode step.
//! A step with no prompt tokens is a plain batched decode step ([`GpuModel::submit_slots`]).

use crate::error::{GpuError, Result};
use crate::kernels::batch_positions;
use tpsmeter_model::ModelError;

use super::cost::Phase;
use super::gpu_model::{GpuModel, record, write};
use super::graph;
pub use tpsmeter_model::step::StepPart;
use tpsmeter_model::step::step_tokens;

impl GpuModel {
    /// Submits one step of `parts` (each slot at most once, at most [`PREFILL_CHUNK`](super::PREFILL_CHUNK) tokens
    /// in all) and returns how many ids it samples: [`GpuModel::read_slots`] returns them in
    /// the order of the parts that sample (every `Decode`, and each `Prompt` with `sample`).
    /// With none (prompt chunks that only fill the cache) nothing is to be read.
    pub fn submit_mixed(&mut self, parts: &[StepPart<'_>]) -> Result<usize> {
        let n = step_tokens(parts)?;
        let decodes: Vec<(usize, u32)> = parts
            .iter()
            .filter_map(|p| match *p {
                StepPart::Decode { slot, token } => Some((slot, token)),
                StepPart::Prompt { .. } => None,
            })
            .collect();
        if decodes.len() == parts.len() {
            // Decode tokens only: the batched decode step, exactly.
            self.submit_slots(&decodes)?;
            return Ok(decodes.len());
        }
        // Everything is checked before any slot's state changes, so a refused step leaves
        // every slot as it was.
        let prompt_slots: Vec<usize> = parts
            .iter()
            .filter(|p| matches!(p, StepPart::Prompt { .. }))
            .map(StepPart::slot)
            .collect();
        for p in parts {
            if let StepPart::Prompt {
                slot,
                tokens,
                start,
                ..
            } = *p
            {
                self.check_slot(slot)?;
                self.check_tokens(tokens, start, self.slot_history(slot).len())?;
            }
        }
        if let Some(i) =
            (1..prompt_slots.len()).find(|&i| prompt_slots[..i].contains(&prompt_slots[i]))
        {
            return Err(twice(prompt_slots[i]));
        }
        let decode_places = self.decode_places(&decodes, &prompt_slots)?;

        // Rows: the sampling rows first (the head runs on the first rows only), in the order
        // of their parts; then the prompt tokens that only fill the cache.
        let mut first: Vec<(u32, (usize, usize))> = Vec::new();
        let mut rest: Vec<(u32, (usize, usize))> = Vec::new();
        let sampling_slots: Vec<usize> = parts
            .iter()
            .filter(|p| p.samples())
            .map(StepPart::slot)
            .collect();
        let mut places = decode_places.into_iter();
        for p in parts {
            match *p {
                StepPart::Decode { token, .. } => {
                    let place = places.next().ok_or(GpuError::from(ModelError::BatchState {
                        reason: "decode place",
                    }))?;
                    first.push((token, place));
                }
                StepPart::Prompt {
                    slot,
                    tokens,
                    start,
                    sample,
                    ..
                } => {
                    let base = self.kv.base(slot);
                    for (i, &t) in tokens.iter().enumerate() {
                        let row = (t, (start + i, base));
                        if sample && i + 1 == tokens.len() {
                            first.push(row);
                        } else {
                            rest.push(row);
                        }
                    }
                }
            }
        }

        // The slots' bookkeeping, as `submit_slot_prompt` and `submit_slots` keep it.
        self.cost.begin(&self.stats);
        let ctx = self.ctx.clone();
        for p in parts {
            if let StepPart::Prompt {
                slot,
                tokens,
                start,
                sampling,
                sample,
            } = *p
            {
                let s = self.claim_slot(slot, start, sampling)?;
                s.history.extend_from_slice(tokens);
                if sample {
                    let written = s.sampler.reset(&ctx, 0, &s.history);
                    self.stats.bytes_written += written;
                }
            }
        }
        self.advance_decodes(&decodes)?;

        let k = first.len();
        let rows: Vec<(u32, (usize, usize))> = first.into_iter().chain(rest).collect();
        let tokens: Vec<u32> = rows.iter().map(|&(t, _)| t).collect();
        let places: Vec<(usize, usize)> = rows.iter().map(|&(_, p)| p).collect();
        self.prefill_graph(n)?;
        if k > 0 {
            self.step_head(k)?;
        }
        let (q, st) = (&ctx.queue, &mut self.stats);
        let pos = batch_positions(&places);
        write(st, q, &self.pos.buffer, bytemuck::cast_slice(&pos));
        write(
            st,
            q,
            &self.prefill_act.tokens.buffer,
            bytemuck::cast_slice(&tokens),
        );
        let mut enc = ctx.encoder("mixed step");
        let layers = self.prefill.remove(&n).unwrap_or_default();
        let b = self.batch_state()?;
        let head = b.step_heads.remove(&k).unwrap_or_default();
        let logits = b.logits.buffer.clone();
        record(&mut self.stats, &mut enc, &[&layers, &head]);
        self.prefill.insert(n, layers);
        let b = self.batch_state()?;
        if k > 0 {
            b.step_heads.insert(k, head);
            self.sample_slots(&mut enc, &sampling_slots, &logits)?;
        } else {
            b.pending.clear();
        }
        ctx.submit(enc);
        self.stats.submits += 1;
        self.stats.tokens += n as u64;
        // A step with prompt tokens runs the prefill graphs: counted as prefill.
        self.cost.end(Phase::Prefill, &self.stats, n as u64);
        Ok(k)
    }

    /// Prepares the output head of a mixed step whose first `k` rows sample.
    pub(super) fn step_head(&mut self, k: usize) -> Result<()> {
        if self.batch_state()?.step_heads.contains_key(&k) {
            return Ok(());
        }
        let Some(b) = self.batch.as_ref() else {
            return Err(GpuError::from(ModelError::BatchState {
                reason: "batch state",
            }));
        };
        let head = graph::head(&self.ctx, &self.shared(), &self.prefill_act, &b.logits, k)?;
        self.batch_state()?.step_heads.insert(k, head);
        Ok(())
    }
}

fn twice(slot: usize) -> GpuError {
    GpuError::ShapeMismatch {
        op: "mixed step",
        detail: format!("slot {slot} appears twice in one step"),
    }
}
