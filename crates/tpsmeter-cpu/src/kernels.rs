//! Dot products of one quantized weight row with one token's activations, per GGML block
//! format, on the blocks as stored.
//!
//! Integer formats multiply their codes with the activations' 8-bit codes ([`super::q8`]) in
//! i32 and apply the scales once per 32 weights, as llama.cpp's CPU backend does; float
//! formats (F32, F16, BF16) multiply in f32. Every format the crate can dequantize has a path:
//! the ones without a kernel here expand a block to f32 and take the float path.
//!
//! A block is unpacked once ([`RowDot::unpack`]) and multiplied with every token's
//! activations ([`dot_tokens`]), so a prompt chunk pays for the unpacking once per weight.
//!
//! The code is plain Rust written so that LLVM vectorises it: fixed 32-lane integer loops
//! ([`idot32`]) and no branches inside a block. [`super::matrix`] compiles it twice on x86-64
//! (baseline, and with AVX2 and FMA enabled, chosen at run time), and the wasm build with
//! `simd128` turns the same loops into wasm SIMD.

use super::f16;
use super::q8::{Activations, Q8KBlock, round_f16};
use tpsmeter_model::quant;

/// A weight format: how a block unpacks, and its dot product with the activations of the
/// same columns.
pub trait RowDot {
    /// Bytes and weights per block.
    const BLOCK_BYTES: usize;
    const BLOCK_LEN: usize;
    /// Whether a row may end in a partial block: the float formats, whose GGML block is one
    /// weight (a matrix of any width is valid), though these kernels take them 32 at a time.
    /// Their `unpack` and `dot` then take a short last block; quantized rows are whole
    /// blocks ([`super::matrix::QMatrix::new`] checks), so theirs never see one.
    const PARTIAL: bool = false;
    /// A block ready to multiply: integer codes and f32 scales.
    type Block;
    fn unpack(b: &[u8]) -> Self::Block;
    /// The dot product of block `i` of a row with the same columns of `a`.
    fn dot(w: &Self::Block, a: &Activations, i: usize) -> f32;
    /// [`RowDot::dot`] of a row's short last block (only where [`RowDot::PARTIAL`]): kept
    /// apart so that `dot` keeps its fixed 32 lanes on the hot path.
    fn dot_partial(w: &Self::Block, a: &Activations, i: usize) -> f32 {
        Self::dot(w, a, i)
    }
}

/// `out[t] = row · acts[t]` for every token: each block unpacked once.
#[inline(always)]
pub fn dot_tokens<K: RowDot>(row: &[u8], acts: &[Activations], out: &mut [f32]) {
    out.fill(0.0);
    let blocks = row.chunks_exact(K::BLOCK_BYTES);
    let (tail, whole) = (blocks.remainder(), blocks.len());
    for (i, b) in blocks.enumerate() {
        let w = K::unpack(b);
        for (o, a) in out.iter_mut().zip(acts) {
            *o += K::dot(&w, a, i);
        }
    }
    if K::PARTIAL && !tail.is_empty() {
        let w = K::unpack(tail);
        for (o, a) in out.iter_mut().zip(acts) {
            *o += K::dot_partial(&w, a, whole);
        }
    }
}

/// `row · act`: [`dot_tokens`] for one token (a decode step).
#[inline(always)]
pub fn dot_one<K: RowDot>(row: &[u8], act: &Activations) -> f32 {
    let mut acc = 0f32;
    let blocks = row.chunks_exact(K::BLOCK_BYTES);
    let (tail, whole) = (blocks.remainder(), blocks.len());
    for (i, b) in blocks.enumerate() {
        acc += K::dot(&K::unpack(b), act, i);
    }
    if K::PARTIAL && !tail.is_empty() {
        acc += K::dot_partial(&K::unpack(tail), act, whole);
    }
    acc
}

/// `Σ w[i]·a[i]` over 32 lanes in i32: the loop LLVM turns into `pmaddwd`/`vpmaddwd` (x86) or
/// `i32x4.dot_i16x8_s` (wasm).
#[inline(always)]
pub fn idot32(w: &[i8; 32], a: &[i8; 32]) -> i32 {
    let mut s = 0i32;
    for i in 0..32 {
        s += i32::from(w[i]) * i32::from(a[i]);
    }
    s
}

