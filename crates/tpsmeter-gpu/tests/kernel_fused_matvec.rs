//! The decode step's fused matvecs against their CPU twin (`cpu::matvec_fused`): an RMSNorm
//! folded into the input, a gated unit (SwiGLU, GELU-tanh) in the epilogue, and both, for
//! every kernel shape, both weight stores, several formats, f32 and (where offered) f16
//! activations.
#![allow(clippy::unwrap_used, clippy::too_many_arguments)]

mod common;

use common::{Rng, assert_close, dequantize, gpu, gpu_test, random_weights, round_f16};
use tpsmeter_gpu::gpu::{DType, GpuContext};
use tpsmeter_gpu::kernels::dispatch::run;
use tpsmeter_gpu::kernels::{
    GluKind, MatVec, MatVecOptions, MatVecVariant, NormFold, QWeight, Tensor, WeightFormat,
    WeightStore, twins,
};

const FORMATS: [WeightFormat; 4] = [
    WeightFormat::Q4_1,
    WeightFormat::Q8_0,
    WeightFormat::F32,
    WeightFormat::Q6_K,
];

const STORES: [WeightStore; 2] = [WeightStore::Buffer, WeightStore::Texture];

/// (norm folded, gated unit): each fusion alone and both, as the engine uses them.
const FUSIONS: [(bool, Option<GluKind>); 4] = [
    (true, None),
    (false, Some(GluKind::SwiGlu)),
    (true, Some(GluKind::SwiGlu)),
    (true, Some(GluKind::GeluTanh)),
];

/// Tolerance: as kernel_matvec (f32 sums in another order than the f64 twin, bounded by a
/// few ulps of the sum of |w_i h_i|), where h is the normed input; a gated unit multiplies
/// two such sums, so its bound is |act(a)| * err(b) + err(a) * |b| with act' <= 1.13 for
/// SiLU and GELU. f16 activations add the rounding of y (2^-11 relative).
async fn check(
    ctx: &GpuContext,
    seed: u64,
    f: WeightFormat,
    outputs: usize,
    cols: usize,
    dtype: DType,
    variant: MatVecVariant,
    store: WeightStore,
    (norm, glu): (bool, Option<GluKind>),
) {
    let mut rng = Rng::new(seed);
    let rows = if glu.is_some() { 2 * outputs } else { outputs };
    let bytes = random_weights(&mut rng, f, rows, cols);
    let w = dequantize(f, &bytes, rows * cols);
    // With a norm, inputs well away from unit scale, so that a missing norm cannot pass;
    // without, unit scale keeps a gated unit's products inside f16's range.
    let mut x = rng.vec(cols, if norm { 7.0 } else { 1.0 });
    if dtype == DType::F16 {
        x = round_f16(&x);
    }
    let g: Vec<f32> = (0..cols).map(|_| 0.5 + rng.vec(1, 0.5)[0]).collect();
    let eps = 1e-5;
    let qw =
        QWeight::upload_with(ctx, "w", f, rows, cols, &bytes, store, ctx.max_binding()).unwrap();
    let xt = Tensor::from_f32(ctx, "x", &x, dtype).unwrap();
    let gt = Tensor::from_f32(ctx, "g", &g, DType::F32).unwrap();
    let yt = Tensor::from_f32(ctx, "y", &vec![0.0; outputs], dtype).unwrap();
    let op = MatVec::new(
        ctx,
        &qw,
        &xt,
        &yt,
        MatVecOptions {
            variant: Some(variant),
            norm: norm.then_some(NormFold { weight: &gt, eps }),
            glu,
            ..MatVecOptions::default()
        },
    )
    .unwrap();
    run(ctx, &op.dispatches().iter().collect::<Vec<_>>());
    let got = yt.read_f32_async(ctx).await.unwrap();
    ctx.take_error().unwrap();
    let mut want = vec![0f32; outputs];
    let nf = norm.then_some((&g[..], eps));
    twins::matvec_fused(&w, rows, cols, &x, nf, glu, &mut want, false);
    // Per-row scale of the sums, on the normed input.
    let h = match nf {
        Some((g, eps)) => twins::rms_norm(&x, g, 1, cols, eps),
        None => x.clone(),
    };
    let mut z = vec![0f32; rows];
    twins::matvec(&w, rows, cols, &h, &mut z, false);
    let abs_sum = |r: usize| -> f32 {
        (0..cols)
            .map(|c| (w[r * cols + c] * h[c]).abs())
            .sum::<f32>()
    };
    let scale: Vec<f32> = (0..outputs)
        .map(|r| match glu {
            None => abs_sum(r),
            Some(_) => {
                let (a, b) = (z[r], z[outputs + r]);
                1.13 * abs_sum(r) * b.abs() + (a.abs() + 1.0) * abs_sum(outputs + r)
            }
        })
        .collect();
    let (rtol, atol, what) = match dtype {
        DType::F32 => (2e-5, 1e-5, "f32"),
        DType::F16 => (4e-3, 1e-3, "f16"),
    };
    assert_close(
        &format!(
            "fused matvec {f} {outputs}x{cols} {what} {variant:?} {store:?} norm={norm} glu={glu:?} seed={seed}"
        ),
        &got,
        &want,
        Some(&scale),
        rtol,
        atol,
    );
}

