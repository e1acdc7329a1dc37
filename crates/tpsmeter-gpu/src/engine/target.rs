//! [`GpuTarget`]: the GPU's [`LoadTarget`], what [`super::EngineLoader`] loads a model into
//! on a device, and the CPU's (`tpsmeter_cpu::CpuTarget`, whose methods do the work).

use std::sync::Arc;

use crate::error::Result;
use crate::gpu::context::GpuContext;
use crate::model::gpu_weights::{GpuWeights, StagedWeights};
use tpsmeter_model::config::ModelConfig;
use tpsmeter_model::gguf::{GgufHeader, TensorInfo};

use crate::backend::LoadTarget;
use crate::runtime::GpuModel;
use tpsmeter_cpu::tensors::StagedTensors;
use tpsmeter_cpu::{CpuModel, CpuTarget};
use tpsmeter_model::options::ModelOptions;

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

/// Loads into memory for the CPU backend (its errors as the engine names them).
impl LoadTarget for CpuTarget {
    type Model = CpuModel;
    type Staged = StagedTensors;

    fn check_header(&self, header: &GgufHeader) -> Result<()> {
        Ok(CpuTarget::check_header(self, header)?)
    }

    fn check_config(&self, cfg: &ModelConfig) -> Result<()> {
        Ok(CpuTarget::check_config(self, cfg)?)
    }

    fn accept(&self, staged: &mut StagedTensors, info: &TensorInfo, bytes: &[u8]) -> Result<()> {
        Ok(CpuTarget::accept(self, staged, info, bytes)?)
    }

    fn build(
        &self,
        staged: StagedTensors,
        cfg: ModelConfig,
        opts: &ModelOptions,
    ) -> Result<CpuModel> {
        Ok(CpuTarget::build(self, staged, cfg, opts)?)
    }
}
