//! The inference engine: a GGUF model on the GPU, run token by token.
//!
//! What it does: uploads a Llama-family model's weights quantized ([`crate::model::weights`]),
//! allocates a static KV cache, prepares the decode step (one command buffer, one submit,
//! 4 bytes read back per token) and chunked prefill graphs (matrix-matrix kernels), all
//! compiled while the model loads (`warm.rs`), samples on
//! the GPU, and drives the generation loop ([`crate::generate`]) with its tokenizer and chat
//! template ([`Engine`]), from a whole file or from a download as it arrives ([`EngineLoader`]).
//!
//! It also decodes several sequences as one batch, each in its own slot of the KV cache
//! (`batch.rs`), for a server to schedule.
//!
//! What it does not do: load files or read clocks itself (callers pass bytes and a clock),
//! choose which requests share a batch, or serve HTTP (the CLI does).

mod batch;
#[cfg(not(target_arch = "wasm32"))]
mod batched;
mod chain;
pub mod cost;
mod forced;
pub(crate) mod loader;
pub mod model;
mod prefill;
#[cfg(not(target_arch = "wasm32"))]
mod profile;
mod prompt;
pub(crate) mod readback;
mod session;
mod slots;
pub(crate) mod step;
pub mod target;
mod token_span;
pub mod warm;

#[cfg(not(target_arch = "wasm32"))]
pub use batched::Batched;
pub use chain::{MAX_IN_FLIGHT, default_in_flight};
pub use cost::{CostMark, CostReport, Phase, PhaseTotals, StepClock, StepCost};
pub use forced::ForcedStep;
pub use loader::{EngineLoader, FileChecks};
pub use model::{DEFAULT_MAX_CONTEXT, GpuModel, MAX_SLOTS, ModelOptions, PREFILL_CHUNK, StepStats};
pub use readback::TOKEN_BYTES;
pub use session::{Backend, Engine, Prompts};
pub use step::StepPart;
pub use target::{GpuTarget, LoadTarget};
pub use token_span::TokenSpan;
pub use warm::{CompileProgress, CompileReport};
