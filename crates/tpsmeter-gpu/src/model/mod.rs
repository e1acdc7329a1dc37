//! What a model is, as loaded on the GPU: its weights, quantized as stored and fused at load
//! ([`gpu_weights`]), for the hyper-parameters `tpsmeter_model::config` reads from GGUF
//! metadata.
//!
//! What it does not do: run the model (the forward graph and the steps are
//! `runtime/`'s, the CPU backend's weights `cpu/`'s).

pub mod gpu_weights;
