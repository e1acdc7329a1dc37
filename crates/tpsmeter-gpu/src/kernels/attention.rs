//! Grouped-query attention over a static KV cache: decode (one query token) and causal
//! prefill (several), with an optional sliding window (gemma's local layers).
//!
//! GPUs get a workgroup per (head, token) with tree reductions over a scores scratch
//! (`attention.wgsl`); CPU-type adapters get one invocation per (head, token) with an online
//! softmax and no barriers (`attention_cpu.wgsl`), which ignores the scratch.

use crate::error::{GpuError, Result};
use crate::gpu::context::{AdapterProfile, GpuContext};
use crate::gpu::defines::{DType, Defines};
use crate::kernels::dispatch::Dispatch;
use crate::kernels::source::ShaderId;
use crate::kernels::tensor::Tensor;

/// Invocations per workgroup of the CPU-type kernel.
const CPU_WORKGROUP: u32 = 8;

/// Shape of an attention call.
#[derive(Clone, Copy, Debug)]
pub struct AttentionConfig {
    /// Query tokens in the batch (1 for decode).
    pub n_tokens: usize,
    /// Query heads.
    pub n_heads: usize,
    /// Key/value heads (divides `n_heads`).
    pub n_kv_heads: usize,
    /// Values per head.
    pub head_dim: usize,
    /// Rows of the KV cache.
    pub max_ctx: usize,
    /// Keys visible to a query: the last `window` positions; 0 for all.
    pub window: usize,
    /// Score scale, usually `1 / sqrt(head_dim)`.
    pub scale: f32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n_tokens: u32,
    n_heads: u32,
    n_kv_heads: u32,
    head_dim: u32,
    max_ctx: u32,
    window: u32,
    scale: f32,
    _pad: u32,
}

/// A prepared attention: `out[t, h] = softmax(q[t, h] K^T * scale) V` over the visible keys.
#[derive(Debug, Clone)]
pub struct Attention {
    dispatch: Dispatch,
    /// Scratch for scores, `n_tokens * n_heads * max_ctx` f32 (allocated once).
    pub scores: wgpu::Buffer,
}

impl Attention {
    /// `q`/`out`: `[n_tokens, n_heads, head_dim]`; caches: `[max_ctx, n_kv_heads, head_dim]`;
    /// `pos`: u32 position of the first query token. The workgroup size follows the
    /// adapter's profile.
    pub fn new(
        ctx: &GpuContext,
        cfg: &AttentionConfig,
        pos: &Tensor,
        q: &Tensor,
        k_cache: &Tensor,
        v_cache: &Tensor,
        out: &Tensor,
    ) -> Result<Self> {
        Self::with_profile(ctx, ctx.profile, cfg, pos, q, k_cache, v_cache, out)
    }

    /// [`Attention::new`] with the workgroup size of `profile` (tests run both).
    #[allow(clippy::too_many_arguments)]
    pub fn with_profile(
        ctx: &GpuContext,
        profile: AdapterProfile,
        cfg: &AttentionConfig,
        pos: &Tensor,
        q: &Tensor,
        k_cache: &Tensor,
        v_cache: &Tensor,
        out: &Tensor,
    ) -> Result<Self> {
        let scores = ctx.storage_zeroed("attention scores", scratch_bytes(cfg))?;
        let dispatch = prepare(ctx, profile, cfg, pos, q, (k_cache, v_cache), &scores, out)?;
        Ok(Attention { dispatch, scores })
    }

    /// The dispatch to record.
    pub fn dispatch(&self) -> &Dispatch {
        &self.dispatch
    }
}

/// Bytes of scores scratch an attention of this shape needs: `n_tokens * n_heads * max_ctx`
/// f32.
pub fn scratch_bytes(cfg: &AttentionConfig) -> u64 {
    (cfg.n_tokens * cfg.n_heads * cfg.max_ctx * 4) as u64
}

