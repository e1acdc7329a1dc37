//! RMSNorm over rows: `y[r] = x[r] / rms(x[r]) * w` (llama, qwen2, gemma: GGUF stores
//! gemma's `1 + w` already folded).

use crate::error::{GpuError, Result};
use crate::gpu::context::{AdapterProfile, GpuContext};
use crate::gpu::defines::Defines;
use crate::kernels::dispatch::Dispatch;
use crate::kernels::source::ShaderId;
use crate::kernels::tensor::Tensor;

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    dim: u32,
    eps: f32,
    _pad: u32,
}

/// A prepared RMSNorm of `rows` rows of `dim` values.
#[derive(Debug, Clone)]
pub struct RmsNorm {
    dispatch: Dispatch,
}

impl RmsNorm {
    /// `x` and `y` hold `rows * dim` values of one dtype; `w` holds `dim` f32 values.
    /// The kernel shape follows the adapter's profile.
    pub fn new(
        ctx: &GpuContext,
        x: &Tensor,
        w: &Tensor,
        y: &Tensor,
        rows: usize,
        dim: usize,
        eps: f32,
    ) -> Result<Self> {
        Self::with_profile(ctx, ctx.profile, x, w, y, rows, dim, eps)
    }

    /// [`RmsNorm::new`] with the kernel shape of `profile` (tests run both on one adapter).
    #[allow(clippy::too_many_arguments)]
    pub fn with_profile(
        ctx: &GpuContext,
        profile: AdapterProfile,
        x: &Tensor,
        w: &Tensor,
        y: &Tensor,
        rows: usize,
        dim: usize,
        eps: f32,
    ) -> Result<Self> {
        const OP: &str = "rms_norm";
        x.expect(OP, "x", rows * dim, x.dtype)?;
        y.expect(OP, "y", rows * dim, x.dtype)?;
        w.expect(OP, "w", dim, crate::gpu::DType::F32)?;
        if dim == 0 || rows == 0 {
            return Err(GpuError::ShapeMismatch {
                op: OP,
                detail: format!("empty shape {rows}x{dim}"),
            });
        }
        let params = Params {
            rows: rows as u32,
            dim: dim as u32,
            eps,
            _pad: 0,
        };
        let (entry, workgroup, groups) = match profile {
            AdapterProfile::Cpu => ("main_cpu", 16, (rows as u32).div_ceil(16)),
            AdapterProfile::Gpu => ("main_gpu", 128, rows as u32),
        };
        let defines = Defines {
            act: x.dtype,
            workgroup,
            ..Defines::default()
        };
        let dispatch = ctx.prepare(
            ShaderId::RmsNorm,
            entry,
            defines,
            &params,
            &[(1, &x.buffer), (2, &w.buffer), (3, &y.buffer)],
            ctx.grid(groups),
        );
        Ok(RmsNorm { dispatch })
    }

    /// The dispatch to record.
    pub fn dispatch(&self) -> &Dispatch {
        &self.dispatch
    }
}
