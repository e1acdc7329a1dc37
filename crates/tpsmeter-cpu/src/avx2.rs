//! Hand-written AVX2 row kernels for the formats small models are made of (Q4_0, Q4_1, Q8_0,
//! and the K-quants Q4_K and Q6_K of `Q4_K_M` files):
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
use super::q8::{Activations, Q8Block, Q8KBlock};

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

/// The codes of group `j` (32) of a Q8_K block.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn k_codes(y: &Q8KBlock, j: usize) -> __m256i {
    let s: &[i8] = &y.qs[32 * j..32 * j + 32];
    // SAFETY: 32 readable bytes (the slice above).
    unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
}

/// Q4_K rows (llama.cpp's `q4_K × q8_K`): per pair of groups, one 32-byte load gives both
/// groups' codes; byte products are scaled by the 6-bit scales in 16-bit lanes and summed in
/// eight i32 lanes per block; the minimums come from the activations' sums of 16.
#[target_feature(enable = "avx2,fma")]
pub fn q4_k(row: &[u8], acts: &[Activations], out: &mut [f32]) {
    let mask = _mm256_set1_epi8(0x0f);
    for (group, outs) in acts.chunks(GROUP).zip(out.chunks_mut(GROUP)) {
        let mut acc = [_mm256_setzero_ps(); GROUP];
        let mut mins = [0f32; GROUP];
        for (i, b) in row.chunks_exact(144).enumerate() {
            let (d, dmin) = (f16::at(b, 0), f16::at(b, 2));
            let mut sc = [0i16; 8];
            let mut mn = [0i32; 8];
            for (j, (s, m)) in sc.iter_mut().zip(&mut mn).enumerate() {
                let (a, c) = tpsmeter_model::quant::q4_k::scale_min(j, &b[4..16]);
                *s = i16::from(a);
                *m = i32::from(c);
            }
            let mut q = [_mm256_setzero_si256(); 8];
            for g in 0..4 {
                let bytes = load32(&b[16 + 32 * g..48 + 32 * g]);
                q[2 * g] = _mm256_and_si256(bytes, mask);
                q[2 * g + 1] = _mm256_and_si256(_mm256_srli_epi16::<4>(bytes), mask);
            }
            for (k, a) in group.iter().enumerate() {
                let y = &a.q8k[i];
                let mut sumi = _mm256_setzero_si256();
                for j in 0..8 {
                    let p = _mm256_maddubs_epi16(q[j], k_codes(y, j));
                    sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, _mm256_set1_epi16(sc[j])));
                }
                let mut summ = 0i32;
                for (j, m) in mn.iter().enumerate() {
                    summ += m * (i32::from(y.bsums[2 * j]) + i32::from(y.bsums[2 * j + 1]));
                }
                acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(d * y.d), _mm256_cvtepi32_ps(sumi), acc[k]);
                mins[k] += dmin * y.d * summ as f32;
            }
        }
        for (k, o) in outs.iter_mut().enumerate() {
            *o = hsum(acc[k]) - mins[k];
        }
    }
}

/// Q6_K rows (llama.cpp's `q6_K × q8_K`): codes 0..63 times activations as unsigned × signed
/// bytes, each 16-lane half scaled by its signed scale; the codes' offset of 32 is taken off
/// once per block through the activations' sums of 16.
#[target_feature(enable = "avx2,fma")]
pub fn q6_k(row: &[u8], acts: &[Activations], out: &mut [f32]) {
    let m4 = _mm256_set1_epi8(0x0f);
    let m2 = _mm256_set1_epi8(0x03);
    for (group, outs) in acts.chunks(GROUP).zip(out.chunks_mut(GROUP)) {
        let mut acc = [_mm256_setzero_ps(); GROUP];
        for (i, b) in row.chunks_exact(210).enumerate() {
            let d = f16::at(b, 208);
            let sc: [i16; 16] = std::array::from_fn(|j| i16::from(b[192 + j] as i8));
            let mut q = [_mm256_setzero_si256(); 8];
            for h in 0..2 {
                let ql0 = load32(&b[64 * h..64 * h + 32]);
                let ql1 = load32(&b[64 * h + 32..64 * h + 64]);
                let qh = load32(&b[128 + 32 * h..160 + 32 * h]);
                let hi = |shift: i32| -> __m256i {
                    // (qh >> shift) & 3, moved to bits 4..5.
                    let v = match shift {
                        0 => qh,
                        2 => _mm256_srli_epi16::<2>(qh),
                        4 => _mm256_srli_epi16::<4>(qh),
                        _ => _mm256_srli_epi16::<6>(qh),
                    };
                    _mm256_slli_epi16::<4>(_mm256_and_si256(v, m2))
                };
                q[4 * h] = _mm256_or_si256(_mm256_and_si256(ql0, m4), hi(0));
                q[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(ql1, m4), hi(2));
                q[4 * h + 2] =
                    _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16::<4>(ql0), m4), hi(4));
                q[4 * h + 3] =
                    _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16::<4>(ql1), m4), hi(6));
            }
            for (k, a) in group.iter().enumerate() {
                let y = &a.q8k[i];
                let mut sumi = _mm256_setzero_si256();
                for (j, qj) in q.iter().enumerate() {
                    let p = _mm256_maddubs_epi16(*qj, k_codes(y, j));
                    let s = _mm256_setr_epi16(
                        sc[2 * j],
                        sc[2 * j],
                        sc[2 * j],
                        sc[2 * j],
                        sc[2 * j],
                        sc[2 * j],
                        sc[2 * j],
                        sc[2 * j],
                        sc[2 * j + 1],
                        sc[2 * j + 1],
                        sc[2 * j + 1],
                        sc[2 * j + 1],
                        sc[2 * j + 1],
                        sc[2 * j + 1],
                        sc[2 * j + 1],
                        sc[2 * j + 1],
                    );
                    sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, s));
                }
                let mut offset = 0i32;
                for (s, &bs) in sc.iter().zip(&y.bsums) {
                    offset += i32::from(*s) * i32::from(bs);
                }
                let total =
                    _mm256_sub_epi32(sumi, _mm256_setr_epi32(32 * offset, 0, 0, 0, 0, 0, 0, 0));
                acc[k] =
                    _mm256_fmadd_ps(_mm256_set1_ps(d * y.d), _mm256_cvtepi32_ps(total), acc[k]);
            }
        }
        for (k, o) in outs.iter_mut().enumerate() {
            *o = hsum(acc[k]);
        }
    }
}
