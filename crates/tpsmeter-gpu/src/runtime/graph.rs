//! The forward pass as prepared dispatches: activations for a batch of `n` tokens and the
//! list of dispatches that runs every layer on them, built once per batch size at load (or on
//! first use) and encoded as is for every step.
//!
//! One token uses the matrix-vector kernels; several (a prompt chunk, or a batched decode
//! step: one token of each of several sequences) the tiled matrix-matrix kernels, which
//! dequantize each weight block once per tile of tokens. Where each token sits (position and
//! cache rows) comes from the `pos` buffer, per token (see [`crate::kernels::positions()`]).
//!
//! A decode step is fused to at most 6 dispatches per layer (7 where the CPU-type attention
//! splits a long cache), because on a real GPU each dispatch's fixed cost, not bandwidth,
//! sets the speed of a small model (docs/performance.md):
//! 1. the attention norm folded into the QKV matvec (one matrix where q, k and v fuse);
//! 2. biases, head norms, RoPE and the KV append (`rope_kv`);
//! 3. attention;
//! 4. the output projection with the residual add in its epilogue;
//! 5. the FFN norm folded into the gate/up matvec with the gated unit in its epilogue;
//! 6. the down projection with the residual add.
//!
//! Several tokens keep a norm dispatch before each matmul and a packed GLU after the gate/up
//! one (9 per layer): their dispatches are amortised over the tokens. Gemma 3's post-norms
//! add two dispatches where they apply.

use crate::error::Result;
use crate::gpu::context::GpuContext;
use crate::gpu::defines::DType;
use crate::kernels::attention::AttentionConfig;
use crate::kernels::matmul;
use crate::kernels::{
    Add, Dispatch, Embed, Glu, GluKind, KvSlab, KvStore, MatMul, MatVec, MatVecOptions, NormFold,
    QWeight, RmsNorm, RopeKv, RopeKvConfig, RopeLayout, Tensor,
};
use crate::model::gpu_weights::{GateUp, GpuWeights};
use tpsmeter_model::config::{Activation, ModelConfig, RopeLayout as ConfigRope};

/// Activation buffers for up to `n` tokens.
#[derive(Debug)]
pub struct Activations {
    /// Token capacity.
    pub n: usize,
    /// Token ids (u32).
    pub tokens: Tensor,
    /// Residual stream `[n, n_embd]`.
    pub x: Tensor,
    /// Normed residual (several tokens), or a post-normed projection (Gemma 3).
    pub h: Tensor,
    /// q, k and v of each token in one row `[n, q_dim + k_dim + v_dim]`.
    pub qkv: Tensor,
    /// Rotated queries `[n, q_dim]`, attention's input.
    pub q: Tensor,
    /// Gemma 3: attention or FFN output before its post-norm.
    pub proj: Tensor,
    /// Attention output `[n, q_dim]`.
    pub attn: Tensor,
    /// Gate and up of each token in one row `[n, 2 n_ff]` (where they are not fused with
    /// their gated unit).
    pub gate_up: Tensor,
    /// `act(gate) * up` `[n, n_ff]`.
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
            qkv: t("qkv", cfg.q_dim() + cfg.k_dim() + cfg.v_dim())?,
            q: t("q", cfg.q_dim())?,
            proj: t("proj", cfg.n_embd)?,
            attn: t("attn", cfg.q_dim())?,
            gate_up: t("gate_up", 2 * cfg.n_ff)?,
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
    /// the engine's `ModelOptions::kv_f16`.
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
}

/// `y (+)= W x` for `n` tokens with the kernel that suits the batch size; one token may
/// fold an RMSNorm of `x` into the matvec.
#[allow(clippy::too_many_arguments)] // The op's inputs and its two fusions, one each.
fn linear(
    ctx: &GpuContext,
    w: &QWeight,
    x: &Tensor,
    y: &Tensor,
    n: usize,
    accumulate: bool,
    norm: Option<NormFold<'_>>,
    out: &mut Vec<Dispatch>,
) -> Result<()> {
    if n == 1 {
        let opts = MatVecOptions {
            accumulate,
            norm,
            ..MatVecOptions::default()
        };
        out.extend_from_slice(MatVec::new(ctx, w, x, y, opts)?.dispatches());
    } else {
        out.extend_from_slice(MatMul::new(ctx, w, x, y, n, accumulate)?.dispatches());
    }
    Ok(())
}

