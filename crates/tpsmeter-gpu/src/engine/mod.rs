//! The inference engine: a loaded model with its tokenizer and chat template, generating
//! text.
//!
//! What it does: builds an [`Engine`] from a whole GGUF file or from a download as it arrives
//! ([`EngineLoader`]), into the GPU or the CPU ([`LoadTarget`]), and drives the generation
//! loop ([`tpsmeter_model::generate`]) over either backend's model ([`Backend`]:
//! [`crate::runtime::GpuModel`] or [`crate::cpu::CpuModel`]), streaming (token id, text
//! piece, timestamp). It also feeds a model given tokens to compare engines past near-ties
//! ([`ForcedStep`]), bounds a text's token count by its length
//! ([`TokenSpan`](tpsmeter_model::tokenizer::TokenSpan)), and names
//! what a server's scheduler needs of a model that runs several sequences at once
//! (`Batched`, native only).
//!
//! What it does not do: run the forward pass ([`crate::runtime`] on the GPU, [`crate::cpu`]
//! on the CPU), load files or read clocks itself (callers pass bytes and a clock), choose
//! which requests share a batch, or serve HTTP (the CLI does).

#[cfg(not(target_arch = "wasm32"))]
mod batched;
mod forced;
pub(crate) mod loader;
mod session;
pub mod target;

pub use crate::backend::{Backend, LoadTarget};
#[cfg(not(target_arch = "wasm32"))]
pub use batched::Batched;
pub use forced::ForcedStep;
pub use loader::{EngineLoader, FileChecks};
pub use session::{Engine, Prompts};
pub use target::GpuTarget;
