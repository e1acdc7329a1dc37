//! Q4_1: 32 weights in 20 bytes.
//!
//! ```text
//! offset  size  field
//! 0       2     d: f16 scale
//! 2       2     m: f16 minimum
//! 4       16    qs: byte j holds weight j (low nibble) and weight j + 16 (high nibble);
//!               weight = d * nibble + m
//! ```

use super::scalar::f16_at;

/// Bytes per block.
pub const BLOCK_BYTES: usize = 20;
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
        for (j, &q) in block[4..].iter().enumerate() {
            y[j] = d * f32::from(q & 0x0f) + m;
            y[j + 16] = d * f32::from(q >> 4) + m;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn hand_built_block() {
        let mut block = [0u8; 20];
        block[0..2].copy_from_slice(&half::f16::from_f32(0.25).to_bits().to_le_bytes());
        block[2..4].copy_from_slice(&half::f16::from_f32(-1.0).to_bits().to_le_bytes());
        for j in 0..16 {
            block[4 + j] = (j as u8) | ((15 - j as u8) << 4);
        }
        let mut out = [0.0; 32];
        super::dequantize(&block, &mut out);
        for j in 0..16 {
            assert_eq!(out[j], 0.25 * j as f32 - 1.0, "low nibble {j}");
            assert_eq!(out[j + 16], 0.25 * (15 - j) as f32 - 1.0, "high nibble {j}");
        }
    }
}
