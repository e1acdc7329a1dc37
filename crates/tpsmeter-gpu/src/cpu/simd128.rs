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

/// The block's integer dot product: 32 weight codes (`w0` the first 16) with `a`'s codes.
#[inline]
#[target_feature(enable = "simd128")]
fn idot32(w0: v128, w1: v128, a: &Q8Block) -> i32 {
    let (a0, a1) = codes(a);
    let s = i32x4_add(dot16(w0, a0), dot16(w1, a1));
    let s = i32x4_add(s, i32x4_shuffle::<2, 3, 0, 1>(s, s));
    let s = i32x4_add(s, i32x4_shuffle::<1, 0, 3, 2>(s, s));
    i32x4_extract_lane::<0>(s)
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
/// block into its two vectors of codes, `$min` gives the block's minimum (formats without
/// one have none: their products add no `m·s` term, as in the portable kernels).
macro_rules! row_kernel {
    ($name:ident, $bytes:expr, $weights:expr) => {
        row_kernel!(
            $name,
            $bytes,
            $weights,
            |d: f32, y: &Q8Block, isum: i32, _b: &[u8]| d * y.d * isum as f32
        );
    };
    ($name:ident, $bytes:expr, $weights:expr, $term:expr) => {
        #[target_feature(enable = "simd128")]
        pub fn $name(row: &[u8], acts: &[Activations], out: &mut [f32]) {
            out.fill(0.0);
            for (i, b) in row.chunks_exact($bytes).enumerate() {
                let (w0, w1) = $weights(b);
                let d = f16::at(b, 0);
                for (o, a) in out.iter_mut().zip(acts) {
                    let y = &a.q8[i];
                    *o += $term(d, y, idot32(w0, w1, y), b);
                }
            }
        }
    };
}

row_kernel!(q4_0, 18, |b: &[u8]| nibbles(&b[2..18], 8));
row_kernel!(q8_0, 34, |b: &[u8]| (load16(&b[2..18]), load16(&b[18..34])));
row_kernel!(
    q4_1,
    20,
    |b: &[u8]| nibbles(&b[4..20], 0),
    |d: f32, y: &Q8Block, isum: i32, b: &[u8]| d * y.d * isum as f32 + f16::at(b, 2) * y.s
);
