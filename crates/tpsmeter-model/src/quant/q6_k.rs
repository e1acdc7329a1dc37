//! Q6_K: 256 weights in 210 bytes, as 16 sub-blocks of 16 with signed 8-bit scales.
//!
//! ```text
//! offset  size  field
//! 0       128   ql: low 4 bits of each weight
//! 128     64    qh: high 2 bits of each weight
//! 192     16    scales: i8 scale per 16 weights
//! 208     2     d: f16 super-scale
//! ```
//! The block is two halves of 128 weights (ql advances 64 bytes, qh 32, scales 8 per half).
//! Within a half, for l in 0..32, with q6 = (low 4 bits | high 2 bits << 4) - 32:
//! ```text
//! weight l      = ql[l] low nibble,       qh[l] bits 0..2
//! weight l + 32 = ql[l + 32] low nibble,  qh[l] bits 2..4
//! weight l + 64 = ql[l] high nibble,      qh[l] bits 4..6
//! weight l + 96 = ql[l + 32] high nibble, qh[l] bits 6..8
//! ```
//! and weight i of the half uses scale i / 16 of the half.

use super::scalar::f16_at;

/// Bytes per block.
pub const BLOCK_BYTES: usize = 210;
/// Weights per block.
pub const BLOCK_LEN: usize = 256;

/// Expands whole blocks (lengths checked by the caller).
pub fn dequantize(bytes: &[u8], out: &mut [f32]) {
    for (block, y) in bytes
        .chunks_exact(BLOCK_BYTES)
        .zip(out.chunks_exact_mut(BLOCK_LEN))
    {
        let d = f16_at(block, 208);
        for half in 0..2 {
            let ql = &block[64 * half..64 * half + 64];
            let qh = &block[128 + 32 * half..128 + 32 * half + 32];
            let sc = &block[192 + 8 * half..192 + 8 * half + 8];
            let y = &mut y[128 * half..128 * half + 128];
            for l in 0..32 {
                let q = [
                    (ql[l] & 0x0f) | (qh[l] & 3) << 4,
                    (ql[l + 32] & 0x0f) | ((qh[l] >> 2) & 3) << 4,
                    (ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4,
                    (ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4,
                ];
                for (k, &qk) in q.iter().enumerate() {
                    let i = l + 32 * k;
                    let scale = f32::from(sc[i / 16] as i8);
                    y[i] = d * scale * (f32::from(qk) - 32.0);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_built_block() {
        // Encode known 6-bit codes per weight and scales per 16, then decode.
        let code = |i: usize| ((i * 7 + 3) % 64) as u8;
        let scale = |s: usize| (s as i8 - 8) * 3;
        let mut block = [0u8; BLOCK_BYTES];
        for half in 0..2 {
            for l in 0..32 {
                let c: [u8; 4] = std::array::from_fn(|k| code(128 * half + l + 32 * k));
                block[64 * half + l] = (c[0] & 0x0f) | (c[2] & 0x0f) << 4;
                block[64 * half + l + 32] = (c[1] & 0x0f) | (c[3] & 0x0f) << 4;
                block[128 + 32 * half + l] =
                    (c[0] >> 4) | (c[1] >> 4) << 2 | (c[2] >> 4) << 4 | (c[3] >> 4) << 6;
            }
        }
        for s in 0..16 {
            block[192 + s] = scale(s) as u8;
        }
        block[208..210].copy_from_slice(&half::f16::from_f32(0.125).to_bits().to_le_bytes());
        let mut out = [0.0; BLOCK_LEN];
        dequantize(&block, &mut out);
        for (i, &v) in out.iter().enumerate() {
            let want = 0.125 * f32::from(scale(i / 16)) * (f32::from(code(i)) - 32.0);
            assert_eq!(v, want, "weight {i}");
        }
    }
}
