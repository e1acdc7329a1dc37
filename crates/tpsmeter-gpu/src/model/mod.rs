//! Model descriptions read from GGUF metadata.

pub mod config;
pub mod llama;

pub use config::{Activation, Architecture, LlamaConfig, ModelConfig, RopeLayout, SlidingWindow};
