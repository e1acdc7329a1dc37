//! RoPE and the KV append as one dispatch over the fused QKV matvec's output (`rope_kv.wgsl`):
//! q, k and v of each token arrive in one row, the query heads are rotated into the attention
//! input, the key heads rotated straight into the cache and the value heads copied there.
//! Qwen2's q/k/v biases and Gemma 3's per-head q/k norms are applied on the way, so a layer's
//! attention input costs one dispatch after the QKV matvec instead of up to eight (three bias
//! adds, two head norms, two rotations, two appends).

use crate::error::{GpuError, Result};
use crate::gpu::context::GpuContext;
use crate::gpu::defines::{DType, Defines};
use crate::kernels::dispatch::Dispatch;
use crate::kernels::kv::{KvSlab, KvStore};
use crate::kernels::rope::RopeLayout;
use crate::kernels::source::ShaderId;
use crate::kernels::tensor::Tensor;

const WORKGROUP: u32 = 64;
/// `aux` offsets of what a model lacks.
const NONE: u32 = u32::MAX;

/// Shape of a fused RoPE + KV append.
#[derive(Clone, Copy, Debug)]
pub struct RopeKvConfig {
    /// Tokens in the step.
    pub n_tokens: usize,
    /// Query heads.
    pub n_heads: usize,
    /// Key and value heads.
    pub n_kv_heads: usize,
    /// Values per head (a multiple of 8).
    pub head_dim: usize,
    /// Rotated values per head (<= head_dim, even).
    pub rope_dim: usize,
    /// Rotation layout.
    pub layout: RopeLayout,
    /// Base of the frequencies.
    pub freq_base: f32,
    /// Linear position scale (1 for none).
    pub freq_scale: f32,
    /// Positions per sequence in the cache (rows at or past it are dropped).
    pub max_ctx: usize,
    /// The head norms' epsilon.
    pub eps: f32,
}

impl RopeKvConfig {
    /// Values per token in the QKV row.
    pub fn width(&self) -> usize {
        (self.n_heads + 2 * self.n_kv_heads) * self.head_dim
    }
}

/// What a model adds to its heads before the rotation (Qwen2's q/k/v biases, Gemma 3's
/// q/k head norms), packed once at load into one f32 tensor: the kernel's storage bindings
/// are at WebGPU's default limit of 8 with buffer caches.
#[derive(Debug)]
pub struct HeadExtras {
    tensor: Tensor,
    /// (offset, length) of the biases of a whole QKV row.
    biases: Option<(u32, usize)>,
    /// Offsets of q's and k's norm weights, and their length (`head_dim`).
    norms: Option<(u32, u32, usize)>,
}