/// Every kernel shape the adapter may pick, with an even number of rows per unit (a gated
/// unit pairs them).
fn variants(ctx: &GpuContext) -> Vec<MatVecVariant> {
    let mut v = MatVecVariant::candidates(ctx);
    v.push(MatVecVariant::GpuShared {
        rows: 2,
        workgroup: 32,
    });
    v
}

#[gpu_test]
async fn fused_matvecs_match_twin_over_shapes_formats_and_variants() {
    let Some(ctx) = gpu("fused_matvecs_match_twin_over_shapes_formats_and_variants").await else {
        return;
    };
    let mut rng = Rng::new(0xf05e);
    for f in FORMATS {
        for variant in variants(ctx) {
            for fusion in FUSIONS {
                let m = f.col_multiple();
                let cols = m * rng.range(1, 1536 / m + 2);
                // Odd output counts leave a ragged last unit.
                let outputs = rng.range(1, 200);
                let seed = rng.next_u64();
                let store = STORES[(seed % 2) as usize];
                check(
                    ctx,
                    seed,
                    f,
                    outputs,
                    cols,
                    DType::F32,
                    variant,
                    store,
                    fusion,
                )
                .await;
                if ctx.has_f16() {
                    check(
                        ctx,
                        seed,
                        f,
                        outputs,
                        cols,
                        DType::F16,
                        variant,
                        store,
                        fusion,
                    )
                    .await;
                }
            }
        }
    }
}

/// SmolLM2's decode shapes with the adapter's own kernel and store: the normed QKV matvec
/// (576 + 2 * 192 rows) and the normed gate/up matvec with its SwiGLU (2 * 1536 rows).
#[gpu_test]
async fn fused_matvecs_at_smollm2_shapes() {
    let Some(ctx) = gpu("fused_matvecs_at_smollm2_shapes").await else {
        return;
    };
    let st = WeightStore::for_context(ctx);
    for (seed, outputs, fusion) in [
        (1, 960, (true, None)),
        (2, 1536, (true, Some(GluKind::SwiGlu))),
    ] {
        check(
            ctx,
            seed,
            WeightFormat::Q4_1,
            outputs,
            576,
            DType::F32,
            MatVecVariant::for_matrix(ctx, outputs),
            st,
            fusion,
        )
        .await;
    }
}

#[gpu_test]
async fn a_gated_unit_refuses_odd_rows_and_split_parts() {
    let Some(ctx) = gpu("a_gated_unit_refuses_odd_rows_and_split_parts").await else {
        return;
    };
    let f = WeightFormat::Q8_0;
    let x = Tensor::zeros(ctx, "x", 64, DType::F32).unwrap();
    let y = Tensor::zeros(ctx, "y", 2, DType::F32).unwrap();
    let opts = MatVecOptions {
        glu: Some(GluKind::SwiGlu),
        ..MatVecOptions::default()
    };
    let odd = QWeight::upload(ctx, "w", f, 5, 64, &vec![0u8; 5 * f.row_bytes(64)]).unwrap();
    let err = MatVec::new(ctx, &odd, &x, &y, opts).unwrap_err();
    assert!(err.to_string().contains("gate and up rows"), "{err}");
    // Two rows per part: the up rows would sit in another binding.
    let split = QWeight::upload_with(
        ctx,
        "w",
        f,
        4,
        64,
        &vec![0u8; 4 * f.row_bytes(64)],
        WeightStore::Buffer,
        (2 * f.row_bytes(64)) as u64,
    )
    .unwrap();
    let err = MatVec::new(ctx, &split, &x, &y, opts).unwrap_err();
    assert!(err.to_string().contains("in 2 parts"), "{err}");
}
