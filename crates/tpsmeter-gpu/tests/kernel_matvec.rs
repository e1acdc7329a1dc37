//! Fused dequantize + matvec against its CPU twin, for every format, both kernel shapes
//! (CPU-type and GPU-type), f32 and (where offered) f16 activations, random shapes.
#![allow(clippy::unwrap_used, clippy::too_many_arguments)]

mod common;

use common::{Rng, assert_close, dequantize, gpu, gpu_test, random_weights, round_f16};
use tpsmeter_gpu::gpu::{AdapterProfile, DType, GpuContext};
use tpsmeter_gpu::kernels::dispatch::run;
use tpsmeter_gpu::kernels::{
    GpuMatMul, MatMul, MatVec, MatVecOptions, MatVecVariant, QWeight, Tensor, WeightFormat,
    WeightStore, twins,
};

const FORMATS: [WeightFormat; 8] = [
    WeightFormat::Q4_1,
    WeightFormat::Q8_0,
    WeightFormat::Q4_0,
    WeightFormat::F16,
    WeightFormat::F32,
    WeightFormat::Q5_0,
    WeightFormat::Q4_K,
    WeightFormat::Q6_K,
];

const PROFILES: [AdapterProfile; 2] = [AdapterProfile::Cpu, AdapterProfile::Gpu];

/// Both weight stores, whatever the adapter prefers: every kernel shape reads either.
const STORES: [WeightStore; 2] = [WeightStore::Buffer, WeightStore::Texture];

/// Every shape the benchmark weighs, plus one row per workgroup (the reduction's edge case).
fn variants(ctx: &GpuContext) -> Vec<MatVecVariant> {
    let mut v = MatVecVariant::candidates(ctx);
    v.push(MatVecVariant::GpuShared {
        rows: 1,
        workgroup: 32,
    });
    v
}

/// Tolerance: the kernel sums in f32 in another order than the twin (f64), so the error is
/// bounded by a few ulps of the sum of |w_i x_i| (rtol 1e-5 of that scale covers n = 8192
/// with room: observed errors are ~1e-7 of it). f16 activations add the rounding of y to
/// f16 (2^-11 relative) on top, and x is rounded to f16 for the twin as well.
async fn check(
    ctx: &GpuContext,
    seed: u64,
    f: WeightFormat,
    rows: usize,
    cols: usize,
    dtype: DType,
    variant: MatVecVariant,
    accumulate: bool,
    store: WeightStore,
    limit: Option<u64>,
) {
    let mut rng = Rng::new(seed);
    let bytes = random_weights(&mut rng, f, rows, cols);
    let w = dequantize(f, &bytes, rows * cols);
    let mut x = rng.vec(cols, 1.0);
    let mut y0 = rng.vec(rows, 1.0);
    if dtype == DType::F16 {
        x = round_f16(&x);
        y0 = round_f16(&y0);
    }
    let qw = QWeight::upload_with(
        ctx,
        "w",
        f,
        rows,
        cols,
        &bytes,
        store,
        limit.unwrap_or(ctx.max_binding()),
    )
    .unwrap();
    let xt = Tensor::from_f32(ctx, "x", &x, dtype).unwrap();
    let yt = Tensor::from_f32(ctx, "y", &y0, dtype).unwrap();
    let op = MatVec::new(
        ctx,
        &qw,
        &xt,
        &yt,
        MatVecOptions {
            accumulate,
            variant: Some(variant),
            ..MatVecOptions::default()
        },
    )
    .unwrap();
    run(ctx, &op.dispatches().iter().collect::<Vec<_>>());
    let got = yt.read_f32_async(ctx).await.unwrap();
    ctx.take_error().unwrap();
    let mut want = y0.clone();
    twins::matvec(&w, rows, cols, &x, &mut want, accumulate);
    let scale: Vec<f32> = (0..rows)
        .map(|r| {
            let s: f32 = (0..cols).map(|c| (w[r * cols + c] * x[c]).abs()).sum();
            s + if accumulate { y0[r].abs() } else { 0.0 }
        })
        .collect();
    let (rtol, atol, what) = match dtype {
        DType::F32 => (1e-5, 1e-6, "f32"),
        DType::F16 => (2e-3, 1e-4, "f16"),
    };
    let label = format!(
        "matvec {f} {rows}x{cols} {what} {variant:?} {store:?} acc={accumulate} seed={seed} parts={}",
        qw.parts.len()
    );
    assert_close(&label, &got, &want, Some(&scale), rtol, atol);
}

