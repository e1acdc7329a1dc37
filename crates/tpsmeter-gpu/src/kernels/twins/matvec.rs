//! Twin of [`crate::kernels::matvec`]: `y = W x` over an already dequantized `W`.

/// `y[r] = sum_c w[r * cols + c] * x[c]` (plus `y[r]` when `accumulate`), summed in f64.
pub fn matvec(w: &[f32], rows: usize, cols: usize, x: &[f32], y: &mut [f32], accumulate: bool) {
    for (r, out) in y.iter_mut().enumerate().take(rows) {
        let row = &w[r * cols..(r + 1) * cols];
        let s: f64 = row
            .iter()
            .zip(x)
            .map(|(&a, &b)| f64::from(a) * f64::from(b))
            .sum();
        let base = if accumulate { f64::from(*out) } else { 0.0 };
        *out = (base + s) as f32;
    }
}

/// Twin of [`crate::kernels::matmul`]: `y[t * rows + r] (+)= sum_c w[r, c] x[t, c]`.
pub fn matmul(
    w: &[f32],
    rows: usize,
    cols: usize,
    x: &[f32],
    n_tokens: usize,
    y: &mut [f32],
    accumulate: bool,
) {
    for t in 0..n_tokens {
        matvec(
            w,
            rows,
            cols,
            &x[t * cols..(t + 1) * cols],
            &mut y[t * rows..(t + 1) * rows],
            accumulate,
        );
    }
}

/// Twin of a matvec with a folded RMSNorm and/or a gated unit
/// ([`crate::kernels::MatVecOptions`]): `h = rms_norm(x) * g` when `norm` is `(g, eps)`, else
/// `h = x`; `z = W h`; with `glu`, `y[r] = act(z[r]) * z[rows / 2 + r]` for the `rows / 2`
/// outputs, else `y (+)= z`.
#[allow(clippy::too_many_arguments)] // The kernel's options, one argument each.
pub fn matvec_fused(
    w: &[f32],
    rows: usize,
    cols: usize,
    x: &[f32],
    norm: Option<(&[f32], f32)>,
    glu: Option<crate::kernels::GluKind>,
    y: &mut [f32],
    accumulate: bool,
) {
    let h = match norm {
        Some((g, eps)) => super::rms_norm(x, g, 1, cols, eps),
        None => x.to_vec(),
    };
    match glu {
        None => matvec(w, rows, cols, &h, y, accumulate),
        Some(kind) => {
            let mut z = vec![0f32; rows];
            matvec(w, rows, cols, &h, &mut z, false);
            let (gate, up) = z.split_at(rows / 2);
            let out = match kind {
                crate::kernels::GluKind::SwiGlu => super::swiglu(gate, up),
                crate::kernels::GluKind::GeluTanh => super::gelu_glu(gate, up),
            };
            for (o, v) in y.iter_mut().zip(out) {
                *o = if accumulate { *o + v } else { v };
            }
        }
    }
}
