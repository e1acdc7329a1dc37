//! The engine's CPU backend: the same models, tokenizer, chat templates, sampling and
//! generation loop as the GPU engine, with the forward pass computed by the CPU.
//!
//! What it does: keeps every weight matrix in its GGUF block format ([`matrix::QMatrix`]:
//! Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, F16, BF16, F32 and anything else the crate
//! dequantizes), multiplies them with activations quantized to 8 bits as llama.cpp's CPU
//! backend does ([`kernels`]), splits every product over a thread pool ([`cpu_runtime`]), and
//! samples with the model floor's sampler (`tpsmeter_model::sampler`, the GPU sampler's
//! twin), so the same seed gives the same stream. Its errors are [`CpuError`].
//!
//! It also runs several sequences at once for serving ([`CpuModel::step_parts`], `slots.rs`),
//! with the GPU model's slot API.
//!
//! What it does not do: anything on a GPU, tokenize or drive the generation loop (the
//! engine, `tpsmeter-gpu`'s `engine`, does, over either backend), or choose between itself and
//! the GPU (callers do, see the CLI's `--backend`).

mod attention;
#[cfg(target_arch = "x86_64")]
mod avx2;
pub mod cpu_model;
pub mod cpu_runtime;
pub mod cpu_weights;
pub mod error;
pub mod f16;
pub mod kernels;
pub mod matrix;
pub mod q8;
#[cfg(target_arch = "wasm32")]
mod simd128;
mod slots;
pub mod target;
pub mod tensors;

pub use cpu_model::{CpuModel, CpuStats, Pause};
#[cfg(target_arch = "wasm32")]
pub use cpu_runtime::set_web_pool;
pub use cpu_runtime::{CpuOptions, CpuRuntime, Simd};
pub use error::{CpuError, Result};
pub use target::CpuTarget;
