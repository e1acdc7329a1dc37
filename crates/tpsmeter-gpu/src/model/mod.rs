//! Model descriptions read from GGUF metadata.

pub mod config;
pub mod graph;
pub mod weights;

pub use config::{Activation, Architecture, LlamaConfig, ModelConfig, RopeLayout, SlidingWindow};
