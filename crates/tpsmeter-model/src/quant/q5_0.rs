//! Q5_0: 32 weights in 22 bytes.
//!
//! ```text
//! offset  size  field
//! 0       2     d: f16 scale
//! 2       4     qh: u32, bit i is the fifth (high) bit of weight i
//! 6       16    qs: byte j holds the low 4 bits of weight j (low nibble) and of weight j + 16
//!               (high nibble); weight = d * (q5 - 16)
//! ```
//! `qh` is not 4-byte aligned inside the block, so it is read bytewise.

use super::scalar::{f16_at, u32_at};

/// Bytes per block.
pub const BLOCK_BYTES: usize = 22;
/// Weights per block.
pub const BLOCK_LEN: usize = 32;

/// Expands whole blocks (lengths checked by the caller).
pub fn dequantize(bytes: &[u8], out: &mut [f32]) {
    for (block, y) in bytes
        .chunks_exact(BLOCK_BYTES)
        .zip(out.chunks_exact_mut(BLOCK_LEN))
    {
        let d = f16_at(block, 0);
        let qh = u32_at(block, 2);
        for (j, &q) in block[6..].iter().enumerate() {
            let lo = u32::from(q & 0x0f) | (((qh >> j) & 1) << 4);
            let hi = u32::from(q >> 4) | (((qh >> (j + 16)) & 1) << 4);
            y[j] = d * (lo as f32 - 16.0);
            y[j + 16] = d * (hi as f32 - 16.0);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn hand_built_block() {
        let mut block = [0u8; 22];
        block[0..2].copy_from_slice(&half::f16::from_f32(0.5).to_bits().to_le_bytes());
        // High bits set on every odd weight.
        let qh: u32 = 0xaaaa_aaaa;
        block[2..6].copy_from_slice(&qh.to_le_bytes());
        for j in 0..16 {
            block[6 + j] = (j as u8) | ((15 - j as u8) << 4);
        }
        let mut out = [0.0; 32];
        super::dequantize(&block, &mut out);
        for j in 0..16 {
            let lo = j as f32 + if j % 2 == 1 { 16.0 } else { 0.0 };
            let hi = (15 - j) as f32 + if (j + 16) % 2 == 1 { 16.0 } else { 0.0 };
            assert_eq!(out[j], 0.5 * (lo - 16.0), "weight {j}");
            assert_eq!(out[j + 16], 0.5 * (hi - 16.0), "weight {}", j + 16);
        }
    }
}
