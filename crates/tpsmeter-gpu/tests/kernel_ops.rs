//! The small kernels against their CPU twins over random shapes (seeded), f32 always and
//! f16 where the adapter offers `shader-f16`. Attention has its own file
//! (`kernel_attention.rs`).
#![allow(clippy::unwrap_used)]

mod common;

use common::{
    PROFILES, Rng, assert_close, dequantize, dtypes, gpu, gpu_test, random_weights, stored, tol,
};
use tpsmeter_gpu::gpu::DType;
use tpsmeter_gpu::kernels::dispatch::run;
use tpsmeter_gpu::kernels::{
    Add, Embed, Glu, GluKind, KvAppend, KvSlab, QWeight, RmsNorm, Rope, RopeConfig, RopeLayout,
    Softmax, Tensor, WeightFormat, WeightStore, batch_positions, twins,
};

#[gpu_test]
async fn rms_norm_matches_twin() {
    let Some(ctx) = gpu("rms_norm_matches_twin").await else {
        return;
    };
    let mut rng = Rng::new(11);
    for dt in dtypes(ctx) {
        for _ in 0..6 {
            let rows = rng.range(1, 40);
            let dim = rng.range(1, 1200);
            let x = stored(rng.vec(rows * dim, 3.0), dt);
            let w = rng.vec(dim, 1.5);
            let xt = Tensor::from_f32(ctx, "x", &x, dt).unwrap();
            let wt = Tensor::from_f32(ctx, "w", &w, DType::F32).unwrap();
            let yt = Tensor::zeros(ctx, "y", rows * dim, dt).unwrap();
            for profile in PROFILES {
                let op =
                    RmsNorm::with_profile(ctx, profile, &xt, &wt, &yt, rows, dim, 1e-5).unwrap();
                run(ctx, &[op.dispatch()]);
                let want = twins::rms_norm(&x, &w, rows, dim, 1e-5);
                let (r, a) = tol(dt);
                assert_close(
                    &format!("rms_norm {rows}x{dim} {dt:?} {profile:?}"),
                    &yt.read_f32_async(ctx).await.unwrap(),
                    &want,
                    None,
                    r * 10.0,
                    a,
                );
            }
        }
    }
}

#[gpu_test]
async fn add_and_gated_units_match_twins() {
    let Some(ctx) = gpu("add_and_gated_units_match_twins").await else {
        return;
    };
    let mut rng = Rng::new(12);
    for dt in dtypes(ctx) {
        for _ in 0..4 {
            let n = rng.range(1, 5000);
            let a = stored(rng.vec(n, 6.0), dt);
            let b = stored(rng.vec(n, 2.0), dt);
            let at = Tensor::from_f32(ctx, "a", &a, dt).unwrap();
            let bt = Tensor::from_f32(ctx, "b", &b, dt).unwrap();
            let out = Tensor::zeros(ctx, "out", n, dt).unwrap();
            let (r, t) = tol(dt);
            for kind in [GluKind::SwiGlu, GluKind::GeluTanh] {
                let op = Glu::new(ctx, kind, &at, &bt, &out, n).unwrap();
                run(ctx, &[op.dispatch()]);
                let want = match kind {
                    GluKind::SwiGlu => twins::swiglu(&a, &b),
                    GluKind::GeluTanh => twins::gelu_glu(&a, &b),
                };
                // exp/tanh on the GPU are a few ulps from Rust's: 1e-5 relative of |out|.
                assert_close(
                    &format!("{kind:?} n={n} {dt:?}"),
                    &out.read_f32_async(ctx).await.unwrap(),
                    &want,
                    None,
                    r.max(1e-5) * 4.0,
                    t,
                );
            }
            // Packed: the same gate and up values as rows of [gate | up] per token.
            let width = rng.range(1, 300).min(n);
            let tokens = (n / width).min(8);
            let m = tokens * width;
            let packed: Vec<f32> = (0..tokens)
                .flat_map(|t| {
                    let row = t * width..(t + 1) * width;
                    a[row.clone()]
                        .iter()
                        .chain(&b[row])
                        .copied()
                        .collect::<Vec<_>>()
                })
                .collect();
            let gu = Tensor::from_f32(ctx, "gate_up", &packed, dt).unwrap();
            let out = Tensor::zeros(ctx, "out", m, dt).unwrap();
            let op = Glu::packed(ctx, GluKind::SwiGlu, &gu, &out, tokens, width).unwrap();
            run(ctx, &[op.dispatch()]);
            let (mut ga, mut ub) = (Vec::new(), Vec::new());
            for row in packed.chunks(2 * width) {
                ga.extend_from_slice(&row[..width]);
                ub.extend_from_slice(&row[width..]);
            }
            assert_close(
                &format!("packed SwiGlu {tokens}x{width} {dt:?}"),
                &out.read_f32_async(ctx).await.unwrap(),
                &twins::swiglu(&ga, &ub),
                None,
                r.max(1e-5) * 4.0,
                t,
            );
            let op = Add::new(ctx, &at, &bt, n).unwrap();
            run(ctx, &[op.dispatch()]);
            let mut want = b.clone();
            twins::add(&a, &mut want);
            assert_close(
                &format!("add n={n} {dt:?}"),
                &bt.read_f32_async(ctx).await.unwrap(),
                &want,
                None,
                r,
                t,
            );
        }
    }
}