/// Σ over the two halves of 32 lanes separately.
#[inline(always)]
fn idot16x2(w: &[i8; 32], a: &[i8; 32]) -> (i32, i32) {
    let (mut lo, mut hi) = (0i32, 0i32);
    for i in 0..16 {
        lo += i32::from(w[i]) * i32::from(a[i]);
        hi += i32::from(w[i + 16]) * i32::from(a[i + 16]);
    }
    (lo, hi)
}

/// Splits 16 bytes of nibbles into 32 codes: byte j gives code j (low) and j + 16 (high),
/// the layout of Q4_0/Q4_1/Q5_0/Q5_1, each code minus `bias`.
#[inline(always)]
fn nibbles(qs: &[u8], bias: i8) -> [i8; 32] {
    let mut w = [0i8; 32];
    for j in 0..16 {
        w[j] = (qs[j] & 0x0f) as i8 - bias;
        w[j + 16] = (qs[j] >> 4) as i8 - bias;
    }
    w
}

/// Adds the fifth bit of each code from `qh` (bit j for code j).
#[inline(always)]
fn fifth_bits(w: &mut [i8; 32], qh: u32) {
    for (j, v) in w.iter_mut().enumerate() {
        *v += (((qh >> j) & 1) << 4) as i8;
    }
}

#[inline(always)]
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// A 32-weight block with one scale (and for some formats a minimum).
#[derive(Debug)]
pub struct Block32 {
    d: f32,
    m: f32,
    q: [i8; 32],
}

/// Q4_0: 18 bytes, `d`, 16 bytes of nibbles; weight = d·(code − 8).
#[derive(Debug)]
pub struct Q4_0;
impl RowDot for Q4_0 {
    const BLOCK_BYTES: usize = quant::q4_0::BLOCK_BYTES;
    const BLOCK_LEN: usize = quant::q4_0::BLOCK_LEN;
    type Block = Block32;
    #[inline(always)]
    fn unpack(b: &[u8]) -> Block32 {
        Block32 {
            d: f16::at(b, 0),
            m: 0.0,
            q: nibbles(&b[2..18], 8),
        }
    }
    #[inline(always)]
    fn dot(w: &Block32, a: &Activations, i: usize) -> f32 {
        let a = &a.q8[i];
        w.d * a.d * idot32(&w.q, &a.qs) as f32
    }
}

/// Q4_1: 20 bytes, `d`, `m`, 16 bytes of nibbles; weight = d·code + m.
#[derive(Debug)]
pub struct Q4_1;
impl RowDot for Q4_1 {
    const BLOCK_BYTES: usize = quant::q4_1::BLOCK_BYTES;
    const BLOCK_LEN: usize = quant::q4_1::BLOCK_LEN;
    type Block = Block32;
    #[inline(always)]
    fn unpack(b: &[u8]) -> Block32 {
        Block32 {
            d: f16::at(b, 0),
            m: f16::at(b, 2),
            q: nibbles(&b[4..20], 0),
        }
    }
    #[inline(always)]
    fn dot(w: &Block32, a: &Activations, i: usize) -> f32 {
        let a = &a.q8[i];
        w.d * a.d * idot32(&w.q, &a.qs) as f32 + w.m * a.s
    }
}

/// Q5_0: 22 bytes, `d`, 32 high bits, 16 bytes of nibbles; weight = d·(code − 16).
#[derive(Debug)]
pub struct Q5_0;
impl RowDot for Q5_0 {
    const BLOCK_BYTES: usize = quant::q5_0::BLOCK_BYTES;
    const BLOCK_LEN: usize = quant::q5_0::BLOCK_LEN;
    type Block = Block32;
    #[inline(always)]
    fn unpack(b: &[u8]) -> Block32 {
        let mut q = nibbles(&b[6..22], 16);
        fifth_bits(&mut q, u32_at(b, 2));
        Block32 {
            d: f16::at(b, 0),
            m: 0.0,
            q,
        }
    }
    #[inline(always)]
    fn dot(w: &Block32, a: &Activations, i: usize) -> f32 {
        Q4_0::dot(w, a, i)
    }
}

