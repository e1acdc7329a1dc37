//! tpsmeter's local inference engine.
//!
//! What it does: reads GGUF models, keeps their quantized weights quantized on the GPU, and
//! runs the forward pass with its own WGSL compute kernels through wgpu, natively (Vulkan,
//! Metal, DX12) and on WebGPU in the browser with the same kernels; or, where there is no
//! usable GPU, on the CPU ([`cpu`]) with threads and SIMD, on the same blocks.
//!
//! What it does not do: networking, clocks of its own beyond what the caller supplies for
//! timestamps, or any UI.

pub mod chat;
pub mod cpu;
pub mod detok;
pub mod engine;
pub mod error;
pub mod generate;
pub mod gguf;
pub mod gpu;
pub mod kernels;
pub mod model;
pub mod probe;
pub mod quant;
pub mod reference;
pub mod synthetic;
pub mod tokenizer;

pub use error::{GpuError, Result};
