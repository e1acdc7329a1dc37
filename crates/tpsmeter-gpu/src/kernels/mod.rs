//! WGSL compute kernels and their ops. Each op checks shapes and types, then prepares
//! dispatches once (pipelines from the cache, bind groups, parameters) so a decode step only
//! encodes them. Each kernel has a plain-Rust twin of the same name in [`twins`].

pub mod attention;
pub mod dispatch;
pub mod elementwise;
pub mod embed;
pub mod format;
pub mod kv;
pub mod kv_append;
pub mod matmul;
pub mod matvec;
pub mod positions;
pub mod qweight;
pub mod rms_norm;
pub mod rope;
pub mod rope_kv;
pub mod sample;
pub mod softmax;
pub mod source;
pub mod tensor;
pub mod twins;

pub use attention::{Attention, AttentionConfig};
pub use dispatch::Dispatch;
pub use elementwise::{Add, Glu, GluKind};
pub use embed::Embed;
pub use format::WeightFormat;
pub use kv::{KvSlab, KvStore};
pub use kv_append::KvAppend;
pub use matmul::{GpuMatMul, MatMul};
pub use matvec::{MatVec, MatVecOptions, MatVecVariant, NormFold};
pub use positions::{batch_positions, positions};
pub use qweight::{QWeight, WeightStore};
pub use rms_norm::RmsNorm;
pub use rope::{Rope, RopeConfig, RopeLayout};
pub use rope_kv::{HeadExtras, RopeKv, RopeKvConfig};
pub use sample::Sampler;
pub use softmax::Softmax;
pub use tensor::Tensor;
