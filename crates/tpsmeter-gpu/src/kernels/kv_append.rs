//! Appends new K or V rows to a static cache at the position held in a buffer, so a decode
//! step recorded once keeps working as the position advances.

use crate::error::Result;
use crate::gpu::context::GpuContext;
use crate::gpu::defines::Defines;
use crate::kernels::dispatch::Dispatch;
use crate::kernels::source::ShaderId;
use crate::kernels::tensor::Tensor;

const PER_INVOCATION: u32 = 4;
const WORKGROUP: u32 = 64;

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n_tokens: u32,
    kv_dim: u32,
    max_ctx: u32,
    _pad: u32,
}

/// `cache[pos[0] + t, :] = src[t, :]` for `t < n_tokens`.
#[derive(Debug, Clone)]
pub struct KvAppend {
    dispatch: Dispatch,
}

impl KvAppend {
    /// `cache` holds `max_ctx * kv_dim` values, `src` holds `n_tokens * kv_dim`, same dtype.
    pub fn new(
        ctx: &GpuContext,
        pos: &Tensor,
        src: &Tensor,
        cache: &Tensor,
        n_tokens: usize,
        kv_dim: usize,
        max_ctx: usize,
    ) -> Result<Self> {
        const OP: &str = "kv_append";
        src.expect(OP, "src", n_tokens * kv_dim, src.dtype)?;
        cache.expect(OP, "cache", max_ctx * kv_dim, src.dtype)?;
        let p = Params {
            n_tokens: n_tokens as u32,
            kv_dim: kv_dim as u32,
            max_ctx: max_ctx as u32,
            _pad: 0,
        };
        let defines = Defines {
            act: src.dtype,
            workgroup: WORKGROUP,
            rows: PER_INVOCATION,
            ..Defines::default()
        };
        let n = (n_tokens * kv_dim) as u32;
        Ok(KvAppend {
            dispatch: ctx.prepare(
                ShaderId::KvAppend,
                "main",
                defines,
                &p,
                &[(1, &pos.buffer), (2, &src.buffer), (3, &cache.buffer)],
                ctx.grid(n.div_ceil(PER_INVOCATION * WORKGROUP)),
            ),
        })
    }

    /// The dispatch to record.
    pub fn dispatch(&self) -> &Dispatch {
        &self.dispatch
    }
}
