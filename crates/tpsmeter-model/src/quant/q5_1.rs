//! Q5_1: 32 weights in 24 bytes.
//!
//! ```text
//! offset  size  field
//! 0       2     d: f16 scale
//! 2       2     m: f16 minimum
//! 4       4     qh: u32, bit i is the fifth (high) bit of weight i
//! 8       16    qs: low 4 bits of weight j (low nibble) and weight j + 16 (high nibble);
//!               weight = d * q5 + m
//! ```

use super::scalar::{f16_at, u32_at};

/// Bytes per block.
pub const BLOCK_BYTES: usize = 24;
/// Weights per block.
pub const BLOCK_LEN: usize = 32;

/// Expands whole blocks (lengths checked by the caller).
pub fn dequantize(bytes: &[u8], out: &mut [f32]) {
    for (block, y) in bytes
        .chunks_exact(BLOCK_BYTES)
        .zip(out.chunks_exact_mut(BLOCK_LEN))
    {
        let d = f16_at(block, 0);
        let m = f16_at(block, 2);
        let qh = u32_at(block, 4);
        for (j, &q) in block[8..].iter().enumerate() {
            let lo = u32::from(q & 0x0f) | (((qh >> j) & 1) << 4);
            let hi = u32::from(q >> 4) | (((qh >> (j + 16)) & 1) << 4);
            y[j] = d * lo as f32 + m;
            y[j + 16] = d * hi as f32 + m;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn hand_built_block() {
        let mut block = [0u8; 24];
        block[0..2].copy_from_slice(&half::f16::from_f32(0.5).to_bits().to_le_bytes());
        block[2..4].copy_from_slice(&half::f16::from_f32(1.0).to_bits().to_le_bytes());
        block[4..8].copy_from_slice(&0xffff_0000u32.to_le_bytes());
        for j in 0..16 {
            block[8 + j] = (j as u8) | ((j as u8) << 4);
        }
        let mut out = [0.0; 32];
        super::dequantize(&block, &mut out);
        for j in 0..16 {
            assert_eq!(out[j], 0.5 * j as f32 + 1.0, "weight {j}");
            assert_eq!(
                out[j + 16],
                0.5 * (j + 16) as f32 + 1.0,
                "weight {}",
                j + 16
            );
        }
    }
}