#[gpu_test]
async fn rope_matches_twin_in_both_layouts() {
    let Some(ctx) = gpu("rope_matches_twin_in_both_layouts").await else {
        return;
    };
    let mut rng = Rng::new(13);
    for dt in dtypes(ctx) {
        for layout in [RopeLayout::Normal, RopeLayout::Neox] {
            for _ in 0..3 {
                let head_dim = 2 * rng.range(2, 80);
                let rope_dim = if rng.range(0, 2) == 0 {
                    head_dim
                } else {
                    2 * rng.range(1, head_dim / 2 + 1)
                };
                let n_heads = rng.range(1, 10);
                let n_tokens = rng.range(1, 6);
                let pos0 = rng.range(0, 4000) as u32;
                // Consecutive positions (a prompt chunk), or each token its own (a batched
                // decode step over several sequences).
                let batch = rng.range(0, 2) == 0;
                let places: Vec<u32> = (0..n_tokens)
                    .map(|t| {
                        if batch {
                            rng.range(0, 4000) as u32
                        } else {
                            pos0 + t as u32
                        }
                    })
                    .collect();
                let cfg = RopeConfig {
                    n_tokens,
                    n_heads,
                    head_dim,
                    rope_dim,
                    layout,
                    freq_base: 10000.0,
                    freq_scale: 1.0,
                };
                let x = stored(rng.vec(n_tokens * n_heads * head_dim, 2.0), dt);
                let xt = Tensor::from_f32(ctx, "x", &x, dt).unwrap();
                let pairs: Vec<(usize, usize)> = places.iter().map(|&p| (p as usize, 0)).collect();
                let pos = Tensor::from_u32(ctx, "pos", &batch_positions(&pairs)).unwrap();
                // Every other case with Llama 3.x-like frequency factors in [1, 8).
                let factors: Option<Vec<f32>> = (rng.range(0, 2) == 0).then(|| {
                    (0..rope_dim / 2)
                        .map(|_| 1.0 + rng.range(0, 7000) as f32 / 1000.0)
                        .collect()
                });
                let ft = factors
                    .as_ref()
                    .map(|f| Tensor::from_f32(ctx, "factors", f, DType::F32).unwrap());
                let op = Rope::with_factors(ctx, &cfg, &pos, &xt, ft.as_ref()).unwrap();
                run(ctx, &[op.dispatch()]);
                let mut want = x.clone();
                for (t, row) in want.chunks_mut(n_heads * head_dim).enumerate() {
                    twins::rope(
                        row,
                        1,
                        n_heads,
                        head_dim,
                        rope_dim,
                        layout == RopeLayout::Neox,
                        10000.0,
                        1.0,
                        places[t],
                        factors.as_deref(),
                    );
                }
                // The angle pos * inv_freq is formed in f32 on the GPU: its absolute error
                // is ~pos * 2^-24 rad (2.4e-4 at 4000), plus sin/cos error; the pair's
                // magnitude (<= 2 * sqrt 2) scales it. atol 2e-3 covers positions < 4096.
                let (_, a) = tol(dt);
                assert_close(
                    &format!(
                        "rope {layout:?} {n_tokens}x{n_heads}x{head_dim}/{rope_dim} pos={places:?} {dt:?} factors={}",
                        factors.is_some()
                    ),
                    &xt.read_f32_async(ctx).await.unwrap(),
                    &want,
                    None,
                    0.0,
                    2e-3 + a * 4.0,
                );
            }
        }
    }
}

