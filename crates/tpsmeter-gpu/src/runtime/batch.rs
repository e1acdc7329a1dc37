//! Batched decoding for serving: several sequences ("slots") share one model and one KV
//! cache (slot `s` owns cache rows `s * max_context ..`), and one decode step runs the next
//! token of each running sequence at once.
//!
//! Why: a decode step of a small model reads every weight once whatever the number of tokens
//! it carries, so B sequences in one step cost little more than one (the matrix kernels
//! dequantize each weight block once for all B rows). Per token, RoPE, the KV append and
//! attention read each token's own position and cache rows from the `pos` buffer; sampling
//! runs per slot with its own settings and state (each slot has its own sampler and a copy of
//! its logits row).
//!
//! A slot's prompt runs in the same chunks, through the same prefill graphs, as
//! [`GpuModel::submit_step`]; a step of one sequence runs the one-token decode graph, as
//! `submit_step` does. A step of several runs the matrix-matrix kernels, whose per-row sums
//! are those of the matrix-vector kernels (same block order, same f32 accumulation), so a
//! sequence's tokens do not depend on what else is in the batch (tested against a run alone).
//!
//! What it does not do: choose which requests run (the caller schedules: see
//! `tpsmeter serve`), or share a prefix between slots.

use std::collections::HashMap;
use tpsmeter_model::ModelError;

use crate::error::{GpuError, Result};
use crate::gpu::defines::DType;
use crate::kernels::{Sampler, Tensor, batch_positions, positions};
use tpsmeter_model::sample::SamplerConfig;

use super::cost::Phase;
use super::graph::{self, Activations};

use super::gpu_model::{GpuModel, decode_graph, record, write};
use super::prompt::Sample;
use super::readback::TOKEN_BYTES;
use super::slots::{BatchState, Slot};

impl GpuModel {
    /// Sequences the KV cache holds at once ([`ModelOptions::slots`](tpsmeter_model::options::ModelOptions::slots)).
    pub fn slots(&self) -> usize {
        self.kv.slots
    }

    /// The tokens whose keys and values `slot` holds (empty for an unused slot).
    pub fn slot_history(&self, slot: usize) -> &[u32] {
        self.batch
            .as_ref()
            .and_then(|b| b.slots.get(slot))
            .and_then(Option::as_ref)
            .map_or(&[], |s| &s.history[..])
    }

    /// Forgets what every slot holds (after a failed step, when the rows' contents are
    /// unknown): the next prompt of each runs in full.
    pub fn forget_slots(&mut self) {
        if let Some(b) = self.batch.as_mut() {
            for slot in 0..b.slots.len() {
                b.forget_slot(slot);
            }
        }
        self.history.clear();
        self.last_sampled = None;
    }

    pub(super) fn batch_state(&mut self) -> Result<&mut BatchState> {
        // Batched steps share the readback and the cache rows of slot 0 with the one-sequence
        // path: its chained steps end here.
        self.discard_in_flight();
        if self.batch.is_none() {
            let n = self.kv.slots;
            let act = Activations::new(&self.ctx, &self.cfg, n, DType::F32)?;
            let logits = Tensor::zeros(
                &self.ctx,
                "batch logits",
                n * self.cfg.vocab_size,
                DType::F32,
            )?;
            self.batch = Some(BatchState {
                act,
                logits,
                graphs: HashMap::new(),
                slots: (0..n).map(|_| None).collect(),
                pending: Vec::new(),
                step_heads: HashMap::new(),
            });
        }
        self.batch
            .as_mut()
            .ok_or(GpuError::from(ModelError::BatchState {
                reason: "batch state",
            }))
    }

    pub(super) fn check_slot(&self, slot: usize) -> Result<()> {
        if slot >= self.kv.slots {
            return Err(GpuError::from(ModelError::LimitExceeded {
                what: "sequence slot".into(),
                value: slot as u64,
                limit: self.kv.slots as u64 - 1,
            }));
        }
        Ok(())
    }

