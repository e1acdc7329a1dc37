//! The one error type of the CPU backend. The engine turns it into its own
//! (`tpsmeter_gpu::GpuError`) variant for variant, so a page or a client sees the same names
//! whichever backend ran.

use tpsmeter_model::ModelError;

/// What can go wrong running a model on the CPU.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CpuError {
    /// An operation got tensors whose shapes or types do not fit together.
    #[error("{op}: {detail}")]
    ShapeMismatch { op: &'static str, detail: String },
    /// The thread pool could not start.
    #[error("CPU thread pool: {reason}")]
    ThreadPool { reason: String },
    /// Reading the model, or a request against it, failed (the model floor's checks).
    #[error(transparent)]
    Model(#[from] ModelError),
}

impl CpuError {
    /// A stable name for callers that branch on the kind of failure (the engine's names:
    /// `ShapeMismatch` is a bug here, named as the GPU's are, `CpuError`).
    pub fn kind(&self) -> &'static str {
        match self {
            CpuError::ShapeMismatch { .. } => "CpuError",
            CpuError::ThreadPool { .. } => "ThreadPool",
            CpuError::Model(e) => e.kind(),
        }
    }
}

/// Shorthand used throughout the crate.
pub type Result<T, E = CpuError> = std::result::Result<T, E>;