/// Q5_1: 24 bytes, `d`, `m`, 32 high bits, 16 bytes of nibbles; weight = d·code + m.
#[derive(Debug)]
pub struct Q5_1;
impl RowDot for Q5_1 {
    const BLOCK_BYTES: usize = quant::q5_1::BLOCK_BYTES;
    const BLOCK_LEN: usize = quant::q5_1::BLOCK_LEN;
    type Block = Block32;
    #[inline(always)]
    fn unpack(b: &[u8]) -> Block32 {
        let mut q = nibbles(&b[8..24], 0);
        fifth_bits(&mut q, u32_at(b, 4));
        Block32 {
            d: f16::at(b, 0),
            m: f16::at(b, 2),
            q,
        }
    }
    #[inline(always)]
    fn dot(w: &Block32, a: &Activations, i: usize) -> f32 {
        Q4_1::dot(w, a, i)
    }
}

/// Q8_0: 34 bytes, `d`, 32 signed codes; weight = d·code.
#[derive(Debug)]
pub struct Q8_0;
impl RowDot for Q8_0 {
    const BLOCK_BYTES: usize = quant::q8_0::BLOCK_BYTES;
    const BLOCK_LEN: usize = quant::q8_0::BLOCK_LEN;
    type Block = Block32;
    #[inline(always)]
    fn unpack(b: &[u8]) -> Block32 {
        let mut q = [0i8; 32];
        for (v, &c) in q.iter_mut().zip(&b[2..34]) {
            *v = c as i8;
        }
        Block32 {
            d: f16::at(b, 0),
            m: 0.0,
            q,
        }
    }
    #[inline(always)]
    fn dot(w: &Block32, a: &Activations, i: usize) -> f32 {
        Q4_0::dot(w, a, i)
    }
}

/// A 256-weight K-quant block: eight groups of 32 codes with integer scales and minimums
/// (Q4_K, Q5_K) or sixteen scales of 16 (Q6_K), and the block's f16 factors.
#[derive(Debug)]
pub struct Block256 {
    q: [[i8; 32]; 8],
    scale: [i32; 16],
    min: [i32; 8],
    d: f32,
    dmin: f32,
}

/// Q4_K and Q5_K groups' 6-bit scales and mins from the 12 packed bytes.
#[inline(always)]
fn k_scales(b: &[u8]) -> ([i32; 16], [i32; 8]) {
    let mut scale = [0i32; 16];
    let mut min = [0i32; 8];
    for j in 0..8 {
        let (sc, mn) = quant::q4_k::scale_min(j, &b[4..16]);
        scale[j] = i32::from(sc);
        min[j] = i32::from(mn);
    }
    (scale, min)
}

/// The codes of group `j` of a Q8_K block.
#[inline(always)]
fn group(y: &Q8KBlock, j: usize) -> &[i8; 32] {
    let s: &[i8] = &y.qs[32 * j..32 * j + 32];
    s.try_into().unwrap_or(&[0; 32])
}

/// llama.cpp's `q4_K × q8_K` arithmetic: integer sums of `scale_j·(w_j·a_j)` and of
/// `min_j·Σa_j`, then two float products.
#[inline(always)]
fn dot_k(w: &Block256, y: &Q8KBlock) -> f32 {
    let (mut sums, mut mins) = (0i32, 0i32);
    for j in 0..8 {
        sums += w.scale[j] * idot32(&w.q[j], group(y, j));
        mins += w.min[j] * (i32::from(y.bsums[2 * j]) + i32::from(y.bsums[2 * j + 1]));
    }
    y.d * w.d * sums as f32 - y.d * w.dmin * mins as f32
}

