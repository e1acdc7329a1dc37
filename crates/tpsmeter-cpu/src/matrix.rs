//! [`QMatrix`]: a weight matrix kept in its GGUF block format, and the threaded
//! matrix × activations product the forward pass is made of.

use rayon::prelude::*;
use tpsmeter_model::ModelError;

use super::cpu_runtime::{CpuRuntime, Simd};
use super::kernels::{self, RowDot};
use super::q8::Activations;
use super::tensors::TensorSource;
use crate::error::{CpuError, Result};
use tpsmeter_model::quant::{self, GgmlType};

/// `rows` rows of `cols` weights each, stored as the file stores them (row-major blocks).
#[derive(Debug)]
pub struct QMatrix {
    pub ty: GgmlType,
    pub rows: usize,
    pub cols: usize,
    row_bytes: usize,
    bytes: Vec<u8>,
}

impl QMatrix {
    /// Checks that `bytes` hold exactly `rows` rows of `cols` weights of `ty`, of a type this
    /// backend computes with.
    pub fn new(ty: GgmlType, rows: usize, cols: usize, bytes: Vec<u8>) -> Result<Self> {
        if !ty.can_dequantize() {
            return Err(CpuError::from(ModelError::UnsupportedGgmlType { ty }));
        }
        let row_bytes = ty.row_bytes(cols)?;
        let want =
            row_bytes
                .checked_mul(rows)
                .ok_or(CpuError::from(ModelError::LimitExceeded {
                    what: "matrix bytes".into(),
                    value: u64::MAX,
                    limit: usize::MAX as u64,
                }))?;
        if bytes.len() != want {
            return Err(CpuError::from(ModelError::QuantLength {
                ty,
                elements: (rows as u64).saturating_mul(cols as u64),
                expected_bytes: want as u64,
                got_bytes: bytes.len() as u64,
            }));
        }
        Ok(Self {
            ty,
            rows,
            cols,
            row_bytes,
            bytes,
        })
    }

    /// Tensor `name` of `file`, which must be `[cols, rows]` (ggml order).
    pub fn load(
        file: &mut impl TensorSource,
        name: &str,
        cols: usize,
        rows: usize,
    ) -> Result<Self> {
        let info = file.info(name)?;
        let mut dims = info.dims.clone();
        while dims.len() > 2 && dims.last() == Some(&1) {
            dims.pop();
        }
        if dims != [cols as u64, rows as u64] {
            return Err(CpuError::from(ModelError::WrongTensorShape {
                tensor: name.into(),
                expected: vec![cols as u64, rows as u64],
                found: info.dims.clone(),
            }));
        }
        let ty = info.ty;
        Self::new(ty, rows, cols, file.take(name)?)
    }

    /// The stored bytes of row `r` (`r < rows`).
    pub fn row(&self, r: usize) -> &[u8] {
        &self.bytes[r * self.row_bytes..(r + 1) * self.row_bytes]
    }

    /// Row `r` expanded to f32 (an embedding lookup).
    pub fn dequantize_row(&self, r: usize, out: &mut [f32]) -> Result<()> {
        Ok(quant::dequantize(self.ty, self.row(r), out)?)
    }

    /// Bytes held.
    pub fn size(&self) -> usize {
        self.bytes.len()
    }
}

/// `out[t * w.rows + r] = w[r] · acts[t]` for every token `t` and row `r`, the rows split
/// over the runtime's threads. Call it inside [`CpuRuntime::install`].
pub fn matmul(rt: &CpuRuntime, w: &QMatrix, acts: &[Activations], out: &mut [f32]) {
    matmuls(rt, acts, &mut [(w, out)]);
}