    /// Runs prompt `tokens` of `slot` at positions `start..` (entries from `start` on are
    /// overwritten; `start` at most what the slot holds). With `sample`, the work that samples
    /// the token after the last of them with `sampling` is submitted too, and
    /// [`GpuModel::read_slots`] returns it; without, the call only fills the cache (a long
    /// prompt's earlier chunks, run between decode steps so other sequences keep flowing).
    pub fn submit_slot_prompt(
        &mut self,
        slot: usize,
        tokens: &[u32],
        start: usize,
        sampling: &SamplerConfig,
        sample: bool,
    ) -> Result<()> {
        self.check_slot(slot)?;
        self.check_tokens(tokens, start, self.slot_history(slot).len())?;
        self.cost.begin(&self.stats);
        let ctx = self.ctx.clone();
        let s = self.claim_slot(slot, start, sampling)?;
        s.history.extend_from_slice(tokens);
        if sample {
            let written = s.sampler.reset(&ctx, 0, &s.history);
            self.stats.bytes_written += written;
        }
        let base = self.kv.base(slot);
        if let ([token], true) = (tokens, sample) {
            // One token (a prompt the slot held all but the last of): the one-token decode
            // graph, as `submit_step` runs a call of one token.
            return self.submit_one(slot, *token, (start, base));
        }
        let who = if sample {
            Sample::Slot(slot)
        } else {
            Sample::Nothing
        };
        self.submit_prompt(tokens, start, base, who)?;
        self.stats.tokens += tokens.len() as u64;
        Ok(())
    }

    /// Makes `slot` hold positions `..start` only and sample with `sampling` from then on,
    /// so that its next [`GpuModel::submit_slots`] entry runs the token at position `start`
    /// and samples the one after it: a prompt whose last token is all that is left to run
    /// (a repeated prompt, a chat's next turn) joins a decode step instead of taking a step
    /// of its own. `start` must be at least 1 and at most what the slot holds.
    pub fn rewind_slot(
        &mut self,
        slot: usize,
        start: usize,
        sampling: &SamplerConfig,
    ) -> Result<()> {
        self.check_slot(slot)?;
        tpsmeter_model::step::check_rewind(start, self.slot_history(slot).len())?;
        self.claim_slot(slot, start, sampling)?;
        Ok(())
    }

    /// The bookkeeping of a slot's new prompt from `start`: the slot's sampler matches
    /// `sampling` (made anew when it changed), its history ends at `start`, nothing sampled
    /// is pending; slot 0's rows are the single-sequence path's too, which forgets them.
    pub(super) fn claim_slot(
        &mut self,
        slot: usize,
        start: usize,
        sampling: &SamplerConfig,
    ) -> Result<&mut Slot> {
        if slot == 0 {
            // The single-sequence path shares slot 0's rows.
            self.history.clear();
            self.last_sampled = None;
        }
        let vocab = self.cfg.vocab_size;
        let ctx = self.ctx.clone();
        let b = self.batch_state()?;
        let fresh = match &b.slots[slot] {
            Some(s) => s.sampling != *sampling,
            None => true,
        };
        if fresh {
            let logits = match b.slots[slot].take() {
                Some(s) => s.logits,
                None => Tensor::zeros(&ctx, &format!("slot {slot} logits"), vocab, DType::F32)?,
            };
            let sampler = Sampler::new(&ctx, sampling, &logits, vocab)?;
            b.slots[slot] = Some(Slot {
                sampler,
                sampling: *sampling,
                logits,
                history: Vec::new(),
                last_sampled: None,
            });
        }
        let Some(s) = b.slots[slot].as_mut() else {
            return Err(GpuError::from(ModelError::BatchState {
                reason: "slot state",
            }));
        };
        s.history.truncate(start);
        s.last_sampled = None;
        Ok(s)
    }

