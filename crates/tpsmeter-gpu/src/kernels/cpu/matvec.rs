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
