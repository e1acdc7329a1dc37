//! Hand-written wasm SIMD row kernels for the 32-weight formats small models are made of
//! (Q4_0, Q4_1, Q8_0). LLVM's vectorisation of the portable kernels unpacks each block's
//! codes into a stack array and reads them back; these split the nibbles in registers and
//! multiply 8 codes per `i32x4.dot_i16x8_s` (`pmaddwd` on x86).
//!
//! The block's integer sum is exact, and the float arithmetic after it is the portable
//! kernels' own, in the same order (`d·d'·Σ + m·s` added block by block): results are
//! bit-identical to [`super::kernels`], so the browser's tokens still equal the native
//! portable engine's at every position.
//!
//! With the `relaxed-simd` feature (a build of its own, for browsers that have relaxed SIMD:
//! the page's loader probes for it), Q4_0 and Q4_1 multiply 16 codes per
//! `i32x4.relaxed_dot_i8x16_i7x16_add` on the bytes as they are, with no widening. Its result
//! is exact and the same on every engine when the second operand's top bit is clear and no
//! pair of products leaves i16: the weights are the unsigned nibbles (0..15; Q4_0's offset of
//! 8 comes off as `8 · Σa`, exact) and a pair is at most 2·127·15. So these kernels are
//! bit-identical to the portable ones too. Q8_0's weights use all 8 bits: it keeps
//! `i32x4.dot_i16x8_s`.
//!
//! Only [`super::matrix`] calls these, and only with `Simd::Simd128`.
#![allow(unsafe_code)]

use core::arch::wasm32::*;

use super::f16;
use super::q8::{Activations, Q8Block};

/// 16 bytes from `b` (`b.len() >= 16`, checked).
#[inline]
#[target_feature(enable = "simd128")]
fn load16(b: &[u8]) -> v128 {
    assert!(b.len() >= 16);
    // SAFETY: 16 readable bytes at `b` (asserted); wasm loads need no alignment.
    unsafe { v128_load(b.as_ptr().cast()) }
}

/// The activation codes of a block, as two vectors of 16.
#[inline]
#[target_feature(enable = "simd128")]
fn codes(a: &Q8Block) -> (v128, v128) {
    let qs: &[i8; 32] = &a.qs;
    // SAFETY: `qs` is 32 bytes; wasm loads need no alignment.
    unsafe {
        (
            v128_load(qs.as_ptr().cast()),
            v128_load(qs.as_ptr().add(16).cast()),
        )
    }
}

/// Σ w[i]·a[i] over 16 signed bytes, as four i32 partial sums (exact).
#[inline]
#[target_feature(enable = "simd128")]
fn dot16(w: v128, a: v128) -> v128 {
    let lo = i32x4_dot_i16x8(i16x8_extend_low_i8x16(w), i16x8_extend_low_i8x16(a));
    let hi = i32x4_dot_i16x8(i16x8_extend_high_i8x16(w), i16x8_extend_high_i8x16(a));
    i32x4_add(lo, hi)
}

/// The sum of the four lanes.
#[inline]
#[target_feature(enable = "simd128")]
fn hsum(s: v128) -> i32 {
    let s = i32x4_add(s, i32x4_shuffle::<2, 3, 0, 1>(s, s));
    let s = i32x4_add(s, i32x4_shuffle::<1, 0, 3, 2>(s, s));
    i32x4_extract_lane::<0>(s)
}

/// The block's integer dot product: 32 weight codes (`w0` the first 16) with `a`'s codes.
#[inline]
#[target_feature(enable = "simd128")]
fn idot32(w0: v128, w1: v128, a: &Q8Block) -> i32 {
    let (a0, a1) = codes(a);
    hsum(i32x4_add(dot16(w0, a0), dot16(w1, a1)))
}

/// [`idot32`] for weight codes of 0..15, 16 products per relaxed dot (exact: see the module
/// docs).
#[cfg(feature = "relaxed-simd")]
#[inline]
#[target_feature(enable = "simd128,relaxed-simd")]
fn idot32_u4(w0: v128, w1: v128, a: &Q8Block) -> i32 {
    let (a0, a1) = codes(a);
    let s = i32x4_relaxed_dot_i8x16_i7x16_add(a0, w0, i32x4_splat(0));
    hsum(i32x4_relaxed_dot_i8x16_i7x16_add(a1, w1, s))
}

/// 16 nibble bytes as 32 codes 0..15, minus `bias`: the low nibbles are codes 0..15.
#[inline]
#[target_feature(enable = "simd128")]
fn nibbles(qs: &[u8], bias: i8) -> (v128, v128) {
    let b = load16(qs);
    let lo = v128_and(b, u8x16_splat(0x0f));
    let hi = u8x16_shr(b, 4);
    let bias = i8x16_splat(bias);
    (i8x16_sub(lo, bias), i8x16_sub(hi, bias))
}

/// One format's row kernel over every token: `out[t] = row · acts[t]`. `$weights` unpacks a
/// block into its two vectors of codes, `$idot` is their integer dot product with a block of
/// activations, `$term` the block's product from it (formats without a minimum add no `m·s`
/// term, as in the portable kernels); `$features` the instructions it is compiled for.
macro_rules! row_kernel {
    ($features:literal, $name:ident, $bytes:expr, $weights:expr, $idot:expr) => {
        row_kernel!(
            $features,
            $name,
            $bytes,
            $weights,
            $idot,
            |d: f32, y: &Q8Block, isum: i32, _b: &[u8]| d * y.d * isum as f32
        );
    };
    ($features:literal, $name:ident, $bytes:expr, $weights:expr, $idot:expr, $term:expr) => {
        #[target_feature(enable = $features)]
        pub fn $name(row: &[u8], acts: &[Activations], out: &mut [f32]) {
            out.fill(0.0);
            for (i, b) in row.chunks_exact($bytes).enumerate() {
                let (w0, w1) = $weights(b);
                let d = f16::at(b, 0);
                for (o, a) in out.iter_mut().zip(acts) {
                    let y = &a.q8[i];
                    *o += $term(d, y, $idot(w0, w1, y), b);
                }
            }
        }
    };
}

/// Q4_1's block: `d·d'·Σ + m·s`.
#[inline(always)]
fn q4_1_term(d: f32, y: &Q8Block, isum: i32, b: &[u8]) -> f32 {
    d * y.d * isum as f32 + f16::at(b, 2) * y.s
}

row_kernel!(
    "simd128",
    q8_0,
    34,
    |b: &[u8]| (load16(&b[2..18]), load16(&b[18..34])),
    idot32
);

#[cfg(not(feature = "relaxed-simd"))]
row_kernel!(
    "simd128",
    q4_0,
    18,
    |b: &[u8]| nibbles(&b[2..18], 8),
    idot32
);
#[cfg(not(feature = "relaxed-simd"))]
row_kernel!(
    "simd128",
    q4_1,
    20,
    |b: &[u8]| nibbles(&b[4..20], 0),
    idot32,
    q4_1_term
);

#[cfg(feature = "relaxed-simd")]
row_kernel!(
    "simd128,relaxed-simd",
    q4_0,
    18,
    |b: &[u8]| nibbles(&b[2..18], 0),
    |w0, w1, y: &Q8Block| idot32_u4(w0, w1, y) - 8 * y.sum
);
#[cfg(feature = "relaxed-simd")]
row_kernel!(
    "simd128,relaxed-simd",
    q4_1,
    20,
    |b: &[u8]| nibbles(&b[4..20], 0),
    idot32_u4,
    q4_1_term
);