async fn random_shapes(ctx: &GpuContext) {
    let mut rng = Rng::new(0x5eed);
    for f in FORMATS {
        for variant in variants(ctx) {
            for _ in 0..2 {
                let m = f.col_multiple();
                let cols = m * rng.range(1, 2048 / m + 2);
                let rows = rng.range(1, 300);
                let seed = rng.next_u64();
                for store in STORES {
                    check(
                        ctx,
                        seed,
                        f,
                        rows,
                        cols,
                        DType::F32,
                        variant,
                        seed.is_multiple_of(2),
                        store,
                        None,
                    )
                    .await;
                    if ctx.has_f16() {
                        check(
                            ctx,
                            seed,
                            f,
                            rows,
                            cols,
                            DType::F16,
                            variant,
                            !seed.is_multiple_of(2),
                            store,
                            None,
                        )
                        .await;
                    }
                }
            }
        }
    }
}

#[gpu_test]
async fn matvec_matches_twin_over_random_shapes_formats_and_variants() {
    let Some(ctx) = gpu("matvec_matches_twin_over_random_shapes_formats_and_variants").await else {
        return;
    };
    random_shapes(ctx).await;
}

#[gpu_test]
async fn matvec_at_smollm2_shapes() {
    let Some(ctx) = gpu("matvec_at_smollm2_shapes").await else {
        return;
    };
    let st = WeightStore::for_context(ctx);
    // (seed, format, rows, cols, accumulate): q/o, gate/up, down (+ residual), head.
    for (seed, f, rows, cols, acc) in [
        (1, WeightFormat::Q4_1, 576, 576, false),
        (2, WeightFormat::Q4_1, 1536, 576, false),
        (3, WeightFormat::Q4_1, 576, 1536, true),
        (4, WeightFormat::Q8_0, 49152, 576, false),
    ] {
        let v = MatVecVariant::for_matrix(ctx, rows);
        check(ctx, seed, f, rows, cols, DType::F32, v, acc, st, None).await;
    }
}

/// Guards the split of tensors over `maxStorageBufferBindingSize`: parts must write their
/// rows at the right offset (a wrong `row_offset` overwrote the first rows).
#[gpu_test]
async fn matvec_over_split_bindings_matches_twin() {
    let Some(ctx) = gpu("matvec_over_split_bindings_matches_twin").await else {
        return;
    };
    for f in [WeightFormat::Q8_0, WeightFormat::Q4_1, WeightFormat::Q6_K] {
        for variant in variants(ctx) {
            let cols = 512;
            // ~3.5 rows per part, so parts of 2 rows and an odd tail.
            let limit = (f.row_bytes(cols) * 7 / 2) as u64;
            for store in STORES {
                check(
                    ctx,
                    9,
                    f,
                    37,
                    cols,
                    DType::F32,
                    variant,
                    false,
                    store,
                    Some(limit),
                )
                .await;
            }
        }
    }
}

#[gpu_test]
async fn matvec_rejects_mismatched_shapes() {
    let Some(ctx) = gpu("matvec_rejects_mismatched_shapes").await else {
        return;
    };
    let bytes = vec![0u8; 4 * WeightFormat::Q8_0.row_bytes(64)];
    let w = QWeight::upload(ctx, "w", WeightFormat::Q8_0, 4, 64, &bytes).unwrap();
    let x = Tensor::zeros(ctx, "x", 32, DType::F32).unwrap();
    let y = Tensor::zeros(ctx, "y", 4, DType::F32).unwrap();
    let err = MatVec::new(ctx, &w, &x, &y, MatVecOptions::default()).unwrap_err();
    assert!(err.to_string().contains("x must hold 64"), "{err}");
}

