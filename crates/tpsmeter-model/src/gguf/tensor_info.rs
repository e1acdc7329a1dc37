//! One tensor's description from the GGUF header: name, shape, type and where its bytes lie.

use super::limits::{MAX_DIMS, MAX_TENSOR_ELEMENTS};
use crate::error::{ModelError, Result};
use crate::quant::GgmlType;

/// A tensor as declared in the header, already validated (shape, type, size, alignment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    /// Name, e.g. `blk.0.attn_q.weight`.
    pub name: String,
    /// Dimensions in ggml order: `dims[0]` is the contiguous (row) length. A weight matrix
    /// `[in, out]` multiplies a vector of `in` values into `out` values.
    pub dims: Vec<u64>,
    /// Element type.
    pub ty: GgmlType,
    /// Offset of the first byte relative to the start of the data section.
    pub offset: u64,
    /// Product of the dimensions.
    pub n_elements: u64,
    /// Bytes the tensor occupies.
    pub n_bytes: u64,
}

impl TensorInfo {
    /// Validates a declared tensor and computes its element and byte counts.
    pub(crate) fn new(name: String, dims: Vec<u64>, type_id: u32, offset: u64) -> Result<Self> {
        let bad = |reason: String| ModelError::BadTensorShape {
            tensor: name.clone(),
            dims: dims.clone(),
            reason,
        };
        let ty = GgmlType::from_id(type_id).map_err(|_| ModelError::UnknownTensorType {
            tensor: name.clone(),
            id: type_id,
        })?;
        if dims.is_empty() || dims.len() > MAX_DIMS as usize {
            return Err(bad(format!("must have 1 to {MAX_DIMS} dimensions")));
        }
        if dims.contains(&0) {
            return Err(bad("a dimension is zero".into()));
        }
        let mut n_elements: u64 = 1;
        for &d in &dims {
            n_elements = n_elements
                .checked_mul(d)
                .filter(|&n| n <= MAX_TENSOR_ELEMENTS)
                .ok_or_else(|| {
                    bad(format!(
                        "more than {MAX_TENSOR_ELEMENTS} elements (the reader's cap)"
                    ))
                })?;
        }
        let block = ty.block_len() as u64;
        if !dims[0].is_multiple_of(block) {
            return Err(bad(format!(
                "row length {} is not a multiple of the {ty} block length {block}",
                dims[0]
            )));
        }
        // n_elements ≤ 2^40 and block_bytes ≤ 292, so this cannot overflow.
        let n_bytes = n_elements / block * ty.block_bytes() as u64;
        Ok(Self {
            name,
            dims,
            ty,
            offset,
            n_elements,
            n_bytes,
        })
    }

    /// Length of one row (`dims[0]`).
    pub fn row_len(&self) -> u64 {
        self.dims[0]
    }

    /// Number of rows (product of `dims[1..]`).
    pub fn n_rows(&self) -> u64 {
        self.n_elements / self.dims[0]
    }

    /// The data-section range `offset..offset + n_bytes` (checked: offsets come from the file).
    pub fn end(&self) -> Option<u64> {
        self.offset.checked_add(self.n_bytes)
    }
}