/// Q4_K: 144 bytes per 256, `d`, `dmin`, 12 bytes of 6-bit scales and mins for 8 groups of
/// 32, 128 bytes of nibbles (64 weights per 32 bytes: low nibbles one group, high the next);
/// weight = d·scale·code − dmin·min.
#[derive(Debug)]
pub struct Q4K;
impl RowDot for Q4K {
    const BLOCK_BYTES: usize = quant::q4_k::BLOCK_BYTES;
    const BLOCK_LEN: usize = quant::q4_k::BLOCK_LEN;
    type Block = Block256;
    #[inline(always)]
    fn unpack(b: &[u8]) -> Block256 {
        let (scale, min) = k_scales(b);
        let mut q = [[0i8; 32]; 8];
        for g in 0..4 {
            let qs = &b[16 + 32 * g..48 + 32 * g];
            for l in 0..32 {
                q[2 * g][l] = (qs[l] & 0x0f) as i8;
                q[2 * g + 1][l] = (qs[l] >> 4) as i8;
            }
        }
        Block256 {
            q,
            scale,
            min,
            d: f16::at(b, 0),
            dmin: f16::at(b, 2),
        }
    }
    #[inline(always)]
    fn dot(w: &Block256, a: &Activations, i: usize) -> f32 {
        dot_k(w, &a.q8k[i])
    }
}

/// Q5_K: 176 bytes per 256: Q4_K's layout with a fifth bit per weight in 32 bytes (bit j of
/// byte l for weight l of group j).
#[derive(Debug)]
pub struct Q5K;
impl RowDot for Q5K {
    const BLOCK_BYTES: usize = quant::q5_k::BLOCK_BYTES;
    const BLOCK_LEN: usize = quant::q5_k::BLOCK_LEN;
    type Block = Block256;
    #[inline(always)]
    fn unpack(b: &[u8]) -> Block256 {
        let (scale, min) = k_scales(b);
        let qh = &b[16..48];
        let mut q = [[0i8; 32]; 8];
        for g in 0..4 {
            let qs = &b[48 + 32 * g..80 + 32 * g];
            for l in 0..32 {
                q[2 * g][l] = ((qs[l] & 0x0f) | (((qh[l] >> (2 * g)) & 1) << 4)) as i8;
                q[2 * g + 1][l] = ((qs[l] >> 4) | (((qh[l] >> (2 * g + 1)) & 1) << 4)) as i8;
            }
        }
        Block256 {
            q,
            scale,
            min,
            d: f16::at(b, 0),
            dmin: f16::at(b, 2),
        }
    }
    #[inline(always)]
    fn dot(w: &Block256, a: &Activations, i: usize) -> f32 {
        dot_k(w, &a.q8k[i])
    }
}

/// Q6_K: 210 bytes per 256: per half of 128, 64 bytes of low nibbles, 32 of 2-bit highs, 8
/// signed scales (one per 16 weights); then `d`. weight = d·scale·(code − 32).
#[derive(Debug)]
pub struct Q6K;
impl RowDot for Q6K {
    const BLOCK_BYTES: usize = quant::q6_k::BLOCK_BYTES;
    const BLOCK_LEN: usize = quant::q6_k::BLOCK_LEN;
    type Block = Block256;
    #[inline(always)]
    fn unpack(b: &[u8]) -> Block256 {
        let mut q = [[0i8; 32]; 8];
        for half in 0..2 {
            let ql = &b[64 * half..64 * half + 64];
            let qh = &b[128 + 32 * half..160 + 32 * half];
            let g = 4 * half;
            for l in 0..32 {
                q[g][l] = ((ql[l] & 0x0f) | ((qh[l] & 3) << 4)) as i8 - 32;
                q[g + 1][l] = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) as i8 - 32;
                q[g + 2][l] = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) as i8 - 32;
                q[g + 3][l] = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) as i8 - 32;
            }
        }
        let mut scale = [0i32; 16];
        for (s, &c) in scale.iter_mut().zip(&b[192..208]) {
            *s = i32::from(c as i8);
        }
        Block256 {
            q,
            scale,
            min: [0; 8],
            d: f16::at(b, 208),
            dmin: 0.0,
        }
    }
    #[inline(always)]
    fn dot(w: &Block256, a: &Activations, i: usize) -> f32 {
        let y = &a.q8k[i];
        let mut sums = 0i32;
        for j in 0..8 {
            let (lo, hi) = idot16x2(&w.q[j], group(y, j));
            sums += w.scale[2 * j] * lo + w.scale[2 * j + 1] * hi;
        }
        w.d * y.d * sums as f32
    }
}