/// [`matmul`] of each `(w, out)` with the same activations, in one parallel region: every
/// matrix's row tasks go to the threads at once. One hand-off instead of one per matrix
/// matters where waking a thread is slow: on wasm threads a sleeping Worker takes tens of µs
/// to wake, against ~50 µs of work in a decode step's K projection.
pub fn matmuls(rt: &CpuRuntime, acts: &[Activations], jobs: &mut [(&QMatrix, &mut [f32])]) {
    let tokens = acts.len();
    // Rows per task: enough to amortise a task (a few µs), several tasks per thread so a
    // slow thread does not hold the others up.
    let per_task = |rows: usize| (rows / (rt.threads() * 8)).clamp(8, 512);
    if tokens == 1 {
        let mut tasks = Vec::new();
        for (w, out) in jobs.iter_mut() {
            debug_assert_eq!(out.len(), w.rows);
            let n = per_task(w.rows);
            tasks.extend(out.chunks_mut(n).enumerate().map(|(i, o)| (*w, i * n, o)));
        }
        tasks
            .into_par_iter()
            .for_each(|(w, first, o)| rows(rt, w, first, acts, o));
        return;
    }
    // Several tokens: each task computes its rows for every token ([row][token], so a row's
    // blocks stay in L1 while every token reads them), then one transposing pass.
    let mut by_row: Vec<Vec<f32>> = jobs
        .iter()
        .map(|(w, _)| vec![0f32; w.rows * tokens])
        .collect();
    let mut tasks = Vec::new();
    for ((w, _), buf) in jobs.iter().zip(by_row.iter_mut()) {
        let n = per_task(w.rows);
        tasks.extend(
            buf.chunks_mut(n * tokens)
                .enumerate()
                .map(|(i, o)| (*w, i * n, o)),
        );
    }
    tasks
        .into_par_iter()
        .for_each(|(w, first, o)| rows(rt, w, first, acts, o));
    for ((w, out), buf) in jobs.iter_mut().zip(&by_row) {
        debug_assert_eq!(out.len(), tokens * w.rows);
        for (r, row) in buf.chunks_exact(tokens).enumerate() {
            for (t, &v) in row.iter().enumerate() {
                out[t * w.rows + r] = v;
            }
        }
    }
}

/// Rows `first..` of `w` (as many as `out` holds, `[row][token]`), with the kernel of `w`'s
/// format.
fn rows(rt: &CpuRuntime, w: &QMatrix, first: usize, acts: &[Activations], out: &mut [f32]) {
    use kernels::*;
    let simd = rt.simd;
    if rt.exact {
        return generic_rows(w.ty, w, first, acts, out);
    }
    if let Some(kernel) = hand_written(simd, w.ty) {
        for (i, o) in out.chunks_exact_mut(acts.len()).enumerate() {
            kernel(w.row(first + i), acts, o);
        }
        return;
    }
    match w.ty {
        GgmlType::Q4_0 => run::<Q4_0>(simd, w, first, acts, out),
        GgmlType::Q4_1 => run::<Q4_1>(simd, w, first, acts, out),
        GgmlType::Q5_0 => run::<Q5_0>(simd, w, first, acts, out),
        GgmlType::Q5_1 => run::<Q5_1>(simd, w, first, acts, out),
        GgmlType::Q8_0 => run::<Q8_0>(simd, w, first, acts, out),
        GgmlType::Q4_K => run::<Q4K>(simd, w, first, acts, out),
        GgmlType::Q5_K => run::<Q5K>(simd, w, first, acts, out),
        GgmlType::Q6_K => run::<Q6K>(simd, w, first, acts, out),
        GgmlType::F32 => run::<F32>(simd, w, first, acts, out),
        GgmlType::F16 => run::<F16>(simd, w, first, acts, out),
        GgmlType::BF16 => run::<Bf16>(simd, w, first, acts, out),
        ty => generic_rows(ty, w, first, acts, out),
    }
}

/// A row kernel over every token (`out[t] = row · acts[t]`).
type Kernel = fn(&[u8], &[Activations], &mut [f32]);

