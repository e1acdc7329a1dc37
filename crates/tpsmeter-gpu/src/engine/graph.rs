//! The forward pass as prepared dispatches: activations for a batch of `n` tokens and the
//! list of dispatches that runs every layer on them, built once per batch size at load (or on
//! first use) and encoded as is for every step.
//!
//! One token uses the matrix-vector kernels; several (a prompt chunk, or a batched decode
//! step: one token of each of several sequences) the tiled matrix-matrix kernels, which
//! dequantize each weight block once per tile of tokens. Where each token sits (position and
//! cache rows) comes from the `pos` buffer, per token (see [`crate::kernels::positions()`]).

use crate::error::Result;
use crate::gpu::context::GpuContext;
use crate::gpu::defines::DType;
use crate::kernels::attention::AttentionConfig;
use crate::kernels::matmul;
use crate::kernels::{
    Add, Dispatch, Embed, Glu, GluKind, KvAppend, KvSlab, KvStore, MatMul, MatVec, MatVecOptions,
    QWeight, RmsNorm, Rope, RopeConfig, RopeLayout, Tensor,
};
use crate::model::config::{Activation, ModelConfig, RopeLayout as ConfigRope};
use crate::model::llama::GpuWeights;

/// Activation buffers for up to `n` tokens.
#[derive(Debug)]
pub struct Activations {
    /// Token capacity.
    pub n: usize,
    /// Token ids (u32).
    pub tokens: Tensor,
    /// Residual stream `[n, n_embd]`.
    pub x: Tensor,
    /// Normed residual.
    pub h: Tensor,
    pub q: Tensor,
    pub k: Tensor,
    pub v: Tensor,
    /// Gemma 3: q and k after the per-head RMSNorm.
    pub qn: Tensor,
    pub kn: Tensor,
    /// Gemma 3: attention or FFN output before its post-norm.
    pub proj: Tensor,
    /// Attention output `[n, q_dim]`.
    pub attn: Tensor,
    pub gate: Tensor,
    pub up: Tensor,
    /// `act(gate) * up`.
    pub ffn: Tensor,
}

impl Activations {
    /// Zeroed buffers for `n` tokens.
    pub fn new(ctx: &GpuContext, cfg: &ModelConfig, n: usize, dt: DType) -> Result<Self> {
        let slack = matmul::input_slack(ctx);
        let t =
            |label: &str, width: usize| Tensor::zeros_with_slack(ctx, label, n * width, dt, slack);
        Ok(Self {
            n,
            tokens: Tensor::from_u32(ctx, "tokens", &vec![0; n])?,
            x: t("x", cfg.n_embd)?,
            h: t("h", cfg.n_embd)?,
            q: t("q", cfg.q_dim())?,
            k: t("k", cfg.k_dim())?,
            v: t("v", cfg.v_dim())?,
            qn: t("qn", cfg.q_dim())?,
            kn: t("kn", cfg.k_dim())?,
            proj: t("proj", cfg.n_embd)?,
            attn: t("attn", cfg.q_dim())?,
            gate: t("gate", cfg.n_ff)?,
            up: t("up", cfg.n_ff)?,
            ffn: t("ffn", cfg.n_ff)?,
        })
    }
}

/// The static KV cache: per layer, keys and values for `slots` sequences of `max_ctx`
/// positions each (sequence `s` in rows `s * max_ctx ..`), in buffers or (CPU-type adapters)
/// textures.
#[derive(Debug)]
pub struct KvCache {
    pub k: Vec<KvSlab>,
    pub v: Vec<KvSlab>,
    /// Positions per sequence.
    pub max_ctx: usize,
    /// Sequences.
    pub slots: usize,
}

impl KvCache {
    /// Allocates the whole cache once (nothing is allocated per token); `f16`: see
    /// [`crate::engine::ModelOptions::kv_f16`].
    pub fn new(
        ctx: &GpuContext,
        cfg: &ModelConfig,
        max_ctx: usize,
        slots: usize,
        dt: DType,
        f16: bool,
    ) -> Result<Self> {
        let (kd, vd) = (cfg.k_dim(), cfg.v_dim());
        let rows = max_ctx * slots;
        let store = KvStore::for_context(ctx, rows, cfg.head_dim, kd.max(vd), dt, f16);
        let mut k = Vec::with_capacity(cfg.n_layers);
        let mut v = Vec::with_capacity(cfg.n_layers);
        for l in 0..cfg.n_layers {
            k.push(KvSlab::new(
                ctx,
                &format!("k_cache.{l}"),
                rows,
                kd,
                dt,
                store,
            )?);
            v.push(KvSlab::new(
                ctx,
                &format!("v_cache.{l}"),
                rows,
                vd,
                dt,
                store,
            )?);
        }
        Ok(Self {
            k,
            v,
            max_ctx,
            slots,
        })
    }