#[gpu_test]
async fn kv_append_writes_rows_at_the_buffered_position() {
    let Some(ctx) = gpu("kv_append_writes_rows_at_the_buffered_position").await else {
        return;
    };
    let mut rng = Rng::new(14);
    for dt in dtypes(ctx) {
        // Two sequences of 37 positions: the second's rows start at 37.
        let (kv_dim, max_ctx) = (rng.range(1, 200), 37);
        let mut cache = stored(rng.vec(2 * max_ctx * kv_dim, 1.0), dt);
        let ct = Tensor::from_f32(ctx, "cache", &cache, dt).unwrap();
        // (position, base) per token: prompt chunks (the last one past the end: dropped), then
        // a batched step with one token of each sequence.
        let cases: [Vec<(usize, usize)>; 4] = [
            vec![(0, 0)],
            (3..8).map(|p| (p, max_ctx)).collect(),
            (35..39).map(|p| (p, 0)).collect(),
            vec![(9, max_ctx), (20, 0), (36, max_ctx)],
        ];
        for places in cases {
            let n_tokens = places.len();
            let src = stored(rng.vec(n_tokens * kv_dim, 1.0), dt);
            let st = Tensor::from_f32(ctx, "src", &src, dt).unwrap();
            let pos = Tensor::from_u32(ctx, "pos", &batch_positions(&places)).unwrap();
            let slab = KvSlab::Buffer(ct.clone());
            let op = KvAppend::new(ctx, &pos, &st, &slab, n_tokens, kv_dim, max_ctx).unwrap();
            run(ctx, &[op.dispatch()]);
            for (t, &(p, base)) in places.iter().enumerate() {
                twins::kv_append(
                    &src[t * kv_dim..(t + 1) * kv_dim],
                    &mut cache[base * kv_dim..(base + max_ctx) * kv_dim],
                    1,
                    kv_dim,
                    max_ctx,
                    p as u32,
                );
            }
            // A copy: exact.
            assert_close(
                &format!("kv_append {places:?} {dt:?}"),
                &ct.read_f32_async(ctx).await.unwrap(),
                &cache,
                None,
                0.0,
                0.0,
            );
        }
    }
}

#[gpu_test]
async fn embed_matches_twin_including_split_tables() {
    let Some(ctx) = gpu("embed_matches_twin_including_split_tables").await else {
        return;
    };
    let mut rng = Rng::new(15);
    for f in [
        WeightFormat::Q8_0,
        WeightFormat::Q4_1,
        WeightFormat::Q4_0,
        WeightFormat::F16,
        WeightFormat::F32,
        WeightFormat::Q5_0,
        WeightFormat::Q4_K,
        WeightFormat::Q6_K,
    ] {
        for dt in dtypes(ctx) {
            let m = f.col_multiple();
            let (rows, cols) = (rng.range(2, 300), m * rng.range(1, 768 / m + 2));
            let bytes = random_weights(&mut rng, f, rows, cols);
            let table = dequantize(f, &bytes, rows * cols);
            // Split into parts of ~rows/3 to exercise the part selection.
            let limit = (f.row_bytes(cols) * rows.div_ceil(3)) as u64;
            // Both stores: the table of a tied model is also the head's weights.
            let store = if rows % 2 == 0 {
                WeightStore::Buffer
            } else {
                WeightStore::Texture
            };
            let w = QWeight::upload_with(ctx, "emb", f, rows, cols, &bytes, store, limit).unwrap();
            let tokens: Vec<u32> = (0..5).map(|_| rng.range(0, rows) as u32).collect();
            let tt = Tensor::from_u32(ctx, "tokens", &tokens).unwrap();
            let out = Tensor::zeros(ctx, "out", tokens.len() * cols, dt).unwrap();
            let op = Embed::new(ctx, &w, &tt, &out, tokens.len(), 1.5).unwrap();
            run(ctx, &op.dispatches().iter().collect::<Vec<_>>());
            let want = stored(twins::embed(&table, cols, &tokens, 1.5), dt);
            // The kernel may fuse d * q + m (or d * sc * q - dmin * m) into FMAs where the
            // reference rounds each step: a few ulps of terms <= ~1 in size, so absolute
            // 1e-6 (values are O(0.01..1)); f16 outputs round the same f32 value.
            assert_close(
                &format!(
                    "embed {f} {rows}x{cols} parts={} {dt:?} {store:?}",
                    w.parts.len()
                ),
                &out.read_f32_async(ctx).await.unwrap(),
                &want,
                None,
                1e-6,
                1e-6,
            );
        }
    }
}

#[gpu_test]
async fn softmax_matches_twin() {
    let Some(ctx) = gpu("softmax_matches_twin").await else {
        return;
    };
    let mut rng = Rng::new(16);
    for i in 0..6 {
        let profile = PROFILES[i % 2];
        let (rows, n) = (rng.range(1, 20), rng.range(1, 3000));
        let x = rng.vec(rows * n, 8.0);
        let xt = Tensor::from_f32(ctx, "x", &x, DType::F32).unwrap();
        let op = Softmax::with_profile(ctx, profile, &xt, rows, n).unwrap();
        run(ctx, &[op.dispatch()]);
        let mut want = x.clone();
        twins::softmax(&mut want, rows, n);
        // Probabilities: relative 1e-5 of each (exp ulps + f32 sum order), absolute 1e-9.
        assert_close(
            &format!("softmax {rows}x{n} {profile:?}"),
            &xt.read_f32_async(ctx).await.unwrap(),
            &want,
            None,
            2e-5,
            1e-9,
        );
    }
}
