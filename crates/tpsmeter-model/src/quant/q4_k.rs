//! Q4_K: 256 weights in 144 bytes, as 8 sub-blocks of 32 with 6-bit scales and minimums.
//!
//! ```text
//! offset  size  field
//! 0       2     d: f16 super-scale of the sub-block scales
//! 2       2     dmin: f16 super-scale of the sub-block minimums
//! 4       12    scales: eight 6-bit scales and eight 6-bit minimums, packed (see below)
//! 16      128   qs: four groups of 32 bytes; group g holds sub-block 2g in the low nibbles
//!               and sub-block 2g + 1 in the high nibbles
//! ```
//! `weight = d * scale[s] * q - dmin * min[s]`.
//!
//! Scale packing (ggml's `get_scale_min_k4`): for s < 4, `scale = scales[s] & 63` and
//! `min = scales[s + 4] & 63`; for s ≥ 4, the low 4 bits come from the nibbles of
//! `scales[s + 4]` (scale low, min high) and the top 2 bits from bits 6..8 of
//! `scales[s - 4]` (scale) and `scales[s]` (min).

use super::scalar::f16_at;

/// Bytes per block.
pub const BLOCK_BYTES: usize = 144;
/// Weights per block.
pub const BLOCK_LEN: usize = 256;

/// The (scale, min) pair of sub-block `s` (0..8) from the 12 packed bytes.
#[inline]
pub fn scale_min(s: usize, scales: &[u8]) -> (u8, u8) {
    if s < 4 {
        (scales[s] & 63, scales[s + 4] & 63)
    } else {
        (
            (scales[s + 4] & 0x0f) | ((scales[s - 4] >> 6) << 4),
            (scales[s + 4] >> 4) | ((scales[s] >> 6) << 4),
        )
    }
}

/// Expands whole blocks (lengths checked by the caller).
pub fn dequantize(bytes: &[u8], out: &mut [f32]) {
    for (block, y) in bytes
        .chunks_exact(BLOCK_BYTES)
        .zip(out.chunks_exact_mut(BLOCK_LEN))
    {
        let d = f16_at(block, 0);
        let dmin = f16_at(block, 2);
        let scales = &block[4..16];
        let qs = &block[16..];
        for g in 0..4 {
            let (s1, m1) = scale_min(2 * g, scales);
            let (s2, m2) = scale_min(2 * g + 1, scales);
            let (d1, d2) = (d * f32::from(s1), d * f32::from(s2));
            let (min1, min2) = (dmin * f32::from(m1), dmin * f32::from(m2));
            let q = &qs[32 * g..32 * g + 32];
            let y = &mut y[64 * g..64 * g + 64];
            for l in 0..32 {
                y[l] = d1 * f32::from(q[l] & 0x0f) - min1;
                y[l + 32] = d2 * f32::from(q[l] >> 4) - min2;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Packs eight 6-bit (scale, min) pairs the way ggml's quantize_row_q4_K does.
    pub(crate) fn pack_scales(sc: [u8; 8], mn: [u8; 8]) -> [u8; 12] {
        let mut out = [0u8; 12];
        for j in 0..8 {
            if j < 4 {
                out[j] = sc[j];
                out[j + 4] = mn[j];
            } else {
                out[j + 4] = (sc[j] & 0x0f) | ((mn[j] & 0x0f) << 4);
                out[j - 4] |= (sc[j] >> 4) << 6;
                out[j] |= (mn[j] >> 4) << 6;
            }
        }
        out
    }

    #[test]
    fn scale_packing_round_trips() {
        let sc = [1, 63, 17, 40, 33, 62, 5, 48];
        let mn = [63, 0, 21, 9, 50, 3, 44, 31];
        let packed = pack_scales(sc, mn);
        for s in 0..8 {
            assert_eq!(scale_min(s, &packed), (sc[s], mn[s]), "sub-block {s}");
        }
    }

    #[test]
    fn hand_built_block() {
        let sc = [1, 2, 3, 4, 5, 6, 7, 8];
        let mn = [8, 7, 6, 5, 4, 3, 2, 1];
        let mut block = [0u8; BLOCK_BYTES];
        block[0..2].copy_from_slice(&half::f16::from_f32(0.5).to_bits().to_le_bytes());
        block[2..4].copy_from_slice(&half::f16::from_f32(0.25).to_bits().to_le_bytes());
        block[4..16].copy_from_slice(&pack_scales(sc, mn));
        for (i, q) in block[16..].iter_mut().enumerate() {
            *q = (i % 16) as u8 | (((i + 3) % 16) as u8) << 4;
        }
        let mut out = [0.0; BLOCK_LEN];
        dequantize(&block, &mut out);
        for (i, &v) in out.iter().enumerate() {
            let (g, within) = (i / 64, i % 64);
            let (s, l) = (2 * g + within / 32, within % 32);
            let byte = 32 * g + l;
            let q = if within < 32 {
                byte % 16
            } else {
                (byte + 3) % 16
            };
            let want = 0.5 * f32::from(sc[s]) * q as f32 - 0.25 * f32::from(mn[s]);
            assert_eq!(v, want, "weight {i}");
        }
    }
}