/// The hand-written row kernel for `ty` on this instruction set, where there is one
/// (`avx2.rs`, `simd128.rs`); the other formats run the portable kernels, vectorised.
fn hand_written(simd: Simd, ty: GgmlType) -> Option<Kernel> {
    #[cfg(target_arch = "x86_64")]
    if simd == Simd::Avx2 {
        macro_rules! avx2 {
            ($f:path) => {
                Some(|r, a, o| {
                    #[allow(unsafe_code)]
                    // SAFETY: AVX2 and FMA were detected (`Simd::Avx2`): all these need.
                    unsafe {
                        $f(r, a, o)
                    }
                })
            };
        }
        return match ty {
            GgmlType::Q4_0 => avx2!(super::avx2::q4_0),
            GgmlType::Q4_1 => avx2!(super::avx2::q4_1),
            GgmlType::Q8_0 => avx2!(super::avx2::q8_0),
            GgmlType::Q4_K => avx2!(super::avx2::q4_k),
            GgmlType::Q6_K => avx2!(super::avx2::q6_k),
            _ => None,
        };
    }
    // Where the browser has `simd128` (it does wherever the module runs: one without it
    // refuses to compile the whole module).
    #[cfg(target_arch = "wasm32")]
    if simd == Simd::Simd128 {
        return match ty {
            GgmlType::Q4_0 => Some(super::simd128::q4_0),
            GgmlType::Q4_1 => Some(super::simd128::q4_1),
            GgmlType::Q8_0 => Some(super::simd128::q8_0),
            _ => None,
        };
    }
    let _ = (simd, ty);
    None
}

/// Rows expanded to f32 (once per row for all tokens) and multiplied with f32 activations.
fn generic_rows(ty: GgmlType, w: &QMatrix, first: usize, acts: &[Activations], out: &mut [f32]) {
    let mut row = vec![0f32; w.cols];
    for (i, o) in out.chunks_exact_mut(acts.len()).enumerate() {
        // The matrix was checked at load: its type expands and its rows are whole blocks.
        if quant::dequantize(ty, w.row(first + i), &mut row).is_err() {
            o.fill(f32::NAN);
            continue;
        }
        for (v, a) in o.iter_mut().zip(acts) {
            *v = tpsmeter_model::ops::dot(&row, &a.x);
        }
    }
}

/// A kernel's rows with the instruction set chosen.
#[inline(always)]
fn run<K: RowDot>(simd: Simd, w: &QMatrix, first: usize, acts: &[Activations], out: &mut [f32]) {
    // Integer kernels need whole activation blocks (rows of a multiple of 32 weights: every
    // quantized format's block is 32 or 256 long, so a valid matrix has them).
    #[cfg(target_arch = "x86_64")]
    if simd == Simd::Avx2 {
        #[allow(unsafe_code)]
        // SAFETY: `Simd::Avx2` is only chosen when the CPU reports AVX2 and FMA
        // (`Simd::detect`), which is all `rows_avx2` requires.
        unsafe {
            rows_avx2::<K>(w, first, acts, out);
        }
        return;
    }
    #[cfg(target_arch = "wasm32")]
    if simd == Simd::Simd128 {
        // Safe to call on wasm: a browser without SIMD refuses to compile the whole module,
        // so running here means it has `simd128`.
        rows_simd128::<K>(w, first, acts, out);
        return;
    }
    let _ = simd;
    rows_plain::<K>(w, first, acts, out);
}

/// The kernel compiled for wasm SIMD whatever the build's flags (a build-wide
/// `+simd128` would rebuild every dependency for one module): the same code, vectorised
/// 128 bits wide (`i32x4.dot_i16x8_s` for the integer dots).
#[cfg(target_arch = "wasm32")]
#[target_feature(enable = "simd128")]
fn rows_simd128<K: RowDot>(w: &QMatrix, first: usize, acts: &[Activations], out: &mut [f32]) {
    rows_plain::<K>(w, first, acts, out);
}

/// The kernel compiled for AVX2 and FMA: the same code, vectorised 256 bits wide.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn rows_avx2<K: RowDot>(w: &QMatrix, first: usize, acts: &[Activations], out: &mut [f32]) {
    rows_plain::<K>(w, first, acts, out);
}

#[inline(always)]
fn rows_plain<K: RowDot>(w: &QMatrix, first: usize, acts: &[Activations], out: &mut [f32]) {
    if let [act] = acts {
        for (i, o) in out.iter_mut().enumerate() {
            *o = kernels::dot_one::<K>(w.row(first + i), act);
        }
        return;
    }
    for (i, o) in out.chunks_exact_mut(acts.len()).enumerate() {
        kernels::dot_tokens::<K>(w.row(first + i), acts, o);
    }
}
