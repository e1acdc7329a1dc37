//! tpsmeter's local inference engine: the backends, on the model floor (`tpsmeter-model`).
//!
//! What it does: takes what `tpsmeter-model` reads (GGUF, quantized blocks, the tokenizer,
//! the chat template, the generation loop), keeps the weights quantized on the GPU, and runs
//! the forward pass with its own WGSL compute kernels through wgpu, natively (Vulkan, Metal,
//! DX12) and on WebGPU in the browser with the same kernels; or, where there is no usable
//! GPU, on the CPU ([`cpu`]) with threads and SIMD, on the same blocks.
//!
//! Where things are: [`model`] is what a model is, as loaded (its hyper-parameters and its
//! weights on the GPU); [`runtime`] runs it on the GPU ([`runtime::GpuModel`]: the forward
//! graph, decode and prefill steps, batched slots) with the WGSL [`kernels`] on the [`gpu`]
//! device; [`cpu`] is the CPU backend; [`engine`] puts a model of either backend together
//! with its tokenizer and chat template behind the generation loop
//! (`tpsmeter_model::generate`); [`reference`](mod@reference) is the plain f32 forward pass
//! the others are tested against.
//!
//! What it does not do: parse files or text itself (`tpsmeter-model` does), networking,
//! clocks of its own beyond what the caller supplies for timestamps, or any UI.

pub mod backend;
/// The CPU backend, its own crate (`tpsmeter-cpu`), under the engine's name for it.
pub use tpsmeter_cpu as cpu;
pub mod engine;
pub mod error;
pub mod gpu;
pub mod kernels;
pub mod model;
pub mod probe;
pub mod reference;
pub mod runtime;
pub mod synthetic;

pub use error::{GpuError, Result};
