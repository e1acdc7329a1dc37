//! The traits a backend implements, below both the backends and the engine over them, so
//! that neither backend imports the engine: [`Backend`] (what the engine's generation loop
//! needs of a model beyond `TokenStep`) and [`LoadTarget`] (what the loader streams a GGUF
//! file into). The engine (`engine/`) implements `Backend` for the GPU's and the CPU's
//! models and drives either; the CPU's `LoadTarget` is `cpu/target.rs`'s `CpuTarget`, the
//! GPU's `engine/target.rs`'s `GpuTarget`. The loader does what every backend shares (the GGUF push
//! parser, the header's configuration, tokenizer and chat template, the file's length and
//! digest); a target checks the header against what it can hold, keeps each tensor as it
//! arrives, and builds its model at the end.

use std::fmt::Debug;

use crate::error::{GpuError, Result};
use tpsmeter_model::config::ModelConfig;
use tpsmeter_model::generate::TokenStep;
use tpsmeter_model::gguf::{GgufHeader, TensorInfo};
use tpsmeter_model::options::ModelOptions;
use tpsmeter_model::sample::SamplerConfig;

/// What the engine needs of a backend's model beyond [`TokenStep`] (and its
/// `ModelShape`, the facts every backend declares once): the GPU model
/// (`runtime/`'s `GpuModel`) and the CPU one (`cpu/`'s `CpuModel`).
pub trait Backend: TokenStep<Error: Into<GpuError>> {
    /// The sampling settings of the steps that follow.
    fn set_sampling(&mut self, sampling: SamplerConfig) -> Result<()>;
    /// Runs `tokens` at `start..` and returns the logits after the last one (teacher
    /// forcing, `Engine::teacher_forced`).
    fn logits_after(
        &mut self,
        tokens: &[u32],
        start: usize,
    ) -> impl Future<Output = Result<Vec<f32>>>;
}

/// A backend a model can be loaded into as its file arrives.
pub trait LoadTarget {
    /// The model it builds.
    type Model: Backend;
    /// The tensors received so far, in the form this backend keeps them.
    type Staged: Default + Debug;

    /// Checks a complete header before the configuration is built: whether every tensor
    /// can be held (one too large is refused before any of it downloads).
    fn check_header(&self, header: &GgufHeader) -> Result<()>;
    /// Checks the configuration the header describes.
    fn check_config(&self, cfg: &ModelConfig) -> Result<()>;
    /// Takes one tensor, all of whose bytes have arrived.
    fn accept(&self, staged: &mut Self::Staged, info: &TensorInfo, bytes: &[u8]) -> Result<()>;
    /// Builds the model once the file is complete.
    fn build(
        &self,
        staged: Self::Staged,
        cfg: ModelConfig,
        opts: &ModelOptions,
    ) -> Result<Self::Model>;
}
