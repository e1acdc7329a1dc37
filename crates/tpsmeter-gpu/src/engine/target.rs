//! [`LoadTarget`]: what [`super::EngineLoader`] loads a model into, the GPU ([`GpuTarget`])
//! or the CPU (`crate::cpu::CpuTarget`). The loader does what every backend shares (the
//! GGUF push parser, the header's configuration, tokenizer and chat template, the file's
//! length and digest); a target checks the header against what it can hold, keeps each
//! tensor as it arrives, and builds its model at the end.

use std::fmt::Debug;
use std::sync::Arc;

use crate::error::Result;
use crate::gpu::context::GpuContext;
use crate::model::gpu_weights::{GpuWeights, StagedWeights};
use tpsmeter_model::config::ModelConfig;
use tpsmeter_model::gguf::{GgufHeader, TensorInfo};

use super::session::Backend;
use crate::runtime::GpuModel;
use tpsmeter_model::options::ModelOptions;

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

/// Loads into GPU buffers on a device: each tensor is uploaded as its last byte arrives.
#[derive(Debug, Clone)]
pub struct GpuTarget(pub Arc<GpuContext>);

impl LoadTarget for GpuTarget {
    type Model = GpuModel;
    type Staged = StagedWeights;

    fn check_header(&self, header: &GgufHeader) -> Result<()> {
        // A tensor is held whole until its last byte arrives; one larger than any buffer this
        // adapter can make is refused before any of it is read.
        Ok(header.check_tensor_bytes(self.0.limits.max_buffer_size)?)
    }

    fn check_config(&self, cfg: &ModelConfig) -> Result<()> {
        GpuWeights::check_config(cfg)
    }

    fn accept(&self, staged: &mut StagedWeights, info: &TensorInfo, bytes: &[u8]) -> Result<()> {
        staged.accept(&self.0, info, bytes)
    }

    fn build(
        &self,
        staged: StagedWeights,
        cfg: ModelConfig,
        opts: &ModelOptions,
    ) -> Result<GpuModel> {
        let weights = GpuWeights::assemble(&self.0, staged, &cfg)?;
        GpuModel::from_weights(self.0.clone(), cfg, weights, opts)
    }
}