/// 32 float weights (a short last block of a row: the rest zero).
#[derive(Debug)]
pub struct Floats([f32; 32]);

/// The activations block `i` of a float row multiplies: 32, or fewer at the end of a row
/// whose width is not a multiple of 32 (`fdot` stops at the shorter side).
#[inline(always)]
fn floats_of(a: &Activations, i: usize) -> &[f32] {
    let start = (32 * i).min(a.x.len());
    &a.x[start..(start + 32).min(a.x.len())]
}

/// Σ w·round(x) in eight partial sums (which lets LLVM keep them in one vector register),
/// `round` giving the activation as the format's dot product sees it.
#[inline(always)]
fn fdot(w: &[f32; 32], x: &[f32], round: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0f32; 8];
    for (i, (w, &x)) in w.iter().zip(x).enumerate() {
        acc[i % 8] += w * round(x);
    }
    acc.iter().sum()
}

/// F32 weights.
#[derive(Debug)]
pub struct F32;
impl RowDot for F32 {
    const BLOCK_BYTES: usize = 128;
    const BLOCK_LEN: usize = 32;
    const PARTIAL: bool = true;
    type Block = Floats;
    #[inline(always)]
    fn unpack(b: &[u8]) -> Floats {
        let mut w = [0f32; 32];
        for (v, c) in w.iter_mut().zip(b.chunks_exact(4)) {
            *v = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        Floats(w)
    }
    #[inline(always)]
    fn dot(w: &Floats, a: &Activations, i: usize) -> f32 {
        fdot(&w.0, &a.x[32 * i..32 * i + 32], |x| x)
    }
    #[inline(always)]
    fn dot_partial(w: &Floats, a: &Activations, i: usize) -> f32 {
        fdot(&w.0, floats_of(a, i), |x| x)
    }
}

/// F16 weights.
#[derive(Debug)]
pub struct F16;
impl RowDot for F16 {
    const BLOCK_BYTES: usize = 64;
    const BLOCK_LEN: usize = 32;
    const PARTIAL: bool = true;
    type Block = Floats;
    #[inline(always)]
    fn unpack(b: &[u8]) -> Floats {
        let mut w = [0f32; 32];
        for (v, c) in w.iter_mut().zip(b.chunks_exact(2)) {
            *v = f16::at(c, 0);
        }
        Floats(w)
    }
    /// llama.cpp multiplies F16 weights with activations rounded to f16.
    #[inline(always)]
    fn dot(w: &Floats, a: &Activations, i: usize) -> f32 {
        fdot(&w.0, &a.x[32 * i..32 * i + 32], round_f16)
    }
    #[inline(always)]
    fn dot_partial(w: &Floats, a: &Activations, i: usize) -> f32 {
        fdot(&w.0, floats_of(a, i), round_f16)
    }
}

/// BF16 weights.
#[derive(Debug)]
pub struct Bf16;
impl RowDot for Bf16 {
    const BLOCK_BYTES: usize = 64;
    const BLOCK_LEN: usize = 32;
    const PARTIAL: bool = true;
    type Block = Floats;
    #[inline(always)]
    fn unpack(b: &[u8]) -> Floats {
        let mut w = [0f32; 32];
        for (v, c) in w.iter_mut().zip(b.chunks_exact(2)) {
            *v = f32::from_bits(u32::from(u16::from_le_bytes([c[0], c[1]])) << 16);
        }
        Floats(w)
    }
    /// llama.cpp multiplies BF16 weights with activations rounded to bf16.
    #[inline(always)]
    fn dot(w: &Floats, a: &Activations, i: usize) -> f32 {
        fdot(&w.0, &a.x[32 * i..32 * i + 32], |x| {
            half::bf16::from_f32(x).to_f32()
        })
    }
    #[inline(always)]
    fn dot_partial(w: &Floats, a: &Activations, i: usize) -> f32 {
        fdot(&w.0, floats_of(a, i), |x| half::bf16::from_f32(x).to_f32())
    }
}
