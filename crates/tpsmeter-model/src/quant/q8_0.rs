//! Q8_0: 32 weights in 34 bytes.
//!
//! ```text
//! offset  size  field
//! 0       2     d: f16 scale
//! 2       32    qs: i8 quants, weight i = d * qs[i]
//! ```

use super::scalar::f16_at;

/// Bytes per block.
pub const BLOCK_BYTES: usize = 34;
/// Weights per block.
pub const BLOCK_LEN: usize = 32;

/// Expands whole blocks (lengths checked by the caller).
pub fn dequantize(bytes: &[u8], out: &mut [f32]) {
    for (block, y) in bytes
        .chunks_exact(BLOCK_BYTES)
        .zip(out.chunks_exact_mut(BLOCK_LEN))
    {
        let d = f16_at(block, 0);
        for (yi, &q) in y.iter_mut().zip(&block[2..]) {
            *yi = d * f32::from(q as i8);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn hand_built_block() {
        let mut block = [0u8; 34];
        block[0..2].copy_from_slice(&half::f16::from_f32(0.5).to_bits().to_le_bytes());
        for i in 0..32 {
            block[2 + i] = (i as i8 - 16) as u8;
        }
        block[2 + 31] = 0x80; // -128
        let mut out = [0.0; 32];
        super::dequantize(&block, &mut out);
        for (i, &v) in out.iter().enumerate().take(31) {
            assert_eq!(v, 0.5 * (i as f32 - 16.0), "weight {i}");
        }
        assert_eq!(out[31], -64.0);
    }
}
