//! Hand-written AVX2 row kernels for the formats small models are made of (Q4_0, Q4_1, Q8_0):
//! where LLVM's vectorisation of the portable kernels sums each block's 32 products down to
//! one integer, these keep eight lanes of partial sums as floats across the whole row
//! (`vpmaddubsw` for 32 byte products at once, one `vfmadd` per block) and add them up once
//! at its end, as llama.cpp's x86 kernels do. The integer arithmetic per block is the same,
//! so results differ from the portable kernels only by float summation order.
//!
//! Only [`super::matrix`] calls these, and only once `Simd::Avx2` was detected.
#![allow(unsafe_code)]

use std::arch::x86_64::*;

use super::f16;
use super::q8::{Activations, Q8Block};

/// Sum of the eight lanes.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn hsum(v: __m256) -> f32 {
    let lo = _mm256_castps256_ps128(v);
    let hi = _mm256_extractf128_ps::<1>(v);
    let s = _mm_add_ps(lo, hi);
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    let s = _mm_add_ss(s, _mm_movehdup_ps(s));
    _mm_cvtss_f32(s)
}

/// 32 bytes from `b` (`b.len() >= 32`, checked by the caller's block length).
#[inline]
#[target_feature(enable = "avx2,fma")]
fn load32(b: &[u8]) -> __m256i {
    assert!(b.len() >= 32);
    // SAFETY: 32 readable bytes at `b` (asserted); the load is unaligned.
    unsafe { _mm256_loadu_si256(b.as_ptr().cast()) }
}

/// 16 bytes from `b` (`b.len() >= 16`).
#[inline]
#[target_feature(enable = "avx2,fma")]
fn load16(b: &[u8]) -> __m128i {
    assert!(b.len() >= 16);
    // SAFETY: 16 readable bytes at `b` (asserted); the load is unaligned.
    unsafe { _mm_loadu_si128(b.as_ptr().cast()) }
}

/// The activation codes of a block.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn codes(a: &Q8Block) -> __m256i {
    let bytes: &[i8] = &a.qs;
    // SAFETY: `qs` is 32 bytes.
    unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) }
}

/// 16 nibble bytes as 32 codes 0..15: low nibbles first (codes 0..15), then the high ones.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn nibbles(qs: &[u8]) -> __m256i {
    let b = load16(qs);
    let mask = _mm_set1_epi8(0x0f);
    let lo = _mm_and_si128(b, mask);
    let hi = _mm_and_si128(_mm_srli_epi16::<4>(b), mask);
    _mm256_set_m128i(hi, lo)
}

/// Eight i32 sums of products of unsigned `u` (0..255) and signed `s` bytes, as floats.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn mul_sum_us(u: __m256i, s: __m256i) -> __m256 {
    let pairs = _mm256_maddubs_epi16(u, s);
    _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)))
}

/// The same for two signed byte vectors: `|x|` times `y` with `x`'s sign moved onto it.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn mul_sum_ss(x: __m256i, y: __m256i) -> __m256 {
    mul_sum_us(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x))
}

/// Tokens per group: their accumulators stay in registers while a block, unpacked once,
/// multiplies each of them.
const GROUP: usize = 4;

/// One format's row kernel over every token: `out[t] = row · acts[t]`. `$weights` unpacks a
/// block into 32 byte codes, `$mul` multiplies them with a block of activation codes, `$min`
/// gives the block's minimum (0 for formats without one).
macro_rules! row_kernel {
    ($name:ident, $bytes:expr, $weights:expr, $mul:expr, $min:expr) => {
        #[target_feature(enable = "avx2,fma")]
        pub fn $name(row: &[u8], acts: &[Activations], out: &mut [f32]) {
            for (group, outs) in acts.chunks(GROUP).zip(out.chunks_mut(GROUP)) {
                let mut acc = [_mm256_setzero_ps(); GROUP];
                let mut mins = [0f32; GROUP];
                for (i, b) in row.chunks_exact($bytes).enumerate() {
                    let w = $weights(b);
                    let (d, m) = (f16::at(b, 0), $min(b));
                    for (k, a) in group.iter().enumerate() {
                        let y = &a.q8[i];
                        acc[k] =
                            _mm256_fmadd_ps(_mm256_set1_ps(d * y.d), $mul(w, codes(y)), acc[k]);
                        mins[k] += m * y.s;
                    }
                }
                for (k, o) in outs.iter_mut().enumerate() {
                    *o = hsum(acc[k]) + mins[k];
                }
            }
        }
    };
}

row_kernel!(
    q4_1,
    20,
    |b: &[u8]| nibbles(&b[4..20]),
    mul_sum_us,
    |b: &[u8]| f16::at(b, 2)
);
row_kernel!(
    q4_0,
    18,
    |b: &[u8]| _mm256_sub_epi8(nibbles(&b[2..18]), _mm256_set1_epi8(8)),
    mul_sum_ss,
    |_: &[u8]| 0.0
);
row_kernel!(
    q8_0,
    34,
    |b: &[u8]| load32(&b[2..34]),
    mul_sum_ss,
    |_: &[u8]| 0.0
);
