//! The fused RoPE + KV append (`rope_kv.wgsl`) against its CPU twin (`cpu::rope_kv`), over
//! both rotation layouts, partial rotation, frequency factors, Qwen2's biases, Gemma's head
//! norms, tokens of several sequences at their own positions (one past the cache's end,
//! which must be dropped), and every KV store: buffers (f32, and f16 where offered), f32 and
//! f16 textures.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Rng, assert_close, gpu, gpu_test, round_f16};
use tpsmeter_gpu::gpu::{DType, GpuContext};
use tpsmeter_gpu::kernels::dispatch::run;
use tpsmeter_gpu::kernels::{
    HeadExtras, KvSlab, KvStore, RopeKv, RopeKvConfig, RopeLayout, Tensor, batch_positions, twins,
};

/// (heads, kv heads, head_dim, rope_dim): SmolLM2's GQA, MHA, a partial rotation, Gemma's
/// 256-wide heads.
const SHAPES: [(usize, usize, usize, usize); 4] = [
    (9, 3, 64, 64),
    (4, 4, 32, 32),
    (8, 2, 64, 32),
    (2, 1, 256, 256),
];

#[allow(clippy::too_many_arguments)]
async fn check(
    ctx: &GpuContext,
    seed: u64,
    (heads, kv_heads, hd, rope_dim): (usize, usize, usize, usize),
    layout: RopeLayout,
    with_factors: bool,
    with_biases: bool,
    with_norms: bool,
    store: KvStore,
    dt: DType,
) {
    let mut rng = Rng::new(seed);
    let max_ctx = 12;
    let slots = 2;
    let n = 5;
    let cfg = RopeKvConfig {
        n_tokens: n,
        n_heads: heads,
        n_kv_heads: kv_heads,
        head_dim: hd,
        rope_dim,
        layout,
        freq_base: 10000.0,
        freq_scale: 0.5,
        max_ctx,
        eps: 1e-6,
    };
    // Tokens of both sequences at scattered positions, distinct within a sequence (two
    // writes of one row would race); the last is past the cache's end.
    let mut positions: Vec<(usize, usize)> = Vec::new();
    for t in 0..n {
        let base = (t % slots) * max_ctx;
        let mut position = rng.range(0, max_ctx);
        while positions.contains(&(position, base)) {
            position = rng.range(0, max_ctx);
        }
        positions.push((if t + 1 == n { max_ctx } else { position }, base));
    }
    let mut qkv = rng.vec(n * cfg.width(), 1.0);
    if dt == DType::F16 {
        qkv = round_f16(&qkv);
    }
    let factors: Vec<f32> = (0..rope_dim / 2).map(|i| 1.0 + i as f32 * 0.25).collect();
    let biases = rng.vec(cfg.width(), 0.5);
    let qn: Vec<f32> = rng.vec(hd, 0.5).iter().map(|v| 1.0 + v).collect();
    let kn: Vec<f32> = rng.vec(hd, 0.5).iter().map(|v| 1.0 + v).collect();
    let extras = HeadExtras::pack(
        ctx,
        "extras",
        with_biases.then_some(&biases[..]),
        with_norms.then_some((&qn[..], &kn[..])),
    )
    .unwrap();
    let kv_dim = kv_heads * hd;
    let rows = max_ctx * slots;
    let pos = Tensor::from_u32(ctx, "pos", &batch_positions(&positions)).unwrap();
    let qkv_t = Tensor::from_f32(ctx, "qkv", &qkv, dt).unwrap();
    let q_out = Tensor::zeros(ctx, "q", n * heads * hd, dt).unwrap();
    let ft = Tensor::from_f32(ctx, "factors", &factors, DType::F32).unwrap();
    let k = KvSlab::new(ctx, "k", rows, kv_dim, dt, store).unwrap();
    let v = KvSlab::new(ctx, "v", rows, kv_dim, dt, store).unwrap();
    let op = RopeKv::new(
        ctx,
        &cfg,
        &pos,
        &qkv_t,
        &q_out,
        (&k, &v),
        with_factors.then_some(&ft),
        extras.as_ref(),
    )
    .unwrap();
    run(ctx, &[op.dispatch()]);
    let got_q = q_out.read_f32_async(ctx).await.unwrap();
    let got_k = k.read_f32_async(ctx).await.unwrap();
    let got_v = v.read_f32_async(ctx).await.unwrap();
    ctx.take_error().unwrap();

    let mut want_q = vec![0f32; n * heads * hd];
    let mut want_k = vec![0f32; rows * kv_dim];
    let mut want_v = vec![0f32; rows * kv_dim];
    twins::rope_kv(
        &cfg,
        layout == RopeLayout::Neox,
        &qkv,
        &positions,
        with_factors.then_some(&factors[..]),
        with_biases.then_some(&biases[..]),
        with_norms.then_some((&qn[..], &kn[..])),
        &mut want_q,
        &mut want_k,
        &mut want_v,
    );
    // f32: the angles in f32 against f64 (positions < 16: a few ulps), the GPU's sin, cos and
    // pow (SwiftShader's are good to ~1e-4: 9.6e-5 seen on a value of 0.5, where lavapipe is
    // within 2e-5), scaled by the pair's magnitude (O(1-10)), and a norm's sum. f16 storage
    // (activations, or the f16 texture) rounds each stored value to 2^-11 relative.
    let f16_cache = dt == DType::F16 || store == KvStore::TextureF16;
    let tol = |f16: bool| if f16 { (2e-3, 2e-3) } else { (2e-4, 1e-3) };
    let label = format!(
        "rope_kv {heads}/{kv_heads}x{hd} rope {rope_dim} {layout:?} factors={with_factors} \
         biases={with_biases} norms={with_norms} {store:?} {dt:?} seed={seed}"
    );
    let (r, a) = tol(dt == DType::F16);
    assert_close(&format!("{label} q"), &got_q, &want_q, None, r, a);
    let (r, a) = tol(f16_cache);
    assert_close(&format!("{label} k"), &got_k, &want_k, None, r, a);
    assert_close(&format!("{label} v"), &got_v, &want_v, None, r, a);
}