    /// Bytes of keys and values per position (all layers).
    pub fn bytes_per_position(&self) -> u64 {
        let rows = self.max_ctx * self.slots;
        self.k
            .iter()
            .chain(&self.v)
            .map(|s| s.bytes_per_position(rows))
            .sum()
    }

    /// The first cache row of sequence `slot`.
    pub fn base(&self, slot: usize) -> usize {
        slot * self.max_ctx
    }
}

/// Buffers shared by every graph of a model.
#[derive(Debug)]
pub struct Shared<'a> {
    pub cfg: &'a ModelConfig,
    pub weights: &'a GpuWeights,
    pub kv: &'a KvCache,
    /// Per token of a step, its (position, cache row base) pair (u32).
    pub pos: &'a Tensor,
    /// Attention scores scratch.
    pub scores: &'a wgpu::Buffer,
    /// Per layer, q/k/v biases repeated for the largest batch (Qwen2); empty otherwise.
    pub biases: &'a [[Tensor; 3]],
}

/// `y (+)= W x` for `n` tokens with the kernel that suits the batch size.
fn linear(
    ctx: &GpuContext,
    w: &QWeight,
    x: &Tensor,
    y: &Tensor,
    n: usize,
    accumulate: bool,
    out: &mut Vec<Dispatch>,
) -> Result<()> {
    if n == 1 {
        let mv = MatVec::new(
            ctx,
            w,
            x,
            y,
            MatVecOptions {
                accumulate,
                ..MatVecOptions::default()
            },
        )?;
        out.extend_from_slice(mv.dispatches());
    } else {
        out.extend_from_slice(MatMul::new(ctx, w, x, y, n, accumulate)?.dispatches());
    }
    Ok(())
}

/// The dispatches of embedding lookup plus every layer for `n` tokens (`n <= a.n`) at the
/// places held in `s.pos`; the result is the residual stream `a.x`. `decode`: each token is
/// the next of its own sequence (a decode step, batched or not), else they are consecutive
/// tokens of one prompt.
pub fn layers(
    ctx: &GpuContext,
    s: &Shared<'_>,
    a: &Activations,
    n: usize,
    decode: bool,
) -> Result<Vec<Dispatch>> {
    let cfg = s.cfg;
    let e = cfg.n_embd;
    let mut d = Vec::new();
    let embed_scale = cfg.embedding_scale.unwrap_or(1.0);
    d.extend_from_slice(
        Embed::new(ctx, &s.weights.token_embd, &a.tokens, &a.x, n, embed_scale)?.dispatches(),
    );
    let layout = match cfg.rope_layout {
        ConfigRope::Interleaved => RopeLayout::Normal,
        ConfigRope::Neox => RopeLayout::Neox,
    };
    let glu = match cfg.activation {
        Activation::Silu => GluKind::SwiGlu,
        Activation::GeluTanh => GluKind::GeluTanh,
    };
    let norm = |x: &Tensor, w: &Tensor, y: &Tensor, rows: usize, dim: usize| -> Result<Dispatch> {
        Ok(RmsNorm::new(ctx, x, w, y, rows, dim, cfg.rms_eps)?
            .dispatch()
            .clone())
    };
    for (l, lw) in s.weights.layers.iter().enumerate() {
        // Gemma 3's local layers see a sliding window, rotate with their own base and are not
        // position-scaled (as in llama.cpp); global layers and other models use the defaults.
        let local = cfg.is_local_layer(l);
        let rope = |heads: usize| RopeConfig {
            n_tokens: n,
            n_heads: heads,
            head_dim: cfg.head_dim,
            rope_dim: cfg.rope_dim,
            layout,
            freq_base: cfg.rope_base_for_layer(l),
            freq_scale: if local { 1.0 } else { 1.0 / cfg.rope_scale },
        };
        let att = AttentionConfig {
            n_tokens: n,
            n_heads: cfg.n_head,
            n_kv_heads: cfg.n_head_kv,
            head_dim: cfg.head_dim,
            max_ctx: s.kv.max_ctx,
            window: match cfg.sliding_window {
                Some(sw) if local => sw.window,
                _ => 0,
            },
            scale: cfg.attention_scale,
            decode,
            split_by_group: ctx.fetches_are_gathers(),
        };

        d.push(norm(&a.x, &lw.attn_norm, &a.h, n, e)?);
        linear(ctx, &lw.wq, &a.h, &a.q, n, false, &mut d)?;
        linear(ctx, &lw.wk, &a.h, &a.k, n, false, &mut d)?;
        linear(ctx, &lw.wv, &a.h, &a.v, n, false, &mut d)?;
        if let Some([bq, bk, bv]) = s.biases.get(l) {
            d.push(Add::new(ctx, bq, &a.q, n * cfg.q_dim())?.dispatch().clone());
            d.push(Add::new(ctx, bk, &a.k, n * cfg.k_dim())?.dispatch().clone());
            d.push(Add::new(ctx, bv, &a.v, n * cfg.v_dim())?.dispatch().clone());
        }
        let (q, k) = match &lw.qk_norm {
            Some([qw, kw]) => {
                d.push(norm(&a.q, qw, &a.qn, n * cfg.n_head, cfg.head_dim)?);
                d.push(norm(&a.k, kw, &a.kn, n * cfg.n_head_kv, cfg.head_dim)?);
                (&a.qn, &a.kn)
            }
            None => (&a.q, &a.k),
        };
        // Llama 3.x frequency factors apply to every layer when the file has them.
        let freqs = s.weights.rope_freqs.as_ref();
        for (x, heads) in [(q, cfg.n_head), (k, cfg.n_head_kv)] {
            d.push(
                Rope::with_factors(ctx, &rope(heads), s.pos, x, freqs)?
                    .dispatch()
                    .clone(),
            );
        }
        let kv_app = |src: &Tensor, cache: &KvSlab, width: usize| {
            KvAppend::new(ctx, s.pos, src, cache, n, width, s.kv.max_ctx)
        };
        d.push(kv_app(k, &s.kv.k[l], cfg.k_dim())?.dispatch().clone());
        d.push(kv_app(&a.v, &s.kv.v[l], cfg.v_dim())?.dispatch().clone());
        d.extend(crate::kernels::attention::prepare(
            ctx,
            ctx.profile,
            &att,
            s.pos,
            q,
            (&s.kv.k[l], &s.kv.v[l]),
            s.scores,
            &a.attn,
        )?);
        residual(
            ctx,
            &lw.wo,
            &a.attn,
            lw.attn_post_norm.as_ref(),
            a,
            n,
            e,
            cfg.rms_eps,
            &mut d,
        )?;

        d.push(norm(&a.x, &lw.ffn_norm, &a.h, n, e)?);
        linear(ctx, &lw.w_gate, &a.h, &a.gate, n, false, &mut d)?;
        linear(ctx, &lw.w_up, &a.h, &a.up, n, false, &mut d)?;
        d.push(
            Glu::new(ctx, glu, &a.gate, &a.up, &a.ffn, n * cfg.n_ff)?
                .dispatch()
                .clone(),
        );
        residual(
            ctx,
            &lw.w_down,
            &a.ffn,
            lw.ffn_post_norm.as_ref(),
            a,
            n,
            e,
            cfg.rms_eps,
            &mut d,
        )?;
    }
    Ok(d)
}

