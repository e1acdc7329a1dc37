//! Activations quantized to 8 bits before the integer dot products, exactly as llama.cpp's
//! CPU backend rounds them (its x86 build): in blocks of 32 for the 32-weight formats
//! (`block_q8_0`/`block_q8_1`: scale `max|x|/127` kept as f16, codes rounded half to even,
//! and for formats with a minimum the block's sum kept as f16), and in blocks of 256 for the
//! K-quants (`block_q8_K`: scale `−max/127` from the largest-magnitude value, kept as f32,
//! with sums of 16). Rounding as llama.cpp does is what lets greedy decoding agree with it at
//! every position that is not a near-tie: two roundings of the same activations move logits
//! by tenths.

use super::f16;

/// Activation values per small block.
pub const Q8_LEN: usize = 32;
/// Activation values per K-quant block.
pub const Q8K_LEN: usize = 256;

/// 32 activations as `d · qs[i]`, with `s ≈ d · Σ qs` (both as f16 values).
#[derive(Clone, Copy, Debug, Default)]
pub struct Q8Block {
    pub d: f32,
    pub s: f32,
    pub qs: [i8; Q8_LEN],
    /// `Σ qs`, exact: a kernel that multiplies unsigned codes (relaxed SIMD's dot takes
    /// weights of 0..127) subtracts a format's offset times this.
    pub sum: i32,
}

/// 256 activations as `d · qs[i]`, with the sums of each 16.
#[derive(Clone, Copy, Debug)]
pub struct Q8KBlock {
    pub d: f32,
    pub qs: [i8; Q8K_LEN],
    pub bsums: [i16; 16],
}

/// One token's activations: as f32 (for float weights), and quantized for the integer
/// kernels when the length is whole blocks.
#[derive(Clone, Debug, Default)]
pub struct Activations {
    pub x: Vec<f32>,
    pub q8: Vec<Q8Block>,
    pub q8k: Vec<Q8KBlock>,
}

impl Activations {
    /// Fills from `x`, with blocks for every kernel.
    pub fn set(&mut self, x: &[f32]) {
        self.set_for(x, true);
    }

    /// Fills from `x`; the K-quants' 256-blocks only when `k_quants` (a model without
    /// K-quant matrices need not pay for them).
    pub fn set_for(&mut self, x: &[f32], k_quants: bool) {
        self.x.clear();
        self.x.extend_from_slice(x);
        self.q8.clear();
        if x.len().is_multiple_of(Q8_LEN) {
            self.q8.extend(x.chunks_exact(Q8_LEN).map(quantize_block));
        }
        self.q8k.clear();
        if k_quants && x.len().is_multiple_of(Q8K_LEN) {
            self.q8k
                .extend(x.chunks_exact(Q8K_LEN).map(quantize_k_block));
        }
    }
}

/// The f32 value nearest `v` that an f16 holds (what storing as f16 keeps), without a call:
/// attention rounds every probability. Equal to `half`'s round trip for every input
/// (`tests::rounding_to_f16_is_halfs`).
#[inline(always)]
pub fn round_f16(v: f32) -> f32 {
    let a = v.abs();
    if a < 6.103_515_6e-5 {
        // Below f16's smallest normal (2^-14) its steps are 2^-24 apart: scale, round half
        // to even, scale back (both scalings exact).
        return (rte(a * 16_777_216.0) / 16_777_216.0).copysign(v);
    }
    if a >= 65_520.0 || a.is_nan() {
        // Overflow to infinity, infinities and NaN: rare, left to `half`.
        return f16::to_f32(half::f16::from_f32(v).to_bits());
    }
    // Drop 13 of the 23 mantissa bits, rounding half to even (a carry moves the exponent).
    let b = v.to_bits();
    f32::from_bits(b.wrapping_add(0xfff + ((b >> 13) & 1)) & !0x1fff)
}

