//! [`ModelOptions`]: how to load a model (its KV cache's size, its slots, sampling and
//! chaining), shared by the GPU and CPU backends.

use crate::config::ModelConfig;
use crate::sample::SamplerConfig;

/// Context used when the caller asks for none: long enough for chats and the benchmark's
/// 2048-token decode, small enough that the f32 cache of a 1B model stays under 1 GiB.
pub const DEFAULT_MAX_CONTEXT: usize = 4096;

/// Most sequences one model decodes as a batch (the `pos` buffer and the batch activations are sized for it; beyond a few dozen a small model's step is bound
/// by compute, not by the weight reads batching shares).
pub const MAX_SLOTS: usize = 32;

/// How to load a model.
#[derive(Debug, Clone)]
pub struct ModelOptions {
    /// KV cache positions per sequence (capped at the model's trained context).
    pub max_context: usize,
    /// Sequences the KV cache holds at once, each with `max_context` positions: 1 for one
    /// conversation, more for batched serving (see `batch.rs`). At most [`MAX_SLOTS`].
    pub slots: usize,
    /// Sampling settings until a backend's `set_sampling` changes them.
    pub sampling: SamplerConfig,
    /// Store keys and values as f16 where that is the faster layout (CPU-type adapters:
    /// the GPU's `KvStore::TextureF16`), as llama.cpp does by default; `false`
    /// keeps them f32, exact, at about 1.3x the attention time of a long decode there.
    pub kv_f16: bool,
    /// Decode steps kept submitted ahead of the id read back (`chain.rs`); `None`: the
    /// adapter's default (`tpsmeter_gpu::runtime::default_in_flight`).
    pub in_flight: Option<usize>,
    /// With more than one slot: most tokens of one mixed batched step (a server's
    /// `--step-tokens`), whose every size the GPU's `GpuModel::compile` prepares; 0 prepares only the
    /// power-of-two sizes prompts run in.
    pub step_tokens: usize,
}

impl ModelOptions {
    /// Sequences a model holds: `slots` within 1 ..= [`MAX_SLOTS`] (every backend's rule).
    pub fn slot_count(&self) -> usize {
        self.slots.clamp(1, MAX_SLOTS)
    }

    /// Positions per sequence: `max_context` within 1 ..= the model's trained context.
    pub fn positions(&self, cfg: &ModelConfig) -> usize {
        self.max_context.clamp(1, cfg.context_length)
    }
}

impl Default for ModelOptions {
    fn default() -> Self {
        Self {
            max_context: DEFAULT_MAX_CONTEXT,
            slots: 1,
            sampling: SamplerConfig::default(),
            kv_f16: true,
            in_flight: None,
            step_tokens: 0,
        }
    }
}
