//! The per-sequence state of batched decoding (`batch.rs`, `step.rs`): each slot's sampler,
//! logits row and history, and the buffers a batch needs. Held by [`super::GpuModel`] as data
//! only, so the model and the batch code both depend on it and not on each other.

use std::collections::HashMap;

use super::graph::Activations;
use crate::kernels::{Dispatch, Sampler, Tensor};
use tpsmeter_model::sample::SamplerConfig;

/// One sequence's state.
#[derive(Debug)]
pub(super) struct Slot {
    pub(super) sampler: Sampler,
    pub(super) sampling: SamplerConfig,
    /// The slot's copy of its logits row (the sampler's input).
    pub(super) logits: Tensor,
    /// Tokens whose keys and values the slot's rows hold, by position.
    pub(super) history: Vec<u32>,
    pub(super) last_sampled: Option<u32>,
}

/// Buffers of batched decoding, made on first use (a model that never batches pays nothing).
#[derive(Debug)]
pub struct BatchState {
    /// Activations for up to `slots` tokens.
    pub(super) act: Activations,
    /// Logits of a batched step, `[slots, vocab]`.
    pub(super) logits: Tensor,
    /// Per batch size (2 ..= slots): layers, then head.
    pub(super) graphs: HashMap<usize, (Vec<Dispatch>, Vec<Dispatch>)>,
    pub(super) slots: Vec<Option<Slot>>,
    /// Slots of the last submitted step, in readback order.
    pub(super) pending: Vec<usize>,
    /// Output head of a mixed step (`step.rs`) per count of rows that sample (1 ..= slots),
    /// on the prefill activations.
    pub(super) step_heads: HashMap<usize, Vec<Dispatch>>,
}

impl BatchState {
    /// Forgets what `slot` holds (its rows were overwritten by another path).
    pub(super) fn forget_slot(&mut self, slot: usize) {
        if let Some(Some(s)) = self.slots.get_mut(slot) {
            s.history.clear();
            s.last_sampled = None;
        }
    }
}
