//! Q5_K: 256 weights in 176 bytes; Q4_K plus a fifth bit per weight.
//!
//! ```text
//! offset  size  field
//! 0       2     d: f16 super-scale of the sub-block scales
//! 2       2     dmin: f16 super-scale of the sub-block minimums
//! 4       12    scales: packed 6-bit scales and minimums, as in Q4_K
//! 16      32    qh: bit s of byte l is the high bit of weight l of sub-block s
//! 48      128   qs: low 4 bits, laid out as in Q4_K
//! ```
//! `weight = d * scale[s] * (q4 + 16 * high_bit) - dmin * min[s]`.

use super::q4_k::scale_min;
use super::scalar::f16_at;

/// Bytes per block.
pub const BLOCK_BYTES: usize = 176;
/// Weights per block.
pub const BLOCK_LEN: usize = 256;

/// Expands whole blocks (lengths checked by the caller).
pub fn dequantize(bytes: &[u8], out: &mut [f32]) {
    for (block, y) in bytes
        .chunks_exact(BLOCK_BYTES)
        .zip(out.chunks_exact_mut(BLOCK_LEN))
    {
        let d = f16_at(block, 0);
        let dmin = f16_at(block, 2);
        let scales = &block[4..16];
        let qh = &block[16..48];
        let qs = &block[48..];
        for g in 0..4 {
            let (s1, m1) = scale_min(2 * g, scales);
            let (s2, m2) = scale_min(2 * g + 1, scales);
            let (d1, d2) = (d * f32::from(s1), d * f32::from(s2));
            let (min1, min2) = (dmin * f32::from(m1), dmin * f32::from(m2));
            let q = &qs[32 * g..32 * g + 32];
            let y = &mut y[64 * g..64 * g + 64];
            for l in 0..32 {
                let h1 = (qh[l] >> (2 * g)) & 1;
                let h2 = (qh[l] >> (2 * g + 1)) & 1;
                y[l] = d1 * f32::from((q[l] & 0x0f) | (h1 << 4)) - min1;
                y[l + 32] = d2 * f32::from((q[l] >> 4) | (h2 << 4)) - min2;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn high_bits_add_sixteen_steps() {
        // Scales all 1, minimums all 0, d = 1: weights equal their 5-bit codes.
        let mut block = [0u8; BLOCK_BYTES];
        block[0..2].copy_from_slice(&half::f16::from_f32(1.0).to_bits().to_le_bytes());
        for s in 0..4 {
            block[4 + s] = 1; // scales 0..4
        }
        for s in 0..4 {
            block[12 + s] = 1; // scales 4..8 (low nibble), minimums 0
        }
        for l in 0..32 {
            block[16 + l] = if l % 2 == 0 { 0xff } else { 0x00 };
        }
        for (i, q) in block[48..].iter_mut().enumerate() {
            *q = (i % 16) as u8 | ((15 - i % 16) as u8) << 4;
        }
        let mut out = [0.0; BLOCK_LEN];
        dequantize(&block, &mut out);
        for (i, &v) in out.iter().enumerate() {
            let within = i % 64;
            let l = within % 32;
            let low = if within < 32 { l % 16 } else { 15 - l % 16 };
            let high = if l % 2 == 0 { 16 } else { 0 };
            assert_eq!(v, (low + high) as f32, "weight {i}");
        }
    }
}
