//! A GGUF file held in memory as one byte slice: the header plus borrowed tensor bytes.

use super::header::GgufHeader;
use super::tensor_info::TensorInfo;
use crate::error::{ModelError, Result};

/// A parsed GGUF file borrowing its tensor data from the caller's bytes.
#[derive(Debug, Clone)]
pub struct GgufFile<'a> {
    /// Header, metadata and tensor infos.
    pub header: GgufHeader,
    data: &'a [u8],
}

impl<'a> GgufFile<'a> {
    /// Parses `bytes` (a whole file) and checks every tensor lies inside it.
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        let header = GgufHeader::parse(bytes)?;
        // A file without tensors may end before the alignment padding.
        let data = usize::try_from(header.data_offset)
            .ok()
            .and_then(|o| bytes.get(o..))
            .unwrap_or(&[]);
        header.check_data_len(data.len() as u64)?;
        Ok(Self { header, data })
    }

    /// The data section (everything from the aligned end of the header).
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// The info of tensor `name`.
    pub fn tensor_info(&self, name: &str) -> Result<&TensorInfo> {
        self.header.tensor(name)
    }

    /// The stored bytes of tensor `name`.
    pub fn tensor_bytes(&self, name: &str) -> Result<&'a [u8]> {
        let info = self.header.tensor(name)?;
        self.bytes_of(info)
    }

    /// The stored bytes of `info` (normally from this file's header, whose ranges were
    /// checked at parse time; a foreign info is range-checked again).
    pub fn bytes_of(&self, info: &TensorInfo) -> Result<&'a [u8]> {
        let range = usize::try_from(info.offset)
            .ok()
            .zip(usize::try_from(info.n_bytes).ok())
            .and_then(|(start, len)| Some(start..start.checked_add(len)?));
        range
            .and_then(|r| self.data.get(r))
            .ok_or_else(|| ModelError::TensorOutOfRange {
                tensor: info.name.clone(),
                offset: info.offset,
                size: info.n_bytes,
                data_len: self.data.len() as u64,
            })
    }

    /// Tensor `name` expanded to f32 (for the CPU reference and tests; the engine never does
    /// this).
    pub fn dequantize(&self, name: &str) -> Result<Vec<f32>> {
        let info = self.header.tensor(name)?;
        let n = usize::try_from(info.n_elements).map_err(|_| ModelError::LimitExceeded {
            what: format!("elements of tensor {name:?} on this platform"),
            value: info.n_elements,
            limit: usize::MAX as u64,
        })?;
        crate::quant::dequantize_to_vec(info.ty, self.bytes_of(info)?, n)
    }
}