impl HeadExtras {
    /// Packs `biases` (one per value of a QKV row) and `norms` (q's and k's head-norm
    /// weights); `None` when the model has neither.
    pub fn pack(
        ctx: &GpuContext,
        label: &str,
        biases: Option<&[f32]>,
        norms: Option<(&[f32], &[f32])>,
    ) -> Result<Option<Self>> {
        let mut all = Vec::new();
        let mut put = |v: &[f32]| {
            let at = all.len() as u32;
            all.extend_from_slice(v);
            at
        };
        let biases = biases.map(|b| (put(b), b.len()));
        let norms = match norms {
            Some((q, k)) if q.len() == k.len() => Some((put(q), put(k), q.len())),
            Some((q, k)) => {
                return Err(GpuError::ShapeMismatch {
                    op: "rope_kv",
                    detail: format!("q norm of {} values, k norm of {}", q.len(), k.len()),
                });
            }
            None => None,
        };
        if all.is_empty() {
            return Ok(None);
        }
        Ok(Some(Self {
            tensor: Tensor::from_f32(ctx, label, &all, DType::F32)?,
            biases,
            norms,
        }))
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n_tokens: u32,
    n_heads: u32,
    n_kv_heads: u32,
    head_dim: u32,
    rope_dim: u32,
    mode: u32,
    freq_base: f32,
    freq_scale: f32,
    max_ctx: u32,
    has_factors: u32,
    eps: f32,
    bias_at: u32,
    qnorm_at: u32,
    knorm_at: u32,
    _pad: [u32; 2],
}

/// A prepared RoPE + KV append: `q_out[t] = rope(q[t])`, `k_cache[row(t)] = rope(k[t])`,
/// `v_cache[row(t)] = v[t]`, rows from the `pos` pairs (see [`crate::kernels::positions()`]).
#[derive(Debug, Clone)]
pub struct RopeKv {
    dispatch: Dispatch,
}

impl RopeKv {
    /// `qkv`: `[n_tokens, width]`; `q_out`: `[n_tokens, n_heads * head_dim]`; the caches hold
    /// `n_kv_heads * head_dim` values per row; `factors`: Llama 3.x frequency factors
    /// (`rope_dim / 2`).
    #[allow(clippy::too_many_arguments)] // Each binding is its own tensor.
    pub fn new(
        ctx: &GpuContext,
        cfg: &RopeKvConfig,
        pos: &Tensor,
        qkv: &Tensor,
        q_out: &Tensor,
        (k_cache, v_cache): (&KvSlab, &KvSlab),
        factors: Option<&Tensor>,
        extras: Option<&HeadExtras>,
    ) -> Result<Self> {
        const OP: &str = "rope_kv";
        let shape = |detail: String| GpuError::ShapeMismatch { op: OP, detail };
        let hd = cfg.head_dim;
        if hd == 0 || !hd.is_multiple_of(8) {
            return Err(shape(format!("head_dim {hd} is not a multiple of 8")));
        }
        if cfg.rope_dim == 0 || !cfg.rope_dim.is_multiple_of(2) || cfg.rope_dim > hd {
            return Err(shape(format!(
                "rope_dim {} must be even, non-zero and <= head_dim {hd}",
                cfg.rope_dim
            )));
        }
        let dt = qkv.dtype;
        qkv.expect(OP, "qkv", cfg.n_tokens * cfg.width(), dt)?;
        q_out.expect(OP, "q_out", cfg.n_tokens * cfg.n_heads * hd, dt)?;
        pos.expect(OP, "pos", 2 * cfg.n_tokens, DType::F32)?;
        if let Some(f) = factors {
            f.expect(OP, "factors", cfg.rope_dim / 2, DType::F32)?;
        }
        let store = k_cache.store();
        let kv_dim = cfg.n_kv_heads * hd;
        for (name, slab) in [("k_cache", k_cache), ("v_cache", v_cache)] {
            match slab {
                KvSlab::Buffer(t) => t.expect(OP, name, cfg.max_ctx * kv_dim, dt)?,
                KvSlab::Texture { texture, .. } => {
                    if texture.width() as usize * store.texel_values() != kv_dim
                        || (texture.height() as usize) < cfg.max_ctx
                    {
                        return Err(shape(format!(
                            "{name}: a {}x{} texture cannot hold {} rows of {kv_dim}",
                            texture.width(),
                            texture.height(),
                            cfg.max_ctx
                        )));
                    }
                }
            }
        }
        if v_cache.store() != store {
            return Err(shape("k and v caches in different stores".into()));
        }
        let (mut bias_at, mut qnorm_at, mut knorm_at) = (NONE, NONE, NONE);
        if let Some(x) = extras {
            if let Some((at, len)) = x.biases {
                if len != cfg.width() {
                    return Err(shape(format!("{len} biases for rows of {}", cfg.width())));
                }
                bias_at = at;
            }
            if let Some((q, k, len)) = x.norms {
                if len != hd {
                    return Err(shape(format!("head norms of {len} values, heads of {hd}")));
                }
                (qnorm_at, knorm_at) = (q, k);
            }
        }
        let p = Params {
            n_tokens: cfg.n_tokens as u32,
            n_heads: cfg.n_heads as u32,
            n_kv_heads: cfg.n_kv_heads as u32,
            head_dim: hd as u32,
            rope_dim: cfg.rope_dim as u32,
            mode: match cfg.layout {
                RopeLayout::Normal => 0,
                RopeLayout::Neox => 1,
            },
            freq_base: cfg.freq_base,
            freq_scale: cfg.freq_scale,
            max_ctx: cfg.max_ctx as u32,
            has_factors: u32::from(factors.is_some()),
            eps: cfg.eps,
            bias_at,
            qnorm_at,
            knorm_at,
            _pad: [0; 2],
        };
        let defines = Defines {
            act: dt,
            workgroup: WORKGROUP,
            ..Defines::default()
        };
        let pipeline = ctx.pipeline(ShaderId::RopeKv(store), "main", defines);
        let params = ctx.uniform("rope_kv params", &p);
        // Unused bindings (no factors, no extras) get `pos` as a stand-in: the kernel never
        // reads them.
        let entries = vec![
            (0, params.as_entire_binding()),
            (1, pos.buffer.as_entire_binding()),
            (2, qkv.buffer.as_entire_binding()),
            (3, q_out.buffer.as_entire_binding()),
            (4, factors.unwrap_or(pos).buffer.as_entire_binding()),
            (
                5,
                extras.map_or(pos, |x| &x.tensor).buffer.as_entire_binding(),
            ),
            (6, k_cache.resource()),
            (7, v_cache.resource()),
        ];
        let invocations = (cfg.n_tokens * (cfg.n_heads + 2 * cfg.n_kv_heads) * hd / 8) as u32;
        Ok(RopeKv {
            dispatch: Dispatch {
                bind_group: ctx.bind_resources(&pipeline, entries),
                pipeline,
                workgroups: ctx.grid(invocations.div_ceil(WORKGROUP)),
                label: "rope_kv",
            },
        })
    }

    /// The dispatch to record.
    pub fn dispatch(&self) -> &Dispatch {
        &self.dispatch
    }
}

impl KvStore {
    /// The rope_kv shader writing this store.
    pub(crate) fn rope_kv_file(self) -> &'static str {
        match self {
            KvStore::Buffer => "rope_kv_buffer",
            KvStore::Texture => "rope_kv_texture",
            KvStore::TextureF16 => "rope_kv_texture_f16",
        }
    }
}
