//! [`CpuTarget`]: loading a model for the CPU backend as its file arrives. Each tensor's
//! bytes are kept as stored ([`StagedTensors`]) and move into the model at the end, so the
//! model is held once (no whole-file buffer beside it). The engine's loader drives it
//! (`tpsmeter_gpu::engine::LoadTarget`, implemented there with these methods).

use super::cpu_model::CpuModel;
use super::cpu_runtime::CpuOptions;
use super::cpu_weights::CpuWeights;
use super::tensors::StagedTensors;
use crate::error::{CpuError, Result};
use tpsmeter_model::ModelError;
use tpsmeter_model::config::ModelConfig;
use tpsmeter_model::gguf::{GgufHeader, TensorInfo};
use tpsmeter_model::options::ModelOptions;

/// The most model bytes the CPU backend takes: a wasm32 memory is at most 4 GiB, and the
/// model shares it with the KV cache, the tokenizer and the activations; natively, what
/// addresses allow (the allocator reports what memory does not).
pub const MAX_MODEL_BYTES: u64 = if cfg!(target_pointer_width = "32") {
    3 << 30
} else {
    isize::MAX as u64
};

/// Loads into memory for [`CpuModel`], with these thread and kernel options.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuTarget(pub CpuOptions);

impl CpuTarget {
    /// Refuses a model whose data this backend cannot hold here ([`MAX_MODEL_BYTES`]),
    /// before any of it downloads.
    pub fn check_header(&self, header: &GgufHeader) -> Result<()> {
        let needed = header.data_len_needed();
        if needed > MAX_MODEL_BYTES {
            return Err(CpuError::from(ModelError::LimitExceeded {
                what: "model bytes the CPU backend can hold here".into(),
                value: needed,
                limit: MAX_MODEL_BYTES,
            }));
        }
        Ok(())
    }

    /// Whether the configuration can run here: every family and format the configuration
    /// accepts has a CPU path (shapes are checked as the weights are assembled).
    pub fn check_config(&self, _cfg: &ModelConfig) -> Result<()> {
        Ok(())
    }

    /// Keeps one tensor, all of whose bytes have arrived.
    pub fn accept(
        &self,
        staged: &mut StagedTensors,
        info: &TensorInfo,
        bytes: &[u8],
    ) -> Result<()> {
        staged.accept(info, bytes)
    }

    /// Builds the model once the file is complete.
    pub fn build(
        &self,
        mut staged: StagedTensors,
        cfg: ModelConfig,
        opts: &ModelOptions,
    ) -> Result<CpuModel> {
        let weights = CpuWeights::load(&mut staged, &cfg)?;
        CpuModel::from_weights(cfg, weights, opts, self.0)
    }
}
