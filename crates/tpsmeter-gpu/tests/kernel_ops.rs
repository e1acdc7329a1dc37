//! The small kernels against their CPU twins over random shapes (seeded), f32 always and
//! f16 where the adapter offers `shader-f16`.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Rng, assert_close, dequantize, gpu, gpu_test, random_weights, round_f16};
use tpsmeter_gpu::gpu::{AdapterProfile, DType, GpuContext};

const PROFILES: [AdapterProfile; 2] = [AdapterProfile::Cpu, AdapterProfile::Gpu];
use tpsmeter_gpu::kernels::attention;
use tpsmeter_gpu::kernels::dispatch::run;
use tpsmeter_gpu::kernels::{
    Add, Attention, AttentionConfig, Embed, Glu, GluKind, KvAppend, KvSlab, KvStore, QWeight,
    RmsNorm, Rope, RopeConfig, RopeLayout, Softmax, Tensor, WeightFormat, WeightStore,
    batch_positions, cpu, positions,
};

fn dtypes(ctx: &GpuContext) -> Vec<DType> {
    if ctx.has_f16() {
        vec![DType::F32, DType::F16]
    } else {
        vec![DType::F32]
    }
}

/// Values as an f16 tensor stores them (identity for f32).
fn stored(v: Vec<f32>, dt: DType) -> Vec<f32> {
    if dt == DType::F16 { round_f16(&v) } else { v }
}

