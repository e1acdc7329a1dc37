//! Appends new K or V rows to a static cache (buffer or texture, see [`KvSlab`]) at the
//! position held in a buffer, so a decode step recorded once keeps working as the position
//! advances.

use crate::error::{GpuError, Result};
use crate::gpu::context::GpuContext;
use crate::gpu::defines::{DType, Defines};
use crate::kernels::dispatch::Dispatch;
use crate::kernels::kv::{KvSlab, KvStore};
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

/// `cache[pos[2t + 1] + pos[2t], :] = src[t, :]` for `t < n_tokens` (a base row plus a
/// position below `max_ctx` per token: see [`crate::kernels::positions()`]).
#[derive(Debug, Clone)]
pub struct KvAppend {
    dispatch: Dispatch,
}

impl KvAppend {
    /// `cache` holds at least `max_ctx * kv_dim` values (a sequence's rows; the caller keeps
    /// every base plus `max_ctx` inside the cache), `src` holds `n_tokens * kv_dim`, same
    /// dtype (f32 for an f32 texture cache; an f16 texture takes either and rounds).
    pub fn new(
        ctx: &GpuContext,
        pos: &Tensor,
        src: &Tensor,
        cache: &KvSlab,
        n_tokens: usize,
        kv_dim: usize,
        max_ctx: usize,
    ) -> Result<Self> {
        const OP: &str = "kv_append";
        src.expect(OP, "src", n_tokens * kv_dim, src.dtype)?;
        pos.expect(OP, "pos", 2 * n_tokens, DType::F32)?;
        let p = Params {
            n_tokens: n_tokens as u32,
            kv_dim: kv_dim as u32,
            max_ctx: max_ctx as u32,
            _pad: 0,
        };
        let cache = match cache {
            KvSlab::Buffer(t) => t,
            KvSlab::Texture { texture, view } => {
                let store = cache.store();
                let per = store.texel_values();
                if store == KvStore::Texture {
                    src.expect(OP, "src", n_tokens * kv_dim, DType::F32)?;
                }
                if !kv_dim.is_multiple_of(per)
                    || texture.width() as usize * per != kv_dim
                    || (texture.height() as usize) < max_ctx
                {
                    return Err(GpuError::ShapeMismatch {
                        op: OP,
                        detail: format!(
                            "a {}x{} texture cannot hold {max_ctx} rows of {kv_dim}",
                            texture.width(),
                            texture.height()
                        ),
                    });
                }
                let defines = Defines {
                    act: src.dtype,
                    workgroup: WORKGROUP,
                    ..Defines::default()
                };
                let shader = if store == KvStore::TextureF16 {
                    ShaderId::KvAppendTextureF16
                } else {
                    ShaderId::KvAppendTexture
                };
                let pipeline = ctx.pipeline(shader, "main", defines);
                let params = ctx.uniform("kv_append params", &p);
                let n = (n_tokens * kv_dim / per) as u32;
                return Ok(KvAppend {
                    dispatch: Dispatch {
                        bind_group: ctx.bind_resources(
                            &pipeline,
                            vec![
                                (0, params.as_entire_binding()),
                                (1, pos.buffer.as_entire_binding()),
                                (2, src.buffer.as_entire_binding()),
                                (3, wgpu::BindingResource::TextureView(view)),
                            ],
                        ),
                        pipeline,
                        workgroups: ctx.grid(n.div_ceil(WORKGROUP)),
                        label: "kv_append",
                    },
                });
            }
        };
        cache.expect(OP, "cache", max_ctx * kv_dim, src.dtype)?;
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
