//! CPU dequantizers for the GGML block formats: the plain-Rust twins of the GPU kernels and the
//! weights of the f32 reference forward pass.
//!
//! One file per format, each documenting its block layout byte by byte. All of them expand
//! whole blocks only: `bytes` must hold exactly `out.len() / block_len` blocks. These are
//! correctness tools, written for clarity; the engine never expands weights to f32 (its
//! kernels read the blocks as stored).

pub mod bf16;
pub mod f16;
pub mod f32;
pub mod q4_0;
pub mod q4_1;
pub mod q4_k;
pub mod q5_0;
pub mod q5_1;
pub mod q5_k;
pub mod q6_k;
pub mod q8_0;
mod scalar;

use crate::error::{ModelError, Result};
mod ggml_type;
pub use ggml_type::GgmlType;

/// Expands `out.len()` weights of type `ty` stored in `bytes` to f32.
///
/// `out.len()` must be a multiple of the type's block length and `bytes.len()` exactly the
/// matching number of blocks; otherwise a [`ModelError::QuantLength`] (or
/// [`ModelError::PartialBlock`]) names the sizes. Types without a CPU dequantizer give
/// [`ModelError::UnsupportedGgmlType`].
pub fn dequantize(ty: GgmlType, bytes: &[u8], out: &mut [f32]) -> Result<()> {
    let expected = ty.row_bytes(out.len())?;
    if bytes.len() != expected {
        return Err(ModelError::QuantLength {
            ty,
            elements: out.len() as u64,
            expected_bytes: expected as u64,
            got_bytes: bytes.len() as u64,
        });
    }
    match ty {
        GgmlType::F32 => f32::dequantize(bytes, out),
        GgmlType::F16 => f16::dequantize(bytes, out),
        GgmlType::BF16 => bf16::dequantize(bytes, out),
        GgmlType::Q4_0 => q4_0::dequantize(bytes, out),
        GgmlType::Q4_1 => q4_1::dequantize(bytes, out),
        GgmlType::Q5_0 => q5_0::dequantize(bytes, out),
        GgmlType::Q5_1 => q5_1::dequantize(bytes, out),
        GgmlType::Q8_0 => q8_0::dequantize(bytes, out),
        GgmlType::Q4_K => q4_k::dequantize(bytes, out),
        GgmlType::Q5_K => q5_k::dequantize(bytes, out),
        GgmlType::Q6_K => q6_k::dequantize(bytes, out),
        other => return Err(ModelError::UnsupportedGgmlType { ty: other }),
    }
    Ok(())
}

/// Same as [`dequantize`]; named for call sites that expand one matrix row.
pub fn dequantize_row(ty: GgmlType, bytes: &[u8], out: &mut [f32]) -> Result<()> {
    dequantize(ty, bytes, out)
}

/// Expands `n` weights into a fresh vector.
pub fn dequantize_to_vec(ty: GgmlType, bytes: &[u8], n: usize) -> Result<Vec<f32>> {
    // Check sizes before allocating: `n` may come from an untrusted header.
    let expected = ty.row_bytes(n)?;
    if bytes.len() != expected {
        return Err(ModelError::QuantLength {
            ty,
            elements: n as u64,
            expected_bytes: expected as u64,
            got_bytes: bytes.len() as u64,
        });
    }
    let mut out = vec![0.0; n];
    dequantize(ty, bytes, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn length_mismatches_are_typed_errors() {
        let mut out = [0.0f32; 32];
        let err = dequantize(GgmlType::Q8_0, &[0u8; 33], &mut out).unwrap_err();
        assert!(matches!(
            err,
            ModelError::QuantLength {
                expected_bytes: 34,
                got_bytes: 33,
                ..
            }
        ));
        let mut odd = [0.0f32; 31];
        assert!(matches!(
            dequantize(GgmlType::Q8_0, &[0u8; 34], &mut odd),
            Err(ModelError::PartialBlock { .. })
        ));
        assert!(matches!(
            dequantize(GgmlType::IQ2_XXS, &[0u8; 66], &mut [0.0; 256]),
            Err(ModelError::UnsupportedGgmlType { .. })
        ));
    }

    #[test]
    fn every_dequantizable_type_dispatches() {
        for ty in GgmlType::ALL.into_iter().filter(|t| t.can_dequantize()) {
            let n = ty.block_len() * 2;
            let bytes = vec![0u8; ty.row_bytes(n).unwrap()];
            let out = dequantize_to_vec(ty, &bytes, n).unwrap();
            assert_eq!(out.len(), n, "{ty}");
        }
    }
}