    /// Runs `token` of `slot` at `(position, base row)` through the one-token graph, as
    /// `submit_step` runs a call of one token, and samples with the slot's sampler.
    fn submit_one(
        &mut self,
        slot: usize,
        token: u32,
        (position, base): (usize, usize),
    ) -> Result<()> {
        let (q, s) = (&self.ctx.queue, &mut self.stats);
        let pos = positions(position, 1, base);
        write(s, q, &self.pos.buffer, bytemuck::cast_slice(&pos));
        write(
            s,
            q,
            &self.decode_act.tokens.buffer,
            bytemuck::bytes_of(&token),
        );
        let mut enc = self.ctx.encoder("one token");
        let layers = decode_graph(&self.decode, self.decode_short.as_deref(), position);
        record(&mut self.stats, &mut enc, &[layers, &self.head]);
        let logits = self.logits.buffer.clone();
        self.sample_slots(&mut enc, &[slot], &logits)?;
        self.ctx.submit(enc);
        self.stats.submits += 1;
        self.stats.tokens += 1;
        self.cost.end(Phase::Decode, &self.stats, 1);
        Ok(())
    }

    /// Copies logits row `i` of `logits` to slot `slots[i]`'s copy, samples each slot and
    /// copies the ids to the readback, in order.
    pub(super) fn sample_slots(
        &mut self,
        enc: &mut wgpu::CommandEncoder,
        slots: &[usize],
        logits: &wgpu::Buffer,
    ) -> Result<()> {
        let row = (self.cfg.vocab_size * 4) as u64;
        let Some(b) = self.batch.as_mut() else {
            return Err(GpuError::from(ModelError::BatchState {
                reason: "batch state",
            }));
        };
        let mut samplers = Vec::with_capacity(slots.len());
        for (i, &slot) in slots.iter().enumerate() {
            let Some(s) = b.slots[slot].as_ref() else {
                return Err(GpuError::from(ModelError::BatchState {
                    reason: "slot state",
                }));
            };
            enc.copy_buffer_to_buffer(logits, i as u64 * row, &s.logits.buffer, 0, row);
            samplers.push(s.sampler.dispatch().clone());
        }
        record(&mut self.stats, enc, &[&samplers]);
        for (i, &slot) in slots.iter().enumerate() {
            if let Some(s) = b.slots[slot].as_ref() {
                self.readback.encode_at(enc, &s.sampler.token, i);
            }
        }
        b.pending = slots.to_vec();
        Ok(())
    }

    /// Submits one decode step: for each `(slot, token)`, `token` runs at the slot's next
    /// position and the slot samples its next id; [`GpuModel::read_slots`] returns them in
    /// this order. Each slot at most once; every slot must have had a prompt.
    pub fn submit_slots(&mut self, steps: &[(usize, u32)]) -> Result<()> {
        if steps.is_empty() {
            return Err(GpuError::from(ModelError::EmptyPrompt));
        }
        let n = steps.len();
        let places = self.decode_places(steps, &[])?;
        self.cost.begin(&self.stats);
        self.advance_decodes(steps)?;
        let ctx = self.ctx.clone();
        if let ([(slot, token)], [place]) = (steps, &places[..]) {
            // One sequence: the one-token graph, exactly as `submit_step` runs it.
            return self.submit_one(*slot, *token, *place);
        }
        let pos = batch_positions(&places);
        let tokens: Vec<u32> = steps.iter().map(|&(_, t)| t).collect();
        let slots: Vec<usize> = steps.iter().map(|&(s, _)| s).collect();
        self.batch_graph(n)?;
        let Some(b) = self.batch.as_mut() else {
            return Err(GpuError::from(ModelError::BatchState {
                reason: "batch state",
            }));
        };
        let (q, s) = (&ctx.queue, &mut self.stats);
        write(s, q, &self.pos.buffer, bytemuck::cast_slice(&pos));
        write(s, q, &b.act.tokens.buffer, bytemuck::cast_slice(&tokens));
        let (layers, head) = b.graphs.remove(&n).unwrap_or_default();
        let logits = b.logits.buffer.clone();
        let mut enc = self.ctx.encoder("batched decode");
        record(&mut self.stats, &mut enc, &[&layers, &head]);
        if let Some(b) = self.batch.as_mut() {
            b.graphs.insert(n, (layers, head));
        }
        self.sample_slots(&mut enc, &slots, &logits)?;
        self.ctx.submit(enc);
        self.stats.submits += 1;
        self.stats.tokens += n as u64;
        self.cost.end(Phase::Decode, &self.stats, n as u64);
        Ok(())
    }

