//! The plain f32 operations of a forward pass, each written the obvious way: the CPU
//! backend runs them (its norms, activations and RoPE angles) and the f32 reference forward
//! pass (`tpsmeter_gpu::reference`, the oracle of the tests) is built from them. Loops are
//! shaped so the compiler can vectorise them at low optimisation levels (several independent
//! accumulators), nothing more.

use crate::config::RopeLayout;

/// Dot product with eight independent partial sums (vectorisable; the summation order
/// differs from a serial loop by rounding only).
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let mut acc = [0.0f32; 8];
    let (a8, a_rest) = a.split_at(a.len() / 8 * 8);
    let (b8, b_rest) = b.split_at(a8.len());
    for (x, y) in a8.chunks_exact(8).zip(b8.chunks_exact(8)) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    let mut sum = acc.iter().sum::<f32>();
    for (x, y) in a_rest.iter().zip(b_rest) {
        sum += x * y;
    }
    sum
}

/// `out[o] = dot(w[o*n..(o+1)*n], x)` for a row-major `[out.len(), n]` matrix (ggml dims
/// `[n, out]`), with `n = x.len()`.
#[inline]
pub fn matvec(w: &[f32], x: &[f32], out: &mut [f32]) {
    let n = x.len();
    debug_assert_eq!(w.len(), n * out.len());
    for (o, row) in out.iter_mut().zip(w.chunks_exact(n)) {
        *o = dot(row, x);
    }
}

/// RMSNorm: `x * weight / sqrt(mean(x²) + eps)`, in place.
#[inline]
pub fn rms_norm(x: &mut [f32], weight: &[f32], eps: f32) {
    let mean_sq = dot(x, x) / x.len() as f32;
    let scale = 1.0 / (mean_sq + eps).sqrt();
    for (v, w) in x.iter_mut().zip(weight) {
        *v *= scale * w;
    }
}

/// Rotates the first `rope_dim` dimensions of one head at position `pos` (already divided by
/// any linear scaling factor). `freq_factors`, when present (Llama 3.1+ `rope_freqs`),
/// divides each pair's angle, as llama.cpp does.
#[inline]
pub fn rope(
    head: &mut [f32],
    pos: f32,
    rope_dim: usize,
    base: f32,
    layout: RopeLayout,
    freq_factors: Option<&[f32]>,
) {
    let half = rope_dim / 2;
    for i in 0..half {
        let inv_freq = base.powf(-2.0 * i as f32 / rope_dim as f32);
        let factor = freq_factors.map_or(1.0, |f| f[i]);
        let theta = pos * inv_freq / factor;
        let (sin, cos) = theta.sin_cos();
        let (a, b) = match layout {
            RopeLayout::Interleaved => (2 * i, 2 * i + 1),
            RopeLayout::Neox => (i, i + half),
        };
        let (x0, x1) = (head[a], head[b]);
        head[a] = x0 * cos - x1 * sin;
        head[b] = x0 * sin + x1 * cos;
    }
}

/// Softmax in place, max-subtracted for stability.
#[inline]
pub fn softmax(x: &mut [f32]) {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in x.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    for v in x.iter_mut() {
        *v /= sum;
    }
}

/// SiLU: x * sigmoid(x).
#[inline]
pub fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

/// GELU, tanh approximation (what Gemma and ggml's `gelu` use).
#[inline]
pub fn gelu_tanh(x: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + 0.044_715 * x * x * x)).tanh())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_matches_serial_sum() {
        let a: Vec<f32> = (0..37).map(|i| i as f32 * 0.5).collect();
        let b: Vec<f32> = (0..37).map(|i| 1.0 - i as f32 * 0.25).collect();
        let serial: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - serial).abs() <= 1e-3 * serial.abs());
    }

    #[test]
    fn rope_layouts_rotate_different_pairs() {
        let mut inter = [1.0, 0.0, 0.0, 0.0];
        let mut neox = [1.0, 0.0, 0.0, 0.0];
        let quarter_turn = std::f32::consts::FRAC_PI_2;
        rope(
            &mut inter,
            quarter_turn,
            4,
            10_000.0,
            RopeLayout::Interleaved,
            None,
        );
        rope(&mut neox, quarter_turn, 4, 10_000.0, RopeLayout::Neox, None);
        // Pair 0 has frequency 1: dimension 0 rotates into its partner.
        assert!(inter[0].abs() < 1e-6 && (inter[1] - 1.0).abs() < 1e-6);
        assert!(neox[0].abs() < 1e-6 && (neox[2] - 1.0).abs() < 1e-6);
    }

    #[test]
    fn norm_softmax_and_activations() {
        let mut x = [3.0, 4.0];
        rms_norm(&mut x, &[1.0, 2.0], 0.0);
        let r = (12.5f32).sqrt();
        assert!((x[0] - 3.0 / r).abs() < 1e-6 && (x[1] - 8.0 / r).abs() < 1e-6);
        let mut p = [1.0, 2.0, 3.0];
        softmax(&mut p);
        assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-6 && p[2] > p[1]);
        assert!((silu(1.0) - 0.731_058_6).abs() < 1e-6);
        assert!((gelu_tanh(1.0) - 0.841_192).abs() < 1e-5);
    }
}