/// `v` rounded half to even, for |v| < 2^22: adding 1.5·2^23 leaves no fraction bits, so the
/// f32 addition itself rounds (llama.cpp's `nearest_int`; `f32::round_ties_even` is a libm
/// call on a baseline x86-64 build).
#[inline(always)]
fn rte(v: f32) -> f32 {
    (v + 12_582_912.0) - 12_582_912.0
}

/// `block_q8_1` of 32 values (also `block_q8_0`, which is the same without `s`).
#[inline]
pub fn quantize_block(x: &[f32]) -> Q8Block {
    let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
    let d = amax / 127.0;
    let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
    let mut b = Q8Block::default();
    let mut sum = 0i32;
    for (q, &v) in b.qs.iter_mut().zip(x) {
        // |v · id| ≤ 127 up to rounding of the product; the cast saturates regardless.
        *q = rte(v * id) as i8;
        sum += i32::from(*q);
    }
    b.d = round_f16(d);
    b.s = round_f16(d * sum as f32);
    b.sum = sum;
    b
}

/// `block_q8_K` of 256 values.
pub fn quantize_k_block(x: &[f32]) -> Q8KBlock {
    let mut b = Q8KBlock {
        d: 0.0,
        qs: [0; Q8K_LEN],
        bsums: [0; 16],
    };
    let (mut max, mut amax) = (0f32, 0f32);
    for &v in x {
        if v.abs() > amax {
            amax = v.abs();
            max = v;
        }
    }
    if amax == 0.0 {
        return b;
    }
    let iscale = -127.0 / max;
    for (q, &v) in b.qs.iter_mut().zip(x) {
        *q = (rte(iscale * v) as i32).min(127) as i8;
    }
    for (s, q) in b.bsums.iter_mut().zip(b.qs.chunks_exact(16)) {
        *s = q.iter().map(|&v| i16::from(v)).sum();
    }
    b.d = 1.0 / iscale;
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_to_f16_is_halfs() {
        let check = |v: f32| {
            let want = half::f16::from_f32(v).to_f32();
            let got = round_f16(v);
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "{v:e} ({:#x}): {got:e}, half gives {want:e}",
                v.to_bits()
            );
        };
        for bits in (0..=u32::MAX).step_by(997) {
            check(f32::from_bits(bits));
        }
        for v in [
            0.0,
            -0.0,
            6.103_515_6e-5,
            6.1e-5,
            5.960_464_5e-8,
            2.98e-8,
            65_504.0,
            65_519.99,
            65_520.0,
            1.0 + 1.0 / 2048.0,
        ] {
            check(v);
            check(-v);
        }
    }

    #[test]
    fn rounding_half_to_even_is_rints() {
        for i in -300_000..300_000 {
            let v = i as f32 / 1024.0;
            assert_eq!(rte(v), v.round_ties_even(), "{v}");
        }
    }

    #[test]
    fn blocks_round_trip_within_half_a_step() {
        let x: Vec<f32> = (0..256)
            .map(|i| ((i * 37 % 23) as f32 - 11.0) * 0.173)
            .collect();
        let b = quantize_block(&x[..32]);
        for (q, v) in b.qs.iter().zip(&x) {
            // d is rounded to f16 (relative error 2^-11) after the codes are chosen.
            assert!((f32::from(*q) * b.d - v).abs() <= b.d * 0.52 + 1e-6);
        }
        let k = quantize_k_block(&x);
        for (q, v) in k.qs.iter().zip(&x) {
            assert!((f32::from(*q) * k.d - v).abs() <= k.d.abs() * 0.5 + 1e-6);
        }
        assert_eq!(
            k.bsums[0],
            k.qs[..16].iter().map(|&q| i16::from(q)).sum::<i16>()
        );
        assert_eq!(quantize_block(&[0.0; 32]).qs, [0; 32]);
        assert_eq!(quantize_k_block(&[0.0; 256]).d, 0.0);
    }
}