/// `W norm(x)` into `y` for every matrix of `ws` (each placed at its columns of `y`'s rows),
/// the norm over rows of `e` values: one token folds the norm into each matvec; several run
/// it once into `a.h` first.
#[allow(clippy::too_many_arguments)]
fn normed_linear(
    ctx: &GpuContext,
    ws: &[&QWeight],
    (norm, e, eps): (&Tensor, usize, f32),
    a: &Activations,
    y: &Tensor,
    n: usize,
    d: &mut Vec<Dispatch>,
) -> Result<()> {
    if n == 1 {
        let fold = NormFold { weight: norm, eps };
        for w in ws {
            linear(ctx, w, &a.x, y, 1, false, Some(fold), d)?;
        }
    } else {
        d.push(
            RmsNorm::new(ctx, &a.x, norm, &a.h, n, e, eps)?
                .dispatch()
                .clone(),
        );
        for w in ws {
            linear(ctx, w, &a.h, y, n, false, None, d)?;
        }
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
    let eps = cfg.rms_eps;
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
    for (l, lw) in s.weights.layers.iter().enumerate() {
        // Gemma 3's local layers see a sliding window, rotate with their own base and are not
        // position-scaled (as in llama.cpp); global layers and other models use the defaults.
        let local = cfg.is_local_layer(l);
        let rope = RopeKvConfig {
            n_tokens: n,
            n_heads: cfg.n_head,
            n_kv_heads: cfg.n_head_kv,
            head_dim: cfg.head_dim,
            rope_dim: cfg.rope_dim,
            layout,
            freq_base: cfg.rope_base_for_layer(l),
            freq_scale: if local { 1.0 } else { 1.0 / cfg.rope_scale },
            max_ctx: s.kv.max_ctx,
            eps,
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

        let qkv: Vec<&QWeight> = lw.qkv.iter().collect();
        normed_linear(ctx, &qkv, (&lw.attn_norm, e, eps), a, &a.qkv, n, &mut d)?;
        // Llama 3.x frequency factors apply to every layer when the file has them.
        let freqs = s.weights.rope_freqs.as_ref();
        d.push(
            RopeKv::new(
                ctx,
                &rope,
                s.pos,
                &a.qkv,
                &a.q,
                (&s.kv.k[l], &s.kv.v[l]),
                freqs,
                lw.head_extras.as_ref(),
            )?
            .dispatch()
            .clone(),
        );
        d.extend(crate::kernels::attention::prepare(
            ctx,
            ctx.profile,
            &att,
            s.pos,
            &a.q,
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
            eps,
            &mut d,
        )?;

        match &lw.gate_up {
            // One token: the norm and the gated unit both ride in the gate/up matvec.
            GateUp::Fused(w) if n == 1 => {
                let opts = MatVecOptions {
                    norm: Some(NormFold {
                        weight: &lw.ffn_norm,
                        eps,
                    }),
                    glu: Some(glu),
                    ..MatVecOptions::default()
                };
                d.extend_from_slice(MatVec::new(ctx, w, &a.x, &a.ffn, opts)?.dispatches());
            }
            gu => {
                let ws = gu.matrices();
                normed_linear(ctx, &ws, (&lw.ffn_norm, e, eps), a, &a.gate_up, n, &mut d)?;
                d.push(
                    Glu::packed(ctx, glu, &a.gate_up, &a.ffn, n, cfg.n_ff)?
                        .dispatch()
                        .clone(),
                );
            }
        }
        residual(
            ctx,
            &lw.w_down,
            &a.ffn,
            lw.ffn_post_norm.as_ref(),
            a,
            n,
            e,
            eps,
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
        None => linear(ctx, w, input, &a.x, n, true, None, d),
        Some(post) => {
            linear(ctx, w, input, &a.proj, n, false, None, d)?;
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
/// `logits` (one row folds the norm into the head's matvec).
pub fn head(
    ctx: &GpuContext,
    s: &Shared<'_>,
    a: &Activations,
    logits: &Tensor,
    rows: usize,
) -> Result<Vec<Dispatch>> {
    let mut d = Vec::new();
    let head = s.weights.head();
    let norm = (&s.weights.output_norm, s.cfg.n_embd, s.cfg.rms_eps);
    normed_linear(ctx, &[head], norm, a, logits, rows, &mut d)?;
    Ok(d)
}
