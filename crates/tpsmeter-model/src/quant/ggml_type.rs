//! The tensor element types of GGML/GGUF, with the numeric ids GGUF stores and the block
//! geometry every reader, dequantizer and GPU kernel agrees on.
//!
//! Ids and sizes follow ggml's `ggml_type` enum and `type_traits` table (ggml/src/ggml.c). Types
//! this crate cannot dequantize are still named here so an error can say which type a file
//! uses instead of "unknown id 20".

use crate::error::{ModelError, Result};

/// Weights per block of the K-quant formats (ggml's `QK_K`).
pub const QK_K: usize = 256;

/// A GGML tensor element type. `block_len` weights are stored in `block_bytes` bytes.
#[allow(non_camel_case_types)] // ggml's own names; everybody in the field reads them so
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GgmlType {
    F32,
    F16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q8_1,
    Q2_K,
    Q3_K,
    Q4_K,
    Q5_K,
    Q6_K,
    Q8_K,
    IQ2_XXS,
    IQ2_XS,
    IQ3_XXS,
    IQ1_S,
    IQ4_NL,
    IQ3_S,
    IQ2_S,
    IQ4_XS,
    I8,
    I16,
    I32,
    I64,
    F64,
    IQ1_M,
    BF16,
    TQ1_0,
    TQ2_0,
    MXFP4,
}

impl GgmlType {
    /// Every type, for tables and tests.
    pub const ALL: [GgmlType; 32] = [
        Self::F32,
        Self::F16,
        Self::Q4_0,
        Self::Q4_1,
        Self::Q5_0,
        Self::Q5_1,
        Self::Q8_0,
        Self::Q8_1,
        Self::Q2_K,
        Self::Q3_K,
        Self::Q4_K,
        Self::Q5_K,
        Self::Q6_K,
        Self::Q8_K,
        Self::IQ2_XXS,
        Self::IQ2_XS,
        Self::IQ3_XXS,
        Self::IQ1_S,
        Self::IQ4_NL,
        Self::IQ3_S,
        Self::IQ2_S,
        Self::IQ4_XS,
        Self::I8,
        Self::I16,
        Self::I32,
        Self::I64,
        Self::F64,
        Self::IQ1_M,
        Self::BF16,
        Self::TQ1_0,
        Self::TQ2_0,
        Self::MXFP4,
    ];

    /// The type stored under GGUF id `id`. Ids 4 and 5 (the removed Q4_2/Q4_3) and 31..=33
    /// (removed Q4_0_4_4 etc. repacked layouts) are gone from ggml and are rejected.
    pub fn from_id(id: u32) -> Result<Self> {
        Ok(match id {
            0 => Self::F32,
            1 => Self::F16,
            2 => Self::Q4_0,
            3 => Self::Q4_1,
            6 => Self::Q5_0,
            7 => Self::Q5_1,
            8 => Self::Q8_0,
            9 => Self::Q8_1,
            10 => Self::Q2_K,
            11 => Self::Q3_K,
            12 => Self::Q4_K,
            13 => Self::Q5_K,
            14 => Self::Q6_K,
            15 => Self::Q8_K,
            16 => Self::IQ2_XXS,
            17 => Self::IQ2_XS,
            18 => Self::IQ3_XXS,
            19 => Self::IQ1_S,
            20 => Self::IQ4_NL,
            21 => Self::IQ3_S,
            22 => Self::IQ2_S,
            23 => Self::IQ4_XS,
            24 => Self::I8,
            25 => Self::I16,
            26 => Self::I32,
            27 => Self::I64,
            28 => Self::F64,
            29 => Self::IQ1_M,
            30 => Self::BF16,
            34 => Self::TQ1_0,
            35 => Self::TQ2_0,
            39 => Self::MXFP4,
            _ => return Err(ModelError::UnknownGgmlType { id }),
        })
    }

