//! Attention of one query head over the cached keys and values, and RoPE by a per-token
//! table of angles: the two parts of a layer that are not matrix products.

use super::cpu_runtime::Simd;
use super::f16;
use super::q8::round_f16;

/// How the cache stores a key or value: f32, or f16 (as bits), which halves its memory and
/// is llama.cpp's default.
pub trait KvElem: Copy + Default + Send + Sync + 'static {
    /// Whether values are f16 (and the products rounded as llama.cpp rounds them then).
    const F16: bool;
    fn store(v: f32) -> Self;
    fn load(self) -> f32;
}

impl KvElem for f32 {
    const F16: bool = false;
    #[inline(always)]
    fn store(v: f32) -> Self {
        v
    }
    #[inline(always)]
    fn load(self) -> f32 {
        self
    }
}

impl KvElem for u16 {
    const F16: bool = true;
    #[inline(always)]
    fn store(v: f32) -> Self {
        half::f16::from_f32(v).to_bits()
    }
    #[inline(always)]
    fn load(self) -> f32 {
        f16::to_f32(self)
    }
}
use tpsmeter_model::config::RopeLayout;

/// What one head's attention reads.
#[derive(Debug, Clone, Copy)]
pub struct HeadArgs<'a, T> {
    /// The query (`head_dim`).
    pub q: &'a [f32],
    /// Keys and values of every cached position, `[pos][k_dim]` and `[pos][v_dim]`.
    pub k: &'a [T],
    pub v: &'a [T],
    pub k_dim: usize,
    pub v_dim: usize,
    /// Offsets of this head's key and value within a position's row.
    pub k_off: usize,
    pub v_off: usize,
    /// Positions `first..=last` are attended to.
    pub first: usize,
    pub last: usize,
    pub scale: f32,
}

/// `out = softmax(scale · K·q) · V` for one head, in the kernels' instruction set.
/// With an f16 cache llama.cpp multiplies in f16: the query is rounded to f16 for K·q, and
/// the probabilities for V·p; so is done here, which keeps greedy decoding with it.
pub fn head<T: KvElem>(simd: Simd, a: &HeadArgs<'_, T>, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if simd == Simd::Avx2 {
        #[allow(unsafe_code)]
        // SAFETY: `Simd::Avx2` is chosen only where AVX2 and FMA were detected.
        unsafe {
            head_avx2(a, out)
        };
        return;
    }
    let _ = simd;
    head_plain(a, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn head_avx2<T: KvElem>(a: &HeadArgs<'_, T>, out: &mut [f32]) {
    head_plain(a, out);
}

// Plain loops, no closures: a closure is a function of its own, which the target-feature
// wrapper above does not compile with AVX2 (it was a sixth of a prompt's time, scalar).
#[inline(always)]
fn head_plain<T: KvElem>(a: &HeadArgs<'_, T>, out: &mut [f32]) {
    let hd = a.q.len();
    let mut q = a.q.to_vec();
    if T::F16 {
        for v in q.iter_mut() {
            *v = round_f16(*v);
        }
    }
    let mut scores = vec![0f32; a.last + 1 - a.first];
    let mut max = f32::NEG_INFINITY;
    for (j, s) in scores.iter_mut().enumerate() {
        let at = (a.first + j) * a.k_dim + a.k_off;
        *s = dot(&q, &a.k[at..at + hd]) * a.scale;
        max = max.max(*s);
    }
    let mut sum = 0f32;
    for s in scores.iter_mut() {
        *s = (*s - max).exp();
        sum += *s;
    }
    let inv = 1.0 / sum;
    out.fill(0.0);
    let dv = out.len();
    for (j, s) in scores.iter().enumerate() {
        let mut p = *s * inv;
        if T::F16 {
            p = round_f16(p);
        }
        let at = (a.first + j) * a.v_dim + a.v_off;
        let v = &a.v[at..at + dv];
        for (o, v) in out.iter_mut().zip(v) {
            *o += p * v.load();
        }
    }
}

/// Dot product in eight partial sums (slices of equal length, a multiple of 8 for every
/// supported head size; a remainder is summed after).
#[inline(always)]
fn dot<T: KvElem>(a: &[f32], b: &[T]) -> f32 {
    let mut acc = [0f32; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (a8.remainder(), b8.remainder());
    for (x, y) in a8.zip(b8) {
        for k in 0..8 {
            acc[k] += x[k] * y[k].load();
        }
    }
    let mut tail = 0f32;
    for (x, y) in ra.iter().zip(rb) {
        tail += x * y.load();
    }
    acc.iter().sum::<f32>() + tail
}

/// The (sin, cos) of every rotated pair at one position: computed once per token and layer,
/// applied to every head. Angles are the reference's (`tpsmeter_model::ops::rope`) to the bit.
pub fn rope_table(
    pos: f32,
    rope_dim: usize,
    base: f32,
    factors: Option<&[f32]>,
    out: &mut Vec<(f32, f32)>,
) {
    out.clear();
    for i in 0..rope_dim / 2 {
        let inv_freq = base.powf(-2.0 * i as f32 / rope_dim as f32);
        let factor = factors.map_or(1.0, |f| f[i]);
        out.push((pos * inv_freq / factor).sin_cos());
    }
}

/// Rotates one head's first `2·table.len()` dimensions.
pub fn rope_apply(head: &mut [f32], table: &[(f32, f32)], layout: RopeLayout) {
    let half = table.len();
    for (i, &(sin, cos)) in table.iter().enumerate() {
        let (a, b) = match layout {
            RopeLayout::Interleaved => (2 * i, 2 * i + 1),
            RopeLayout::Neox => (i, i + half),
        };
        let (x0, x1) = (head[a], head[b]);
        head[a] = x0 * cos - x1 * sin;
        head[b] = x0 * sin + x1 * cos;
    }
}