/// f32 kernels differ from the f64 twins by a few ulps of the values' scale; f16 outputs
/// add one rounding to 11 bits (4.9e-4 relative), doubled for margin.
fn tol(dt: DType) -> (f32, f32) {
    match dt {
        DType::F32 => (1e-5, 1e-6),
        DType::F16 => (1e-3, 1e-3),
    }
}

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
                let want = cpu::rms_norm(&x, &w, rows, dim, 1e-5);
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
                    GluKind::SwiGlu => cpu::swiglu(&a, &b),
                    GluKind::GeluTanh => cpu::gelu_glu(&a, &b),
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
            let op = Add::new(ctx, &at, &bt, n).unwrap();
            run(ctx, &[op.dispatch()]);
            let mut want = b.clone();
            cpu::add(&a, &mut want);
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
                    cpu::rope(
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
                cpu::kv_append(
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
            let want = stored(cpu::embed(&table, cols, &tokens, 1.5), dt);
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
        cpu::softmax(&mut want, rows, n);
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

/// A texture KV slab (`store`: f32 or f16 texels) of `rows` rows holding `src` (`[rows,
/// kv_dim]`), filled through the texture append from row 0: the attention tests that read
/// it check both.
fn texture_slab(
    ctx: &GpuContext,
    src: &Tensor,
    rows: usize,
    kv_dim: usize,
    store: KvStore,
) -> KvSlab {
    let all = Tensor::from_u32(ctx, "all rows", &positions(0, rows, 0)).unwrap();
    let s = KvSlab::new(ctx, "kv", rows, kv_dim, src.dtype, store).unwrap();
    assert_eq!(s.store(), store);
    let op = KvAppend::new(ctx, &all, src, &s, rows, kv_dim, rows).unwrap();
    run(ctx, &[op.dispatch()]);
    s
}

/// A batched decode step: each query token is the next token of its own sequence, at its
/// own position, over its own rows of one cache (sequence `s` from row `s * max_ctx`). Each
/// token's output must be the twin's for that sequence alone, on both kernels, over short
/// caches and over caches long enough for the CPU-type kernel's split, both KV stores.
#[gpu_test]
async fn attention_batched_decode_reads_each_sequences_own_rows() {
    let Some(ctx) = gpu("attention_batched_decode_reads_each_sequences_own_rows").await else {
        return;
    };
    let mut rng = Rng::new(23);
    for dt in dtypes(ctx) {
        for (n_seq, n_heads, n_kv, head_dim, window, long) in [
            (3, 9, 3, 64, 0, false),
            (5, 4, 1, 32, 0, true),
            (2, 4, 2, 64, 150, true),
        ] {
            let max_ctx = if long {
                rng.range(attention::SPLIT_CHUNK + 2, 600)
            } else {
                rng.range(8, 100)
            };
            let slots = n_seq + 1;
            let kv_dim = n_kv * head_dim;
            // Token t belongs to sequence (t + 1) % slots (slot 0 left out of the order), at
            // a random position.
            let places: Vec<(usize, usize)> = (0..n_seq)
                .map(|t| (rng.range(0, max_ctx), ((t + 1) % slots) * max_ctx))
                .collect();
            let q = stored(rng.vec(n_seq * n_heads * head_dim, 1.0), dt);
            let k = stored(rng.vec(slots * max_ctx * kv_dim, 1.0), dt);
            let v = stored(rng.vec(slots * max_ctx * kv_dim, 1.0), dt);
            let scale = 1.0 / (head_dim as f32).sqrt();
            let cfg = AttentionConfig {
                n_tokens: n_seq,
                n_heads,
                n_kv_heads: n_kv,
                head_dim,
                max_ctx,
                window,
                scale,
                decode: true,
            };
            // The twin over caches as stored: exact, or rounded to f16 (the f16 texture).
            let twin = |k: &[f32], v: &[f32]| {
                let mut want = Vec::new();
                for (t, &(p, base)) in places.iter().enumerate() {
                    let rows = base * kv_dim..(base + max_ctx) * kv_dim;
                    want.extend(cpu::attention(
                        &q[t * n_heads * head_dim..(t + 1) * n_heads * head_dim],
                        &k[rows.clone()],
                        &v[rows],
                        1,
                        n_heads,
                        n_kv,
                        head_dim,
                        max_ctx,
                        window,
                        scale,
                        p as u32,
                    ));
                }
                want
            };
            let want = twin(&k, &v);
            let want16 = twin(&round_f16(&k), &round_f16(&v));
            let qt = Tensor::from_f32(ctx, "q", &q, dt).unwrap();
            let kt = Tensor::from_f32(ctx, "k", &k, dt).unwrap();
            let vt = Tensor::from_f32(ctx, "v", &v, dt).unwrap();
            let pos = Tensor::from_u32(ctx, "pos", &batch_positions(&places)).unwrap();
            let scores = ctx
                .storage_zeroed("scores", attention::scratch_bytes(&cfg))
                .unwrap();
            let total = slots * max_ctx;
            let mut stores = vec![
                (
                    "buffer",
                    KvSlab::Buffer(kt.clone()),
                    KvSlab::Buffer(vt.clone()),
                ),
                (
                    "texture_f16",
                    texture_slab(ctx, &kt, total, kv_dim, KvStore::TextureF16),
                    texture_slab(ctx, &vt, total, kv_dim, KvStore::TextureF16),
                ),
            ];
            if dt == DType::F32 {
                stores.push((
                    "texture",
                    texture_slab(ctx, &kt, total, kv_dim, KvStore::Texture),
                    texture_slab(ctx, &vt, total, kv_dim, KvStore::Texture),
                ));
            }
            for (store, ks, vs) in &stores {
                for profile in PROFILES {
                    if *store != "buffer" && profile == AdapterProfile::Gpu {
                        continue;
                    }
                    // f16 texels: the twin on f16-rounded keys and values, and f16's
                    // tolerance (the GPU's own rounding may differ by an ulp).
                    let (want, dt_tol) = if *store == "texture_f16" {
                        (&want16, DType::F16)
                    } else {
                        (&want, dt)
                    };
                    let out = Tensor::zeros(ctx, "out", q.len(), dt).unwrap();
                    let d =
                        attention::prepare(ctx, profile, &cfg, &pos, &qt, (ks, vs), &scores, &out)
                            .unwrap();
                    run(ctx, &d.iter().collect::<Vec<_>>());
                    let (r, a) = tol(dt_tol);
                    assert_close(
                        &format!(
                            "batched attention {store} {profile:?} seqs={n_seq} h={n_heads}/{n_kv} d={head_dim} w={window} ctx={max_ctx} at {places:?} {dt:?}"
                        ),
                        &out.read_f32_async(ctx).await.unwrap(),
                        want,
                        None,
                        r,
                        a.max(1e-5),
                    );
                }
            }
        }
    }
}

#[gpu_test]
async fn attention_matches_twin_for_decode_prefill_gqa_and_window() {
    let Some(ctx) = gpu("attention_matches_twin_for_decode_prefill_gqa_and_window").await else {
        return;
    };
    let mut rng = Rng::new(17);
    for dt in dtypes(ctx) {
        for (n_tokens, n_heads, n_kv, head_dim, window, long) in [
            (1, 9, 3, 64, 0, false),
            (7, 4, 1, 32, 0, false),
            (5, 8, 8, 16, 4, false),
            (1, 4, 2, 128, 0, false),
            // Gemma 3's head size, and one the CPU kernel's vec4s cannot take.
            (3, 4, 1, 256, 0, false),
            (2, 2, 1, 6, 0, false),
            // Decode over caches longer than the split kernel's chunk (CPU type: split along
            // the keys and combined), with and without a sliding window.
            (1, 9, 3, 64, 0, true),
            (1, 4, 1, 256, 300, true),
            (1, 8, 2, 32, 0, true),
        ] {
            let max_ctx = if long {
                rng.range(attention::SPLIT_CHUNK + 2, 1200)
            } else {
                rng.range(n_tokens + 1, 200)
            };
            // Long caches: a position in the second half, so most chunks hold keys.
            let lo = if long { max_ctx / 2 } else { 0 };
            let pos0 = rng.range(lo, max_ctx - n_tokens + 1) as u32;
            let kv_dim = n_kv * head_dim;
            let q = stored(rng.vec(n_tokens * n_heads * head_dim, 1.0), dt);
            let k = stored(rng.vec(max_ctx * kv_dim, 1.0), dt);
            let v = stored(rng.vec(max_ctx * kv_dim, 1.0), dt);
            let scale = 1.0 / (head_dim as f32).sqrt();
            let cfg = AttentionConfig {
                n_tokens,
                n_heads,
                n_kv_heads: n_kv,
                head_dim,
                max_ctx,
                window,
                scale,
                decode: n_tokens == 1,
            };
            let qt = Tensor::from_f32(ctx, "q", &q, dt).unwrap();
            let kt = Tensor::from_f32(ctx, "k", &k, dt).unwrap();
            let vt = Tensor::from_f32(ctx, "v", &v, dt).unwrap();
            let out = Tensor::zeros(ctx, "out", q.len(), dt).unwrap();
            let pos = Tensor::from_u32(ctx, "pos", &positions(pos0 as usize, n_tokens, 0)).unwrap();
            let want = cpu::attention(
                &q, &k, &v, n_tokens, n_heads, n_kv, head_dim, max_ctx, window, scale, pos0,
            );
            // The CPU-type kernel over texture caches, filled through the texture append from
            // position 0: checks both. f16 texels (any activation type) against the twin on
            // f16-rounded keys and values, within f16's tolerance (the GPU's own rounding may
            // differ by an ulp); f32 texels (f32 activations only) exactly.
            let want16 = cpu::attention(
                &q,
                &round_f16(&k),
                &round_f16(&v),
                n_tokens,
                n_heads,
                n_kv,
                head_dim,
                max_ctx,
                window,
                scale,
                pos0,
            );
            for (store, want_store, (r, a)) in [
                (KvStore::TextureF16, &want16, tol(DType::F16)),
                (KvStore::Texture, &want, (1e-5, 1e-5)),
            ] {
                if head_dim % 8 != 0 || (store == KvStore::Texture && dt != DType::F32) {
                    continue;
                }
                let (ks, vs) = (
                    texture_slab(ctx, &kt, max_ctx, kv_dim, store),
                    texture_slab(ctx, &vt, max_ctx, kv_dim, store),
                );
                let scores = ctx
                    .storage_zeroed("scores", attention::scratch_bytes(&cfg))
                    .unwrap();
                let d = attention::prepare(
                    ctx,
                    AdapterProfile::Cpu,
                    &cfg,
                    &pos,
                    &qt,
                    (&ks, &vs),
                    &scores,
                    &out,
                )
                .unwrap();
                run(ctx, &d.iter().collect::<Vec<_>>());
                assert_close(
                    &format!(
                        "attention {store:?} KV t={n_tokens} h={n_heads}/{n_kv} d={head_dim} w={window} ctx={max_ctx} pos={pos0} {dt:?}"
                    ),
                    &out.read_f32_async(ctx).await.unwrap(),
                    want_store,
                    None,
                    r,
                    a,
                );
            }
            for profile in PROFILES {
                let op =
                    Attention::with_profile(ctx, profile, &cfg, &pos, &qt, &kt, &vt, &out).unwrap();
                run(ctx, &op.dispatches().iter().collect::<Vec<_>>());
                // Outputs are convex combinations of |v| <= 1: absolute tolerance 1e-5
                // (f32 exp and sums), f16 adds output rounding.
                let (r, a) = tol(dt);
                assert_close(
                    &format!(
                        "attention t={n_tokens} {profile:?} h={n_heads}/{n_kv} d={head_dim} w={window} ctx={max_ctx} pos={pos0} {dt:?}"
                    ),
                    &out.read_f32_async(ctx).await.unwrap(),
                    &want,
                    None,
                    r,
                    a.max(1e-5),
                );
            }
        }
    }
}