/// Prefill matmul against the twin: every format, both kernels (CPU-type: pairs of groups of
/// 8 tokens, several pairs per dispatch where a uniform range holds their groups (16, 27,
/// 40, 48, 64 tokens), then a whole group and a ragged last group of 1 to 7 on their own; GPU
/// tiles of 8), with and without accumulating into y (odd token counts accumulate), with
/// inputs bound as exact ranges and (token counts divisible by 3: an input with the
/// engine's slack past its values) as whole windows.
#[gpu_test]
async fn matmul_matches_twin_over_random_shapes() {
    let Some(ctx) = gpu("matmul_matches_twin_over_random_shapes").await else {
        return;
    };
    let mut rng = Rng::new(0x3a7);
    for f in FORMATS {
        for (n_tokens, profile) in [1usize, 2, 3, 8, 13, 16, 20, 27, 40, 48, 64]
            .into_iter()
            .flat_map(|n| PROFILES.map(|p| (n, p)))
        {
            let m = f.col_multiple();
            // 48 tokens of an FFN-wide input: a uniform range holds one group of 8 of them.
            let cols = if n_tokens == 48 {
                1536
            } else {
                m * rng.range(1, 1024 / m + 2)
            };
            let rows = rng.range(1, 200);
            let bytes = random_weights(&mut rng, f, rows, cols);
            let w = dequantize(f, &bytes, rows * cols);
            let x = rng.vec(n_tokens * cols, 1.0);
            let store = STORES[n_tokens % 2];
            let qw =
                QWeight::upload_with(ctx, "w", f, rows, cols, &bytes, store, ctx.max_binding())
                    .unwrap();
            let xt = if n_tokens % 3 == 0 {
                let slack = tpsmeter_gpu::kernels::matmul::input_slack(ctx);
                let t = Tensor::zeros_with_slack(ctx, "x", x.len(), DType::F32, slack).unwrap();
                ctx.queue
                    .write_buffer(&t.buffer, 0, bytemuck::cast_slice(&x));
                t
            } else {
                Tensor::from_f32(ctx, "x", &x, DType::F32).unwrap()
            };
            let accumulate = n_tokens % 2 == 1;
            let y0 = if accumulate {
                rng.vec(n_tokens * rows, 1.0)
            } else {
                vec![0f32; n_tokens * rows]
            };
            let yt = Tensor::from_f32(ctx, "y", &y0, DType::F32).unwrap();
            let op = tpsmeter_gpu::kernels::MatMul::with_profile(
                ctx, profile, &qw, &xt, &yt, n_tokens, accumulate,
            )
            .unwrap();
            run(ctx, &op.dispatches().iter().collect::<Vec<_>>());
            let mut want = y0.clone();
            twins::matmul(&w, rows, cols, &x, n_tokens, &mut want, accumulate);
            let scale = matmul_scale(&w, &x, &y0, rows, cols, n_tokens);
            // Same bound as the matvec (f32 sums in another order than the f64 twin).
            assert_close(
                &format!(
                    "matmul {f} {rows}x{cols} t={n_tokens} acc={accumulate} {store:?} {profile:?}"
                ),
                &yt.read_f32_async(ctx).await.unwrap(),
                &want,
                Some(&scale),
                1e-5,
                1e-6,
            );
        }
    }
}

