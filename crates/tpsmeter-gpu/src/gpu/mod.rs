//! The wgpu device layer: adapter and device selection, limits, buffer helpers, typed
//! shader defines, the pipeline cache and readback.

pub mod buffers;
pub mod context;
pub mod defines;
pub mod pipelines;

pub use context::{AdapterProfile, ContextOptions, GpuContext};
pub use defines::{DType, Defines};
pub use pipelines::PipelineCache;