    /// Checks decode `steps` (each slot at most once, also not among `others`; ids in the
    /// vocabulary; every slot with a prompt and a free position) and returns each token's
    /// (position, cache base).
    pub(super) fn decode_places(
        &self,
        steps: &[(usize, u32)],
        others: &[usize],
    ) -> Result<Vec<(usize, usize)>> {
        let (max_ctx, vocab) = (self.kv.max_ctx, self.cfg.vocab_size);
        let mut places = Vec::with_capacity(steps.len());
        for (i, &(slot, token)) in steps.iter().enumerate() {
            self.check_slot(slot)?;
            if steps[..i].iter().any(|&(s, _)| s == slot) || others.contains(&slot) {
                return Err(GpuError::ShapeMismatch {
                    op: "batched decode",
                    detail: format!("slot {slot} appears twice in one step"),
                });
            }
            if token as usize >= vocab {
                return Err(GpuError::from(ModelError::TokenOutOfRange { token, vocab }));
            }
            let held = self.slot_history(slot).len();
            if held == 0 {
                return Err(GpuError::from(ModelError::BatchState {
                    reason: "decode step for a slot without a prompt",
                }));
            }
            if held >= max_ctx {
                return Err(GpuError::from(ModelError::ContextFull {
                    position: held + 1,
                    limit: max_ctx,
                }));
            }
            places.push((held, self.kv.base(slot)));
        }
        Ok(places)
    }

    /// The bookkeeping of checked decode `steps`: each token joins its slot's history, and a
    /// token other than the one sampled last restarts the slot's sampler state.
    pub(super) fn advance_decodes(&mut self, steps: &[(usize, u32)]) -> Result<()> {
        let ctx = self.ctx.clone();
        let mut written = 0;
        let b = self.batch_state()?;
        for &(slot, token) in steps {
            let Some(s) = b.slots[slot].as_mut() else {
                return Err(GpuError::from(ModelError::BatchState {
                    reason: "slot state",
                }));
            };
            let continuation = s.last_sampled == Some(token);
            s.history.push(token);
            s.last_sampled = None;
            if !continuation {
                written += s.sampler.reset(&ctx, 0, &s.history);
            }
        }
        self.stats.bytes_written += written;
        Ok(())
    }

    /// Prepares the layers and head for a batched step of `n` sequences.
    pub(super) fn batch_graph(&mut self, n: usize) -> Result<()> {
        self.batch_state()?;
        let Some(b) = self.batch.as_ref() else {
            return Err(GpuError::from(ModelError::BatchState {
                reason: "batch state",
            }));
        };
        if b.graphs.contains_key(&n) {
            return Ok(());
        }
        let shared = self.shared();
        let layers = graph::layers(&self.ctx, &shared, &b.act, n, true)?;
        let head = graph::head(&self.ctx, &shared, &b.act, &b.logits, n)?;
        if let Some(b) = self.batch.as_mut() {
            b.graphs.insert(n, (layers, head));
        }
        Ok(())
    }

    /// Waits for the step submitted last ([`GpuModel::submit_slots`], or a prompt with
    /// `sample`) and returns its sampled ids, in the order of its slots.
    pub async fn read_slots(&mut self) -> Result<Vec<u32>> {
        let pending = match self.batch.as_mut() {
            Some(b) => std::mem::take(&mut b.pending),
            None => Vec::new(),
        };
        if pending.is_empty() {
            return Err(GpuError::from(ModelError::BatchState {
                reason: "no sampled tokens pending",
            }));
        }
        let ids = self.readback.read_n(&self.ctx, pending.len()).await?;
        self.stats.readback_bytes += TOKEN_BYTES * ids.len() as u64;
        self.cost.read_back(TOKEN_BYTES * ids.len() as u64);
        if let Some(b) = self.batch.as_mut() {
            for (&slot, &id) in pending.iter().zip(&ids) {
                if let Some(s) = b.slots[slot].as_mut() {
                    s.last_sampled = Some(id);
                }
            }
        }
        Ok(ids)
    }

    /// Native: [`GpuModel::read_slots`], blocking.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn read_slots_blocking(&mut self) -> Result<Vec<u32>> {
        pollster::block_on(self.read_slots())
    }
}
