//! Plain-Rust twins of the GPU kernels, one function per kernel with the kernel's name.
//! They are the reference the tolerance tests compare against, so they favour clarity
//! (f64 accumulation where a kernel sums) over speed.

mod matvec;
mod ops;
mod rope_kv;

pub use matvec::{matmul, matvec, matvec_fused};
pub use ops::{
    add, attention, embed, gelu_glu, gelu_tanh, kv_append, rms_norm, rope, silu, softmax, swiglu,
};
pub use rope_kv::rope_kv;
// The sampler's twin is the CPU backend's own sampler, on the model floor.
pub use tpsmeter_model::sampler::{sample, uniform01};