/// The attention dispatch over a caller-owned `scores` scratch (at least
/// [`scratch_bytes`]). A model shares one scratch across its layers, which run one after
/// another: one [`Attention`] per layer and prefill chunk size would allocate hundreds of MiB
/// at long contexts that are never live at once.
#[allow(clippy::too_many_arguments)]
pub fn prepare(
    ctx: &GpuContext,
    profile: AdapterProfile,
    cfg: &AttentionConfig,
    pos: &Tensor,
    q: &Tensor,
    (k_cache, v_cache): (&Tensor, &Tensor),
    scores: &wgpu::Buffer,
    out: &Tensor,
) -> Result<Dispatch> {
    const OP: &str = "attention";
    if cfg.n_kv_heads == 0 || !cfg.n_heads.is_multiple_of(cfg.n_kv_heads) {
        return Err(GpuError::ShapeMismatch {
            op: OP,
            detail: format!(
                "{} query heads do not group over {} kv heads",
                cfg.n_heads, cfg.n_kv_heads
            ),
        });
    }
    let dt = q.dtype;
    q.expect(OP, "q", cfg.n_tokens * cfg.n_heads * cfg.head_dim, dt)?;
    out.expect(OP, "out", cfg.n_tokens * cfg.n_heads * cfg.head_dim, dt)?;
    let kv = cfg.max_ctx * cfg.n_kv_heads * cfg.head_dim;
    k_cache.expect(OP, "k_cache", kv, dt)?;
    v_cache.expect(OP, "v_cache", kv, dt)?;
    pos.expect(OP, "pos", 1, DType::F32)?;
    if scores.size() < scratch_bytes(cfg) {
        return Err(GpuError::ShapeMismatch {
            op: OP,
            detail: format!(
                "scratch of {} bytes, needs {}",
                scores.size(),
                scratch_bytes(cfg)
            ),
        });
    }
    let p = Params {
        n_tokens: cfg.n_tokens as u32,
        n_heads: cfg.n_heads as u32,
        n_kv_heads: cfg.n_kv_heads as u32,
        head_dim: cfg.head_dim as u32,
        max_ctx: cfg.max_ctx as u32,
        window: cfg.window as u32,
        scale: cfg.scale,
        _pad: 0,
    };
    let mut buffers = vec![
        (1, &pos.buffer),
        (2, &q.buffer),
        (3, &k_cache.buffer),
        (4, &v_cache.buffer),
        (6, &out.buffer),
    ];
    let (shader, defines, grid) =
        if profile == AdapterProfile::Cpu && cfg.head_dim.is_multiple_of(4) {
            // One invocation per (head, token), no barriers, no scores scratch. Workgroups of 8
            // (one SIMD pass on lavapipe) spread a decode's heads over both of its threads.
            let pairs = (cfg.n_heads * cfg.n_tokens) as u32;
            let defines = Defines {
                act: dt,
                workgroup: CPU_WORKGROUP,
                block: (cfg.head_dim / 4) as u32,
                ..Defines::default()
            };
            (
                ShaderId::AttentionCpu,
                defines,
                [pairs.div_ceil(CPU_WORKGROUP), 1, 1],
            )
        } else {
            // A workgroup per (head, token) over the scores scratch. CPU-type adapters run a
            // workgroup's invocations as one loop: a small one keeps the barriers cheap; GPUs
            // want enough invocations to cover the keys.
            buffers.push((5, scores));
            let workgroup = match profile {
                AdapterProfile::Cpu => 8,
                AdapterProfile::Gpu => 64,
            };
            let defines = Defines {
                act: dt,
                workgroup,
                ..Defines::default()
            };
            (
                ShaderId::Attention,
                defines,
                [cfg.n_heads as u32, cfg.n_tokens as u32, 1],
            )
        };
    Ok(ctx.prepare(shader, "main", defines, &p, &buffers, grid))
}