/// `x += W input`, or with a post-norm (Gemma 3) `x += rms_norm(W input) * post`: the plain
/// case fuses the residual add into the matrix kernel; the post-normed one goes through
/// `a.proj` and `a.h`.
#[allow(clippy::too_many_arguments)]
fn residual(
    ctx: &GpuContext,
    w: &QWeight,
    input: &Tensor,
    post: Option<&Tensor>,
    a: &Activations,
    n: usize,
    e: usize,
    eps: f32,
    d: &mut Vec<Dispatch>,
) -> Result<()> {
    match post {
        None => linear(ctx, w, input, &a.x, n, true, d),
        Some(post) => {
            linear(ctx, w, input, &a.proj, n, false, d)?;
            d.push(
                RmsNorm::new(ctx, &a.proj, post, &a.h, n, e, eps)?
                    .dispatch()
                    .clone(),
            );
            d.push(Add::new(ctx, &a.h, &a.x, n * e)?.dispatch().clone());
            Ok(())
        }
    }
}

/// The output norm and head on the first `rows` residual rows of `x`, writing `rows` rows of
/// `logits`.
pub fn head(
    ctx: &GpuContext,
    s: &Shared<'_>,
    a: &Activations,
    logits: &Tensor,
    rows: usize,
) -> Result<Vec<Dispatch>> {
    let mut d = vec![
        RmsNorm::new(
            ctx,
            &a.x,
            &s.weights.output_norm,
            &a.h,
            rows,
            s.cfg.n_embd,
            s.cfg.rms_eps,
        )?
        .dispatch()
        .clone(),
    ];
    linear(ctx, s.weights.head(), &a.h, logits, rows, false, &mut d)?;
    Ok(d)
}

/// Per layer, q/k/v biases repeated `n` times so one elementwise add covers a batch.
pub fn repeated_biases(
    ctx: &GpuContext,
    weights: &GpuWeights,
    n: usize,
) -> Result<Vec<[Tensor; 3]>> {
    let mut out = Vec::new();
    for (l, layer) in weights.layers.iter().enumerate() {
        let Some(b) = &layer.bias else { continue };
        let rep = |v: &[f32], which: &str| -> Result<Tensor> {
            let all: Vec<f32> = std::iter::repeat_n(v, n).flatten().copied().collect();
            Tensor::from_f32(ctx, &format!("blk.{l}.{which}.bias x{n}"), &all, DType::F32)
        };
        out.push([rep(&b[0], "q")?, rep(&b[1], "k")?, rep(&b[2], "v")?]);
    }
    Ok(out)
}
