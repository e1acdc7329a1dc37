//! Twins of the small kernels: RMSNorm, residual add, gated units, RoPE, KV append,
//! embedding lookup, softmax and attention. Sums are in f64.

/// Twin of `rms_norm.wgsl`.
pub fn rms_norm(x: &[f32], w: &[f32], rows: usize, dim: usize, eps: f32) -> Vec<f32> {
    let mut y = vec![0f32; rows * dim];
    for r in 0..rows {
        let row = &x[r * dim..(r + 1) * dim];
        let ss: f64 = row.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
        let inv = 1.0 / (ss / dim as f64 + f64::from(eps)).sqrt();
        for i in 0..dim {
            y[r * dim + i] = (f64::from(row[i]) * inv * f64::from(w[i])) as f32;
        }
    }
    y
}

/// Twin of `elementwise.wgsl` `add`: `dst += src`.
pub fn add(src: &[f32], dst: &mut [f32]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d += *s;
    }
}

/// `silu(v) = v * sigmoid(v)`.
pub fn silu(v: f32) -> f32 {
    v / (1.0 + (-v).exp())
}

/// GELU, tanh approximation (as ggml and gemma use).
pub fn gelu_tanh(v: f32) -> f32 {
    let t = (0.797_884_6 * (v + 0.044715 * v * v * v)).tanh();
    0.5 * v * (1.0 + t)
}

/// Twin of `elementwise.wgsl` `swiglu`.
pub fn swiglu(gate: &[f32], up: &[f32]) -> Vec<f32> {
    gate.iter().zip(up).map(|(&g, &u)| silu(g) * u).collect()
}

/// Twin of `elementwise.wgsl` `gelu_glu`.
pub fn gelu_glu(gate: &[f32], up: &[f32]) -> Vec<f32> {
    gate.iter()
        .zip(up)
        .map(|(&g, &u)| gelu_tanh(g) * u)
        .collect()
}

/// Twin of `rope.wgsl` (angles in f64). `neox` selects the half-split layout.
#[allow(clippy::too_many_arguments)]
pub fn rope(
    x: &mut [f32],
    n_tokens: usize,
    n_heads: usize,
    head_dim: usize,
    rope_dim: usize,
    neox: bool,
    freq_base: f32,
    freq_scale: f32,
    pos0: u32,
    factors: Option<&[f32]>,
) {
    let half = rope_dim / 2;
    for t in 0..n_tokens {
        let p = f64::from(pos0) + t as f64;
        for h in 0..n_heads {
            let base = (t * n_heads + h) * head_dim;
            for i in 0..half {
                let (i0, i1) = if neox {
                    (base + i, base + i + half)
                } else {
                    (base + 2 * i, base + 2 * i + 1)
                };
                let inv = f64::from(freq_base).powf(-((2 * i) as f64) / rope_dim as f64)
                    / factors.map_or(1.0, |f| f64::from(f[i]));
                let theta = p * f64::from(freq_scale) * inv;
                let (s, c) = theta.sin_cos();
                let (a, b) = (f64::from(x[i0]), f64::from(x[i1]));
                x[i0] = (a * c - b * s) as f32;
                x[i1] = (a * s + b * c) as f32;
            }
        }
    }
}

/// Twin of `kv_append.wgsl`.
pub fn kv_append(
    src: &[f32],
    cache: &mut [f32],
    n_tokens: usize,
    kv_dim: usize,
    max_ctx: usize,
    pos0: u32,
) {
    for t in 0..n_tokens {
        let row = pos0 as usize + t;
        if row < max_ctx {
            cache[row * kv_dim..(row + 1) * kv_dim]
                .copy_from_slice(&src[t * kv_dim..(t + 1) * kv_dim]);
        }
    }
}

/// Twin of `embed.wgsl` over a dequantized table `[rows, cols]`.
pub fn embed(table: &[f32], cols: usize, tokens: &[u32], scale: f32) -> Vec<f32> {
    let mut out = vec![0f32; tokens.len() * cols];
    for (t, &tok) in tokens.iter().enumerate() {
        let r = tok as usize;
        for c in 0..cols {
            out[t * cols + c] = table[r * cols + c] * scale;
        }
    }
    out
}

/// Twin of `softmax.wgsl`.
pub fn softmax(x: &mut [f32], rows: usize, n: usize) {
    for r in 0..rows {
        let row = &mut x[r * n..(r + 1) * n];
        let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let e: Vec<f64> = row
            .iter()
            .map(|&v| (f64::from(v) - f64::from(m)).exp())
            .collect();
        let s: f64 = e.iter().sum();
        for (o, v) in row.iter_mut().zip(e) {
            *o = (v / s) as f32;
        }
    }
}

/// Twin of `attention.wgsl`. Caches are `[max_ctx, n_kv_heads, head_dim]`.
#[allow(clippy::too_many_arguments)]
pub fn attention(
    q: &[f32],
    k_cache: &[f32],
    v_cache: &[f32],
    n_tokens: usize,
    n_heads: usize,
    n_kv_heads: usize,
    head_dim: usize,
    max_ctx: usize,
    window: usize,
    scale: f32,
    pos0: u32,
) -> Vec<f32> {
    let kv_dim = n_kv_heads * head_dim;
    let group = n_heads / n_kv_heads;
    let mut out = vec![0f32; n_tokens * n_heads * head_dim];
    for t in 0..n_tokens {
        let end = (pos0 as usize + t + 1).min(max_ctx);
        let start = if window > 0 && end > window {
            end - window
        } else {
            0
        };
        for h in 0..n_heads {
            let kvh = h / group;
            let qv = &q[(t * n_heads + h) * head_dim..][..head_dim];
            let s: Vec<f64> = (start..end)
                .map(|j| {
                    let k = &k_cache[j * kv_dim + kvh * head_dim..][..head_dim];
                    let d: f64 = qv
                        .iter()
                        .zip(k)
                        .map(|(&a, &b)| f64::from(a) * f64::from(b))
                        .sum();
                    d * f64::from(scale)
                })
                .collect();
            let m = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = s.iter().map(|v| (v - m).exp()).collect();
            let l: f64 = e.iter().sum();
            for d in 0..head_dim {
                let acc: f64 = (start..end)
                    .zip(&e)
                    .map(|(j, &w)| w * f64::from(v_cache[j * kv_dim + kvh * head_dim + d]))
                    .sum();
                out[(t * n_heads + h) * head_dim + d] = (acc / l) as f32;
            }
        }
    }
    out
}