    /// The GGUF id of this type.
    pub fn id(self) -> u32 {
        match self {
            Self::F32 => 0,
            Self::F16 => 1,
            Self::Q4_0 => 2,
            Self::Q4_1 => 3,
            Self::Q5_0 => 6,
            Self::Q5_1 => 7,
            Self::Q8_0 => 8,
            Self::Q8_1 => 9,
            Self::Q2_K => 10,
            Self::Q3_K => 11,
            Self::Q4_K => 12,
            Self::Q5_K => 13,
            Self::Q6_K => 14,
            Self::Q8_K => 15,
            Self::IQ2_XXS => 16,
            Self::IQ2_XS => 17,
            Self::IQ3_XXS => 18,
            Self::IQ1_S => 19,
            Self::IQ4_NL => 20,
            Self::IQ3_S => 21,
            Self::IQ2_S => 22,
            Self::IQ4_XS => 23,
            Self::I8 => 24,
            Self::I16 => 25,
            Self::I32 => 26,
            Self::I64 => 27,
            Self::F64 => 28,
            Self::IQ1_M => 29,
            Self::BF16 => 30,
            Self::TQ1_0 => 34,
            Self::TQ2_0 => 35,
            Self::MXFP4 => 39,
        }
    }

    /// ggml's name of the type (`"q4_K"`, `"f16"`), as llama.cpp prints it.
    pub fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::Q4_0 => "q4_0",
            Self::Q4_1 => "q4_1",
            Self::Q5_0 => "q5_0",
            Self::Q5_1 => "q5_1",
            Self::Q8_0 => "q8_0",
            Self::Q8_1 => "q8_1",
            Self::Q2_K => "q2_K",
            Self::Q3_K => "q3_K",
            Self::Q4_K => "q4_K",
            Self::Q5_K => "q5_K",
            Self::Q6_K => "q6_K",
            Self::Q8_K => "q8_K",
            Self::IQ2_XXS => "iq2_xxs",
            Self::IQ2_XS => "iq2_xs",
            Self::IQ3_XXS => "iq3_xxs",
            Self::IQ1_S => "iq1_s",
            Self::IQ4_NL => "iq4_nl",
            Self::IQ3_S => "iq3_s",
            Self::IQ2_S => "iq2_s",
            Self::IQ4_XS => "iq4_xs",
            Self::I8 => "i8",
            Self::I16 => "i16",
            Self::I32 => "i32",
            Self::I64 => "i64",
            Self::F64 => "f64",
            Self::IQ1_M => "iq1_m",
            Self::BF16 => "bf16",
            Self::TQ1_0 => "tq1_0",
            Self::TQ2_0 => "tq2_0",
            Self::MXFP4 => "mxfp4",
        }
    }

    /// Weights per block (1 for plain element types).
    pub fn block_len(self) -> usize {
        match self {
            Self::F32 | Self::F16 | Self::BF16 | Self::F64 => 1,
            Self::I8 | Self::I16 | Self::I32 | Self::I64 => 1,
            // The formats this crate reads: their block modules' layouts.
            Self::Q4_0 => super::q4_0::BLOCK_LEN,
            Self::Q4_1 => super::q4_1::BLOCK_LEN,
            Self::Q5_0 => super::q5_0::BLOCK_LEN,
            Self::Q5_1 => super::q5_1::BLOCK_LEN,
            Self::Q8_0 => super::q8_0::BLOCK_LEN,
            Self::Q4_K => super::q4_k::BLOCK_LEN,
            Self::Q5_K => super::q5_k::BLOCK_LEN,
            Self::Q6_K => super::q6_k::BLOCK_LEN,
            Self::Q8_1 | Self::IQ4_NL | Self::MXFP4 => 32,
            Self::Q2_K | Self::Q3_K | Self::Q8_K => QK_K,
            Self::IQ2_XXS | Self::IQ2_XS | Self::IQ3_XXS | Self::IQ1_S | Self::IQ3_S => QK_K,
            Self::IQ2_S | Self::IQ4_XS | Self::IQ1_M | Self::TQ1_0 | Self::TQ2_0 => QK_K,
        }
    }

    /// Bytes per block (ggml's `type_size`).
    pub fn block_bytes(self) -> usize {
        match self {
            Self::F32 | Self::I32 => 4,
            Self::F16 | Self::BF16 | Self::I16 => 2,
            Self::I8 => 1,
            Self::F64 | Self::I64 => 8,
            Self::Q4_0 => super::q4_0::BLOCK_BYTES,
            Self::Q4_1 => super::q4_1::BLOCK_BYTES,
            Self::Q5_0 => super::q5_0::BLOCK_BYTES,
            Self::Q5_1 => super::q5_1::BLOCK_BYTES,
            Self::Q8_0 => super::q8_0::BLOCK_BYTES,
            Self::Q8_1 => 2 + 2 + 32,
            Self::Q2_K => QK_K / 16 + QK_K / 4 + 2 + 2,
            Self::Q3_K => QK_K / 8 + QK_K / 4 + 12 + 2,
            Self::Q4_K => super::q4_k::BLOCK_BYTES,
            Self::Q5_K => super::q5_k::BLOCK_BYTES,
            Self::Q6_K => super::q6_k::BLOCK_BYTES,
            Self::Q8_K => 4 + QK_K + QK_K / 16 * 2,
            Self::IQ2_XXS => 2 + QK_K / 8 * 2,
            Self::IQ2_XS => 2 + QK_K / 8 * 2 + QK_K / 32,
            Self::IQ3_XXS => 2 + QK_K / 4 + QK_K / 8,
            Self::IQ1_S => 2 + QK_K / 8 + QK_K / 16,
            Self::IQ4_NL => 2 + 16,
            Self::IQ3_S => 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4,
            Self::IQ2_S => 2 + QK_K / 4 + QK_K / 16,
            Self::IQ4_XS => 2 + 2 + QK_K / 64 + QK_K / 2,
            Self::IQ1_M => QK_K / 8 + QK_K / 16 + QK_K / 32,
            Self::TQ1_0 => 2 + 4 * 13,
            Self::TQ2_0 => 2 + 64,
            Self::MXFP4 => 1 + 16,
        }
    }

    /// Whether [`crate::quant::dequantize`] can expand this type.
    pub fn can_dequantize(self) -> bool {
        matches!(
            self,
            Self::F32
                | Self::F16
                | Self::BF16
                | Self::Q4_0
                | Self::Q4_1
                | Self::Q5_0
                | Self::Q5_1
                | Self::Q8_0
                | Self::Q4_K
                | Self::Q5_K
                | Self::Q6_K
        )
    }

    /// Bytes taken by `n` consecutive weights; `n` must be a whole number of blocks.
    pub fn row_bytes(self, n: usize) -> Result<usize> {
        let block = self.block_len();
        if !n.is_multiple_of(block) {
            return Err(ModelError::PartialBlock {
                ty: self,
                elements: n as u64,
                block_len: block,
            });
        }
        (n / block)
            .checked_mul(self.block_bytes())
            .ok_or(ModelError::LimitExceeded {
                what: format!("byte size of {n} {} weights", self.name()),
                value: n as u64,
                limit: usize::MAX as u64,
            })
    }
}

