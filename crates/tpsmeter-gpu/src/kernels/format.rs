//! Weight formats the matrix kernels read, and how their GGUF blocks are laid out on the GPU.
//!
//! Blocks are repacked once at load so that the bytes a kernel multiplies load as whole
//! `vec4<u32>`s: GGUF's 18/20/22/34/210-byte blocks are not 16-byte aligned, so the
//! quantized values go to one array and the f16 scales to another. The total stays within
//! a few bytes of the file size (weights are never expanded to f32).

use crate::error::{GpuError, Result};
use tpsmeter_model::gguf::GgmlType;
use tpsmeter_model::quant;

/// A weight tensor's storage format (GGML block types the kernels support).
#[allow(non_camel_case_types)] // GGML spells them so.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WeightFormat {
    /// 32-bit floats.
    F32,
    /// IEEE half floats.
    F16,
    /// 32-element blocks: f16 d, 16 bytes of nibbles; w = d (q - 8).
    Q4_0,
    /// 32-element blocks: f16 d, f16 m, 16 bytes of nibbles; w = d q + m.
    Q4_1,
    /// 32-element blocks: f16 d, 4 bytes of high bits, 16 bytes of nibbles; w = d (q - 16).
    Q5_0,
    /// 32-element blocks: f16 d, 32 signed bytes; w = d q.
    Q8_0,
    /// 256-element super-blocks with 6-bit sub-block scales and mins.
    Q4_K,
    /// 256-element super-blocks of 6-bit values with 8-bit sub-block scales.
    Q6_K,
}

/// The repacked bytes of some rows, ready for upload.
#[derive(Debug, Default, Clone)]
pub struct Packed {
    /// Quantized values (binding 2, `array<vec4<u32>>`).
    pub q: Vec<u8>,
    /// Scales (binding 3, `array<u32>`); empty for formats without.
    pub scales: Vec<u8>,
    /// Extra bits (binding 5, `array<u32>`, Q5_0's high bits); empty for others.
    pub aux: Vec<u8>,
}

impl WeightFormat {
    /// Elements per GGUF block.
    pub fn block_len(self) -> usize {
        match self {
            WeightFormat::F32 | WeightFormat::F16 => 1,
            WeightFormat::Q4_0 => quant::q4_0::BLOCK_LEN,
            WeightFormat::Q4_1 => quant::q4_1::BLOCK_LEN,
            WeightFormat::Q5_0 => quant::q5_0::BLOCK_LEN,
            WeightFormat::Q8_0 => quant::q8_0::BLOCK_LEN,
            WeightFormat::Q4_K => quant::q4_k::BLOCK_LEN,
            WeightFormat::Q6_K => quant::q6_k::BLOCK_LEN,
        }
    }

    /// Bytes per GGUF block.
    pub fn block_bytes(self) -> usize {
        match self {
            WeightFormat::F32 => 4,
            WeightFormat::F16 => 2,
            // The block layouts are the model floor's (one constant per format).
            WeightFormat::Q4_0 => quant::q4_0::BLOCK_BYTES,
            WeightFormat::Q4_1 => quant::q4_1::BLOCK_BYTES,
            WeightFormat::Q5_0 => quant::q5_0::BLOCK_BYTES,
            WeightFormat::Q8_0 => quant::q8_0::BLOCK_BYTES,
            WeightFormat::Q4_K => quant::q4_k::BLOCK_BYTES,
            WeightFormat::Q6_K => quant::q6_k::BLOCK_BYTES,
        }
    }

    /// Bytes of one GGUF row of `cols` elements (`cols` a multiple of the block length).
    pub fn row_bytes(self, cols: usize) -> usize {
        cols / self.block_len() * self.block_bytes()
    }

    /// Whether the kernel reads a scales binding.
    pub fn has_scales(self) -> bool {
        !matches!(
            self,
            WeightFormat::F32 | WeightFormat::F16 | WeightFormat::Q4_K
        )
    }

    /// Whether the kernel reads an aux binding.
    pub fn has_aux(self) -> bool {
        self == WeightFormat::Q5_0
    }

    /// The GGML tensor type this format reads (what [`tpsmeter_model::quant::dequantize`] expands on
    /// the CPU).
    pub fn ggml_type(self) -> GgmlType {
        match self {
            WeightFormat::F32 => GgmlType::F32,
            WeightFormat::F16 => GgmlType::F16,
            WeightFormat::Q4_0 => GgmlType::Q4_0,
            WeightFormat::Q4_1 => GgmlType::Q4_1,
            WeightFormat::Q5_0 => GgmlType::Q5_0,
            WeightFormat::Q8_0 => GgmlType::Q8_0,
            WeightFormat::Q4_K => GgmlType::Q4_K,
            WeightFormat::Q6_K => GgmlType::Q6_K,
        }
    }

