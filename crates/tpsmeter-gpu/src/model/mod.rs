//! What a model is, as loaded: its hyper-parameters read from GGUF metadata ([`config`]) and
//! its weights on the GPU, quantized as stored and fused at load ([`gpu_weights`]).
//!
//! What it does not do: run the model (the forward graph and the steps are
//! [`crate::runtime`]'s, the CPU backend's weights [`crate::cpu`]'s).

pub mod config;
pub mod gpu_weights;

pub use config::{Activation, Architecture, LlamaConfig, ModelConfig, RopeLayout, SlidingWindow};
