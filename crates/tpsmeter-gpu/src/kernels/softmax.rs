//! Row softmax in place (f32).

use crate::error::Result;
use crate::gpu::context::{AdapterProfile, GpuContext};
use crate::gpu::defines::{DType, Defines};
use crate::kernels::dispatch::Dispatch;
use crate::kernels::source::ShaderId;
use crate::kernels::tensor::Tensor;

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    rows: u32,
    n: u32,
    _pad: [u32; 2],
}

/// `x[r] = softmax(x[r])` for `rows` rows of `n` values.
#[derive(Debug, Clone)]
pub struct Softmax {
    dispatch: Dispatch,
}

impl Softmax {
    /// Prepares the softmax; `x` holds `rows * n` f32 values. The kernel shape follows the
    /// adapter's profile.
    pub fn new(ctx: &GpuContext, x: &Tensor, rows: usize, n: usize) -> Result<Self> {
        Self::with_profile(ctx, ctx.profile, x, rows, n)
    }

    /// [`Softmax::new`] with the kernel shape of `profile` (tests run both on one adapter).
    pub fn with_profile(
        ctx: &GpuContext,
        profile: AdapterProfile,
        x: &Tensor,
        rows: usize,
        n: usize,
    ) -> Result<Self> {
        x.expect("softmax", "x", rows * n, DType::F32)?;
        let p = Params {
            rows: rows as u32,
            n: n as u32,
            _pad: [0; 2],
        };
        let (entry, workgroup, groups) = match profile {
            AdapterProfile::Cpu => ("main_cpu", 16, (rows as u32).div_ceil(16)),
            AdapterProfile::Gpu => ("main_gpu", 128, rows as u32),
        };
        let defines = Defines {
            workgroup,
            ..Defines::default()
        };
        Ok(Softmax {
            dispatch: ctx.prepare(
                ShaderId::Softmax,
                entry,
                defines,
                &p,
                &[(1, &x.buffer)],
                ctx.grid(groups),
            ),
        })
    }

    /// The dispatch to record.
    pub fn dispatch(&self) -> &Dispatch {
        &self.dispatch
    }
}