/// The Gpu profile's prefill kernels against the twin, on whatever adapter runs the tests
/// (lavapipe here: the only place CI runs the path real GPUs take): the one-row kernel and the
/// register-tiled one with f32 tiles, and with f16 tiles and f16 activations where the adapter
/// has `shader-f16`; every format, with token counts and rows that are not multiples of the
/// tiles (a workgroup covers 64 rows and 4 to 32 tokens) and single ones.
///
/// Tolerances, relative to the sum of |w x| of each output (plus |y0| when accumulating):
/// f32 tiles 1e-5 (f32 sums in another order than the f64 twin); f16 tiles 4e-3: the weights
/// and inputs round to f16 in the tiles (2^-11 relative each) and each sub-block's 32
/// products are summed in f16 (a rounding per add, to 2^-11 of the running sum) before the
/// f32 sum across sub-blocks; observed 5.3e-4 on lavapipe. f16 activations add the rounding of y to
/// f16 (as the matvec's f16 tolerance).
#[gpu_test]
async fn gpu_matmul_kernels_match_twin_on_ragged_tiles() {
    let Some(ctx) = gpu("gpu_matmul_kernels_match_twin_on_ragged_tiles").await else {
        return;
    };
    let mut kernels = vec![
        GpuMatMul::Rows,
        GpuMatMul::Tiled(DType::F32),
        GpuMatMul::Split,
    ];
    if ctx.has_f16() {
        kernels.push(GpuMatMul::Tiled(DType::F16));
    } else {
        eprintln!("adapter lacks shader-f16: f16 tiles and activations not tested");
    }
    let mut rng = Rng::new(0x7165);
    // (tokens, rows): single token and row, ragged both ways, exact tiles, more than one
    // workgroup each way.
    let shapes = [
        (1, 1),
        (3, 65),
        (5, 64),
        (17, 130),
        (33, 97),
        (64, 192),
        (70, 13),
        // Rows wider than 64 sub-blocks: the split kernel's invocations take several each.
        (9, 37),
    ];
    let mut worst = 0f32;
    for f in FORMATS {
        for (i, &(n_tokens, rows)) in shapes.iter().enumerate() {
            let m = f.col_multiple();
            let cols = if i == shapes.len() - 1 {
                m * rng.range(2080 / m + 1, 2600 / m)
            } else {
                m * rng.range(1, 768 / m + 2)
            };
            let bytes = random_weights(&mut rng, f, rows, cols);
            let w = dequantize(f, &bytes, rows * cols);
            let store = STORES[i % 2];
            let qw =
                QWeight::upload_with(ctx, "w", f, rows, cols, &bytes, store, ctx.max_binding())
                    .unwrap();
            let accumulate = i % 2 == 1;
            for kernel in &kernels {
                let acts = if ctx.has_f16() && i == 3 {
                    vec![DType::F32, DType::F16]
                } else {
                    vec![DType::F32]
                };
                for act in acts {
                    let x = stored_as(rng.vec(n_tokens * cols, 1.0), act);
                    let y0 = if accumulate {
                        stored_as(rng.vec(n_tokens * rows, 1.0), act)
                    } else {
                        vec![0f32; n_tokens * rows]
                    };
                    let xt = Tensor::from_f32(ctx, "x", &x, act).unwrap();
                    let yt = Tensor::from_f32(ctx, "y", &y0, act).unwrap();
                    let op =
                        MatMul::with_gpu_kernel(ctx, *kernel, &qw, &xt, &yt, n_tokens, accumulate)
                            .unwrap();
                    run(ctx, &op.dispatches().iter().collect::<Vec<_>>());
                    let got = yt.read_f32_async(ctx).await.unwrap();
                    ctx.take_error().unwrap();
                    let mut want = y0.clone();
                    twins::matmul(&w, rows, cols, &x, n_tokens, &mut want, accumulate);
                    let scale = matmul_scale(&w, &x, &y0, rows, cols, n_tokens);
                    let (rtol, atol) = match (kernel, act) {
                        (GpuMatMul::Tiled(DType::F16), _) => (4e-3, 1e-4),
                        (_, DType::F16) => (2e-3, 1e-4),
                        _ => (1e-5, 1e-6),
                    };
                    if *kernel == GpuMatMul::Tiled(DType::F16) {
                        for ((g, w), s) in got.iter().zip(&want).zip(&scale) {
                            worst = worst.max((g - w).abs() / s.max(1e-6));
                        }
                    }
                    assert_close(
                        &format!(
                            "gpu matmul {kernel:?} {f} {rows}x{cols} t={n_tokens} act={act:?} acc={accumulate} {store:?}"
                        ),
                        &got,
                        &want,
                        Some(&scale),
                        rtol,
                        atol,
                    );
                }
            }
        }
    }
    eprintln!("f16 tiles: largest error relative to the sum of |w x|: {worst:e}");
}

/// Values as a tensor of `dt` stores them.
fn stored_as(v: Vec<f32>, dt: DType) -> Vec<f32> {
    if dt == DType::F16 { round_f16(&v) } else { v }
}

/// Each matmul output's scale for the tolerance: the sum of |w x| over its dot product, plus
/// |y0| (what it accumulates into).
fn matmul_scale(
    w: &[f32],
    x: &[f32],
    y0: &[f32],
    rows: usize,
    cols: usize,
    n_tokens: usize,
) -> Vec<f32> {
    (0..n_tokens * rows)
        .map(|i| {
            let (t, r) = (i / rows, i % rows);
            let s: f32 = (0..cols)
                .map(|c| (w[r * cols + c] * x[t * cols + c]).abs())
                .sum();
            s + y0[i].abs()
        })
        .collect()
}