#[gpu_test]
async fn rope_kv_matches_twin_over_layouts_extras_and_stores() {
    let Some(ctx) = gpu("rope_kv_matches_twin_over_layouts_extras_and_stores").await else {
        return;
    };
    let mut rng = Rng::new(0x40be);
    let mut stores = vec![
        (KvStore::Buffer, DType::F32),
        (KvStore::Texture, DType::F32),
        (KvStore::TextureF16, DType::F32),
    ];
    if ctx.has_f16() {
        stores.push((KvStore::Buffer, DType::F16));
        stores.push((KvStore::TextureF16, DType::F16));
    }
    for shape in SHAPES {
        for layout in [RopeLayout::Normal, RopeLayout::Neox] {
            for (store, dt) in &stores {
                let seed = rng.next_u64();
                // Each extra on and off across the cases, all on at least once per shape.
                let (f, b, nrm) = (
                    seed.is_multiple_of(2),
                    !seed.is_multiple_of(3),
                    (seed / 7).is_multiple_of(2),
                );
                check(ctx, seed, shape, layout, f, b, nrm, *store, *dt).await;
                check(ctx, seed ^ 1, shape, layout, true, true, true, *store, *dt).await;
            }
        }
    }
}

#[gpu_test]
async fn rope_kv_refuses_heads_it_cannot_split() {
    let Some(ctx) = gpu("rope_kv_refuses_heads_it_cannot_split").await else {
        return;
    };
    let cfg = RopeKvConfig {
        n_tokens: 1,
        n_heads: 2,
        n_kv_heads: 1,
        head_dim: 12,
        rope_dim: 12,
        layout: RopeLayout::Normal,
        freq_base: 10000.0,
        freq_scale: 1.0,
        max_ctx: 4,
        eps: 1e-6,
    };
    let t = |n: usize| Tensor::zeros(ctx, "t", n, DType::F32).unwrap();
    let (pos, qkv, q) = (t(2), t(cfg.width()), t(24));
    let k = KvSlab::new(ctx, "k", 4, 12, DType::F32, KvStore::Buffer).unwrap();
    let v = KvSlab::new(ctx, "v", 4, 12, DType::F32, KvStore::Buffer).unwrap();
    let err = RopeKv::new(ctx, &cfg, &pos, &qkv, &q, (&k, &v), None, None).unwrap_err();
    assert!(err.to_string().contains("not a multiple of 8"), "{err}");
}
