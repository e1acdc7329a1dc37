//! The one error type of this crate: the device and its kernels, the CPU backend's threads,
//! and, wrapped, what reading the model or a request against it found
//! ([`ModelError`]). Variants carry the offending values so a message names the culprit.

use tpsmeter_model::ModelError;

/// Everything that can go wrong preparing a model on a backend or running it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
    /// No GPU adapter matched the request (none installed, or none with the asked-for name).
    #[error("no GPU adapter found{}", match wanted { Some(w) => format!(" matching {w:?}"), None => String::new() })]
    NoAdapter { wanted: Option<String> },
    /// The adapter refused to create a device.
    #[error("could not create a device on adapter {adapter:?}: {reason}")]
    RequestDevice { adapter: String, reason: String },
    /// The device was lost (driver reset, out of memory on some platforms, tab backgrounded).
    #[error("GPU device lost: {reason}")]
    DeviceLost { reason: String },
    /// The caller stopped the work (a load's compilation, through its progress callback).
    #[error("{what} was cancelled")]
    Cancelled { what: &'static str },
    /// An allocation failed on the GPU.
    #[error("GPU out of memory while {what}")]
    OutOfMemory { what: String },
    /// A wgpu validation error: a bug in this crate (or an adapter limit it did not check).
    #[error("GPU validation error: {message}")]
    Validation { message: String },
    /// An operation got tensors whose shapes or types do not fit together.
    #[error("{op}: {detail}")]
    ShapeMismatch { op: &'static str, detail: String },
    /// One buffer binding would exceed the adapter's `maxStorageBufferBindingSize` (or
    /// `maxBufferSize`) even after splitting.
    #[error("{what} needs {bytes} bytes in one binding, above the adapter limit of {limit}")]
    BindingTooLarge {
        what: String,
        bytes: u64,
        limit: u64,
    },
    /// The adapter lacks a feature the requested kernel variant needs.
    #[error("adapter lacks feature {feature} needed by {what}")]
    MissingFeature { feature: &'static str, what: String },
    /// A tensor format the kernels do not handle.
    #[error("{op} does not support weight format {format}")]
    UnsupportedFormat { op: &'static str, format: String },
    /// Mapping a buffer for readback failed.
    #[error("GPU readback failed: {reason}")]
    Readback { reason: String },
    /// The CPU backend's thread pool could not start.
    #[error("CPU thread pool: {reason}")]
    ThreadPool { reason: String },
    /// Reading the model, its tokenizer or template, or a request against it, failed on the
    /// way to this backend.
    #[error(transparent)]
    Model(#[from] ModelError),
}

impl GpuError {
    /// A stable name for the kind of failure, for callers that branch on it (the browser
    /// engine's `Error.name`): a model's own ([`ModelError::kind`]: `InvalidModel`,
    /// `UnsupportedModel`, `UnsafeTokenizer`, `ChecksumMismatch`, `LimitExceeded`,
    /// `OutOfMemory`, `ContextFull`, `InvalidRequest`), or this backend's: `NoAdapter`,
    /// `RequestDeviceError`, `MissingFeature`, `LimitExceeded` (a device limit),
    /// `OutOfMemory`, `DeviceLost`, `GpuError` (validation or readback: a bug here, or a
    /// driver's), `UnsupportedModel` (a format the kernels lack), `AbortError`, `ThreadPool`.
    pub fn kind(&self) -> &'static str {
        use GpuError::*;
        match self {
            UnsupportedFormat { .. } => "UnsupportedModel",
            NoAdapter { .. } => "NoAdapter",
            RequestDevice { .. } => "RequestDeviceError",
            MissingFeature { .. } => "MissingFeature",
            BindingTooLarge { .. } => "LimitExceeded",
            OutOfMemory { .. } => "OutOfMemory",
            DeviceLost { .. } => "DeviceLost",
            Cancelled { .. } => "AbortError",
            Validation { .. } | Readback { .. } | ShapeMismatch { .. } => "GpuError",
            ThreadPool { .. } => "ThreadPool",
            Model(e) => e.kind(),
        }
    }
}

impl GpuError {
    /// A load's compilation stopped by its caller (`runtime/warm.rs`).
    pub(crate) fn compile_cancelled() -> Self {
        GpuError::Cancelled {
            what: "compiling the model's kernels",
        }
    }
}

/// The CPU backend's errors, each as the engine names it (the same variant, so the same
/// `kind` and message whichever backend ran).
impl From<tpsmeter_cpu::CpuError> for GpuError {
    fn from(e: tpsmeter_cpu::CpuError) -> Self {
        match e {
            tpsmeter_cpu::CpuError::ShapeMismatch { op, detail } => {
                GpuError::ShapeMismatch { op, detail }
            }
            tpsmeter_cpu::CpuError::ThreadPool { reason } => GpuError::ThreadPool { reason },
            tpsmeter_cpu::CpuError::Model(e) => GpuError::Model(e),
            // `CpuError` is non-exhaustive: a later variant is still a CPU failure.
            other => GpuError::ThreadPool {
                reason: other.to_string(),
            },
        }
    }
}

/// Shorthand used throughout the crate.
pub type Result<T, E = GpuError> = std::result::Result<T, E>;
