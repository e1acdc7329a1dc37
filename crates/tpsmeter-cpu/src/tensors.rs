//! [`TensorSource`]: where the CPU backend's weights come from, a whole file held in memory
//! (a [`GgufFile`], whose tensors are copied) or a download's tensors as they arrived ([`StagedTensors`]).
//!
//! The CPU keeps every matrix in its stored bytes, so a staged tensor moves into the model
//! as it is: a model streamed in is held once, never twice (the file and a copy).

use std::collections::HashMap;
use tpsmeter_model::ModelError;

use crate::error::{CpuError, Result};
use tpsmeter_model::gguf::{GgufFile, TensorInfo};

/// Named tensors with their stored bytes.
pub trait TensorSource {
    /// The info of tensor `name` ([`ModelError::MissingTensor`] when there is none).
    fn info(&self, name: &str) -> Result<&TensorInfo>;
    /// Whether a tensor named `name` exists.
    fn has(&self, name: &str) -> bool;
    /// The stored bytes of `name`, owned: a staged tensor moves out (once), a file's is
    /// copied.
    fn take(&mut self, name: &str) -> Result<Vec<u8>>;

    /// Tensor `name` expanded to f32 (the small vectors: norms, biases).
    fn dequantize(&mut self, name: &str) -> Result<Vec<f32>> {
        let info = self.info(name)?;
        let (ty, elements) = (info.ty, info.n_elements);
        let n = usize::try_from(elements).map_err(|_| {
            CpuError::from(ModelError::LimitExceeded {
                what: format!("elements of tensor {name:?} on this platform"),
                value: elements,
                limit: usize::MAX as u64,
            })
        })?;
        Ok(tpsmeter_model::quant::dequantize_to_vec(
            ty,
            &self.take(name)?,
            n,
        )?)
    }
}

impl TensorSource for &GgufFile<'_> {
    fn info(&self, name: &str) -> Result<&TensorInfo> {
        Ok(self.tensor_info(name)?)
    }

    fn has(&self, name: &str) -> bool {
        self.header.has_tensor(name)
    }

    fn take(&mut self, name: &str) -> Result<Vec<u8>> {
        Ok(self.tensor_bytes(name)?.to_vec())
    }
}

/// Tensors kept as a download delivered them ([`StagedTensors::accept`]), until the model
/// takes them.
#[derive(Debug, Default)]
pub struct StagedTensors {
    infos: HashMap<String, TensorInfo>,
    bytes: HashMap<String, Vec<u8>>,
    held: usize,
}

impl StagedTensors {
    /// Keeps one tensor's bytes (a second tensor of the same name is malformed input).
    pub fn accept(&mut self, info: &TensorInfo, bytes: &[u8]) -> Result<()> {
        if self.infos.contains_key(&info.name) {
            return Err(CpuError::from(ModelError::StreamState {
                reason: format!("tensor {:?} arrived twice", info.name),
            }));
        }
        self.held = self.held.saturating_add(bytes.len());
        self.infos.insert(info.name.clone(), info.clone());
        self.bytes.insert(info.name.clone(), bytes.to_vec());
        Ok(())
    }

    /// Bytes held.
    pub fn held(&self) -> usize {
        self.held
    }
}

impl TensorSource for StagedTensors {
    fn info(&self, name: &str) -> Result<&TensorInfo> {
        self.infos
            .get(name)
            .ok_or_else(|| CpuError::from(ModelError::MissingTensor { name: name.into() }))
    }

    fn has(&self, name: &str) -> bool {
        self.infos.contains_key(name)
    }

    fn take(&mut self, name: &str) -> Result<Vec<u8>> {
        self.bytes.remove(name).ok_or_else(|| {
            CpuError::from(ModelError::StreamState {
                reason: format!("tensor {name:?} was used twice or never arrived"),
            })
        })
    }
}
