//! Q4_0: 32 weights in 18 bytes.
//!
//! ```text
//! offset  size  field
//! 0       2     d: f16 scale
//! 2       16    qs: byte j holds weight j in its low nibble and weight j + 16 in its high
//!               nibble; weight = d * (nibble - 8)
//! ```

use super::scalar::f16_at;

/// Bytes per block.
pub const BLOCK_BYTES: usize = 18;
/// Weights per block.
pub const BLOCK_LEN: usize = 32;

/// Expands whole blocks (lengths checked by the caller).
pub fn dequantize(bytes: &[u8], out: &mut [f32]) {
    for (block, y) in bytes
        .chunks_exact(BLOCK_BYTES)
        .zip(out.chunks_exact_mut(BLOCK_LEN))
    {
        let d = f16_at(block, 0);
        for (j, &q) in block[2..].iter().enumerate() {
            y[j] = d * (f32::from(q & 0x0f) - 8.0);
            y[j + 16] = d * (f32::from(q >> 4) - 8.0);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn hand_built_block() {
        let mut block = [0u8; 18];
        block[0..2].copy_from_slice(&half::f16::from_f32(2.0).to_bits().to_le_bytes());
        for j in 0..16 {
            block[2 + j] = (j as u8) | ((15 - j as u8) << 4);
        }
        let mut out = [0.0; 32];
        super::dequantize(&block, &mut out);
        for j in 0..16 {
            assert_eq!(out[j], 2.0 * (j as f32 - 8.0), "low nibble {j}");
            assert_eq!(out[j + 16], 2.0 * (7.0 - j as f32), "high nibble {j}");
        }
    }
}
