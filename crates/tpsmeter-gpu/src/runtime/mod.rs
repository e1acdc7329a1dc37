//! The GPU runtime: what runs a loaded model ([`crate::model`]) on one device, token by token.
//!
//! What it does: [`GpuModel`] holds a model's weights on the GPU with a static KV cache and
//! the GPU sampler, and prepares the forward graph ([`graph`]: every layer as prepared
//! dispatches, with its activations and KV cache) for the decode step (one command buffer,
//! one submit, 4 bytes read back per token: `readback.rs`) and for chunked prefill
//! (matrix-matrix kernels: `prompt.rs`, cancellably `prefill.rs`), all compiled while the
//! model loads (`warm.rs`); it keeps decode steps chained on the device (`chain.rs`), counts
//! what each step costs the host (`cost.rs`), and times each kind of kernel for the engine
//! benchmark (`profile.rs`, native only).
//!
//! It also decodes several sequences as one batch, each in its own slot of the KV cache
//! (`batch.rs`, `slots.rs`), with prompt chunks of new sequences in the same step
//! (`mixed_step.rs`), for a server to schedule.
//!
//! What it does not do: parse GGUF metadata or upload weights ([`crate::model`]), tokenize,
//! apply chat templates or drive the generation loop (`engine/`), read a clock of its
//! own on the web (callers pass one), or choose which requests share a batch.

mod batch;
mod chain;
pub mod cost;
pub mod gpu_model;
pub mod graph;
pub(crate) mod mixed_step;
mod prefill;
#[cfg(not(target_arch = "wasm32"))]
mod profile;
mod prompt;
pub(crate) mod readback;
mod slots;
pub mod warm;

pub use chain::{MAX_IN_FLIGHT, default_in_flight};
pub use cost::{CostMark, CostReport, Phase, PhaseTotals, StepClock, StepCost};
pub use gpu_model::{GpuModel, PREFILL_CHUNK, StepStats};
pub use mixed_step::StepPart;
pub use readback::TOKEN_BYTES;
pub use warm::{CompileProgress, CompileReport};
