//! A plain-Rust f32 forward pass for the supported architectures (Llama, Qwen2, Gemma 3),
//! built on the crate's CPU dequantizers: the oracle the GPU forward pass must match.
//!
//! What it does: dequantize every weight to f32 once at load, then run one token at a time
//! with a KV cache, returning logits per position. What it does not do: anything fast
//! (no threads, no SIMD intrinsics, no batching); it is for tests.

pub mod f32_weights;
pub mod forward;
/// The plain f32 operations, on the model floor (the CPU backend runs them too).
pub use tpsmeter_model::ops;

pub use f32_weights::Weights;
pub use forward::{KvCache, ReferenceModel, argmax};