    /// Name as GGML spells it.
    pub fn name(self) -> &'static str {
        match self {
            WeightFormat::F32 => "F32",
            WeightFormat::F16 => "F16",
            WeightFormat::Q4_0 => "Q4_0",
            WeightFormat::Q4_1 => "Q4_1",
            WeightFormat::Q5_0 => "Q5_0",
            WeightFormat::Q8_0 => "Q8_0",
            WeightFormat::Q4_K => "Q4_K",
            WeightFormat::Q6_K => "Q6_K",
        }
    }

    /// The smallest column count unit the kernels accept (the 32-element sub-block, or the
    /// 256-element super-block for K-quants).
    pub fn col_multiple(self) -> usize {
        self.block_len().max(32)
    }

    /// Repacks `rows` GGUF rows (`bytes`, exactly `rows * row_bytes(cols)` long) into the
    /// GPU layout the kernels of this format read.
    pub fn repack(self, rows: usize, cols: usize, bytes: &[u8]) -> Result<Packed> {
        if cols == 0 || !cols.is_multiple_of(self.col_multiple()) {
            return Err(GpuError::ShapeMismatch {
                op: "repack",
                detail: format!(
                    "{} rows need a multiple of {} columns, got {cols}",
                    self.name(),
                    self.col_multiple()
                ),
            });
        }
        let want = rows * self.row_bytes(cols);
        if bytes.len() != want {
            return Err(GpuError::ShapeMismatch {
                op: "repack",
                detail: format!(
                    "{rows}x{cols} {} needs {want} bytes, got {}",
                    self.name(),
                    bytes.len()
                ),
            });
        }
        let nblocks = bytes.len() / self.block_bytes();
        let mut p = Packed::default();
        match self {
            // Already 16-byte friendly: rows of 32 elements are 128 / 64 bytes.
            WeightFormat::F32 | WeightFormat::F16 | WeightFormat::Q4_K => {
                p.q = bytes.to_vec();
            }
            WeightFormat::Q4_0 | WeightFormat::Q8_0 => {
                let qb = self.block_bytes() - 2;
                p.q.reserve(nblocks * qb);
                p.scales.reserve(nblocks * 2 + 2);
                for b in bytes.chunks_exact(self.block_bytes()) {
                    p.scales.extend_from_slice(&b[..2]);
                    p.q.extend_from_slice(&b[2..]);
                }
            }
            WeightFormat::Q4_1 => {
                p.q.reserve(nblocks * 16);
                p.scales.reserve(nblocks * 4);
                for b in bytes.chunks_exact(20) {
                    p.scales.extend_from_slice(&b[..4]);
                    p.q.extend_from_slice(&b[4..]);
                }
            }
            WeightFormat::Q5_0 => {
                p.q.reserve(nblocks * 16);
                p.aux.reserve(nblocks * 4);
                p.scales.reserve(nblocks * 2 + 2);
                for b in bytes.chunks_exact(22) {
                    p.scales.extend_from_slice(&b[..2]);
                    p.aux.extend_from_slice(&b[2..6]);
                    p.q.extend_from_slice(&b[6..]);
                }
            }
            WeightFormat::Q6_K => {
                p.q.reserve(nblocks * 208);
                p.scales.reserve(nblocks * 2 + 2);
                for b in bytes.chunks_exact(210) {
                    p.q.extend_from_slice(&b[..208]);
                    p.scales.extend_from_slice(&b[208..]);
                }
            }
        }
        Ok(p)
    }
}

impl std::fmt::Display for WeightFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repack_keeps_the_byte_count_within_one_scale_of_the_file() {
        for f in [
            WeightFormat::F32,
            WeightFormat::F16,
            WeightFormat::Q4_0,
            WeightFormat::Q4_1,
            WeightFormat::Q5_0,
            WeightFormat::Q8_0,
            WeightFormat::Q4_K,
            WeightFormat::Q6_K,
        ] {
            let (rows, cols) = (3, 512);
            let bytes = vec![7u8; rows * f.row_bytes(cols)];
            let p = f.repack(rows, cols, &bytes).unwrap_or_default();
            let total = p.q.len() + p.scales.len() + p.aux.len();
            assert_eq!(total, bytes.len(), "{f}");
            assert_eq!(p.q.len() % 16, 0, "{f}: values must load as vec4<u32>");
        }
    }

    #[test]
    fn ggml_type_is_the_inverse_of_the_loaders_mapping() {
        for f in [
            WeightFormat::F32,
            WeightFormat::F16,
            WeightFormat::Q4_0,
            WeightFormat::Q4_1,
            WeightFormat::Q5_0,
            WeightFormat::Q8_0,
            WeightFormat::Q4_K,
            WeightFormat::Q6_K,
        ] {
            let back = crate::model::gpu_weights::weight_format(f.ggml_type(), "t").ok();
            assert_eq!(back, Some(f));
        }
    }

    #[test]
    fn repack_rejects_ragged_shapes() {
        assert!(WeightFormat::Q4_K.repack(1, 32, &[0; 18]).is_err());
        assert!(WeightFormat::Q8_0.repack(2, 32, &[0; 34]).is_err());
    }
}
