//! Rotary position embedding in place, both rotation layouts, position read from a buffer,
//! optional per-pair frequency factors (Llama 3.x).

use crate::error::{GpuError, Result};
use crate::gpu::context::GpuContext;
use crate::gpu::defines::Defines;
use crate::kernels::dispatch::Dispatch;
use crate::kernels::source::ShaderId;
use crate::kernels::tensor::Tensor;

const WORKGROUP: u32 = 64;

/// Which elements rotate together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RopeLayout {
    /// Adjacent pairs (2i, 2i+1): llama-family GGUFs (their Q/K rows are permuted at
    /// conversion to match).
    Normal,
    /// Half split (i, i + d/2): qwen2, gemma ("NEOX" in ggml).
    Neox,
}

/// Shape and frequencies of a RoPE application.
#[derive(Clone, Copy, Debug)]
pub struct RopeConfig {
    /// Tokens in the batch.
    pub n_tokens: usize,
    /// Heads per token.
    pub n_heads: usize,
    /// Values per head.
    pub head_dim: usize,
    /// Rotated values per head (<= head_dim, even).
    pub rope_dim: usize,
    /// Rotation layout.
    pub layout: RopeLayout,
    /// Base of the frequencies (10000, 100000, 1000000...).
    pub freq_base: f32,
    /// Linear position scale (1 for none).
    pub freq_scale: f32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n_tokens: u32,
    n_heads: u32,
    head_dim: u32,
    rope_dim: u32,
    mode: u32,
    freq_base: f32,
    freq_scale: f32,
    has_factors: u32,
}

/// A prepared in-place RoPE on `x` (`[n_tokens, n_heads, head_dim]`); token `t` is at
/// position `pos[2t]` (see [`crate::kernels::positions()`]).
#[derive(Debug, Clone)]
pub struct Rope {
    dispatch: Dispatch,
}

impl Rope {
    /// Checks shapes and prepares the dispatch. `pos` is a u32 tensor of (position, base)
    /// pairs, one per token.
    pub fn new(ctx: &GpuContext, cfg: &RopeConfig, pos: &Tensor, x: &Tensor) -> Result<Self> {
        Self::with_factors(ctx, cfg, pos, x, None)
    }

    /// [`Rope::new`] with Llama 3.x frequency factors (`rope_dim / 2` f32 values): the angle
    /// of pair `i` is divided by `factors[i]`.
    pub fn with_factors(
        ctx: &GpuContext,
        cfg: &RopeConfig,
        pos: &Tensor,
        x: &Tensor,
        factors: Option<&Tensor>,
    ) -> Result<Self> {
        const OP: &str = "rope";
        if cfg.rope_dim == 0 || !cfg.rope_dim.is_multiple_of(2) || cfg.rope_dim > cfg.head_dim {
            return Err(GpuError::ShapeMismatch {
                op: OP,
                detail: format!(
                    "rope_dim {} must be even, non-zero and <= head_dim {}",
                    cfg.rope_dim, cfg.head_dim
                ),
            });
        }
        x.expect(OP, "x", cfg.n_tokens * cfg.n_heads * cfg.head_dim, x.dtype)?;
        pos.expect(OP, "pos", 2 * cfg.n_tokens, crate::gpu::DType::F32)?;
        if let Some(f) = factors {
            f.expect(OP, "factors", cfg.rope_dim / 2, crate::gpu::DType::F32)?;
        }
        let p = Params {
            n_tokens: cfg.n_tokens as u32,
            n_heads: cfg.n_heads as u32,
            head_dim: cfg.head_dim as u32,
            rope_dim: cfg.rope_dim as u32,
            mode: match cfg.layout {
                RopeLayout::Normal => 0,
                RopeLayout::Neox => 1,
            },
            freq_base: cfg.freq_base,
            freq_scale: cfg.freq_scale,
            has_factors: u32::from(factors.is_some()),
        };
        let pairs = (cfg.n_tokens * cfg.n_heads * cfg.rope_dim / 2) as u32;
        let defines = Defines {
            act: x.dtype,
            workgroup: WORKGROUP,
            ..Defines::default()
        };
        Ok(Rope {
            dispatch: ctx.prepare(
                ShaderId::Rope,
                "main",
                defines,
                &p,
                // Without factors the kernel never reads binding 3; `pos` stands in for it.
                &[
                    (1, &pos.buffer),
                    (2, &x.buffer),
                    (3, &factors.unwrap_or(pos).buffer),
                ],
                ctx.grid(pairs.div_ceil(WORKGROUP)),
            ),
        })
    }

    /// The dispatch to record.
    pub fn dispatch(&self) -> &Dispatch {
        &self.dispatch
    }
}
