//! An [`Engine`] whose forward pass runs on the CPU.

use super::model::CpuModel;
use super::runtime::CpuOptions;
use crate::engine::{Engine, ModelOptions};
use crate::error::Result;
use crate::gguf::GgufFile;

impl Engine<CpuModel> {
    /// Parses a whole GGUF file held in memory, builds its tokenizer and chat template, and
    /// copies its weights (as stored) for the CPU: `gguf` can be dropped once this returns.
    pub fn load_cpu(gguf: &[u8], opts: &ModelOptions, cpu: CpuOptions) -> Result<Self> {
        let file = GgufFile::parse(gguf)?;
        let p = crate::engine::loader::describe(&file.header)?;
        let weights = super::weights::CpuWeights::load(&file, &p.cfg)?;
        let model = CpuModel::from_weights(p.cfg, weights, opts, cpu)?;
        Ok(Engine::from_parts(p.tokenizer, p.chat, model, p.name, None))
    }
}