impl std::fmt::Display for GgmlType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn ids_round_trip_and_unknown_ids_are_rejected() {
        for ty in GgmlType::ALL {
            assert_eq!(GgmlType::from_id(ty.id()).unwrap(), ty);
        }
        for id in [4, 5, 31, 32, 33, 36, 40, u32::MAX] {
            assert!(matches!(
                GgmlType::from_id(id),
                Err(ModelError::UnknownGgmlType { id: got }) if got == id
            ));
        }
    }

    #[test]
    fn block_sizes_match_ggml() {
        // Values from ggml's type_traits table.
        assert_eq!(GgmlType::Q4_0.block_bytes(), 18);
        assert_eq!(GgmlType::Q4_1.block_bytes(), 20);
        assert_eq!(GgmlType::Q5_0.block_bytes(), 22);
        assert_eq!(GgmlType::Q5_1.block_bytes(), 24);
        assert_eq!(GgmlType::Q8_0.block_bytes(), 34);
        assert_eq!(GgmlType::Q2_K.block_bytes(), 84);
        assert_eq!(GgmlType::Q3_K.block_bytes(), 110);
        assert_eq!(GgmlType::Q4_K.block_bytes(), 144);
        assert_eq!(GgmlType::Q5_K.block_bytes(), 176);
        assert_eq!(GgmlType::Q6_K.block_bytes(), 210);
        assert_eq!(GgmlType::Q8_K.block_bytes(), 292);
        assert_eq!(GgmlType::IQ4_XS.block_bytes(), 136);
    }

    #[test]
    fn row_bytes_rejects_partial_blocks() {
        assert_eq!(GgmlType::Q4_1.row_bytes(576).unwrap(), 18 * 20);
        assert_eq!(GgmlType::F16.row_bytes(3).unwrap(), 6);
        assert!(matches!(
            GgmlType::Q4_K.row_bytes(576),
            Err(ModelError::PartialBlock { .. })
        ));
    }
}
