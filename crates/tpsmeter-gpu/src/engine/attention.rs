//! Attention dispatches that share one scores scratch buffer.
//!
//! [`crate::kernels::Attention`] allocates a scratch row per (token, head, context position)
//! for every instance; a model prepares one instance per layer and per prefill chunk size,
//! so at 8192 positions that would be hundreds of MiB of scratch that is never live at the
//! same time. The layers run one after another, so they can share one buffer: this prepares
//! the same kernel with a caller-owned scratch.

use crate::error::{GpuError, Result};
use crate::gpu::context::{AdapterProfile, GpuContext};
use crate::gpu::defines::{DType, Defines};
use crate::kernels::attention::AttentionConfig;
use crate::kernels::dispatch::Dispatch;
use crate::kernels::source::ShaderId;
use crate::kernels::tensor::Tensor;

/// Must match `Params` of `attention.wgsl` (and of `kernels::attention`).
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

/// Bytes of scratch an attention of this shape needs.
pub fn scratch_bytes(cfg: &AttentionConfig) -> u64 {
    (cfg.n_tokens * cfg.n_heads * cfg.max_ctx * 4) as u64
}

/// The attention dispatch of one layer, with `scores` (at least [`scratch_bytes`]) shared.
pub fn prepare(
    ctx: &GpuContext,
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
                "{} query heads over {} kv heads",
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
    // Same shapes as kernels::attention: small workgroups on CPU-type adapters keep the
    // barriers cheap.
    let workgroup = match ctx.profile {
        AdapterProfile::Cpu => 8,
        AdapterProfile::Gpu => 64,
    };
    let defines = Defines {
        act: dt,
        workgroup,
        ..Defines::default()
    };
    Ok(ctx.prepare(
        ShaderId::Attention,
        "main",
        defines,
        &p,
        &[
            (1, &pos.buffer),
            (2, &q.buffer),
            (3, &k_cache.buffer),
            (4, &v_cache.buffer),
            (5, scores),
            (6, &out.buffer),
        ],
        [cfg.n_heads as u32, cfg.n_tokens as u32, 1],
    ))
}
