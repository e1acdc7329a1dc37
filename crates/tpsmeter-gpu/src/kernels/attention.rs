//! Grouped-query attention over a static KV cache: decode (one query token) and causal
//! prefill (several), with an optional sliding window (gemma's local layers).
//!
//! GPUs split the keys into chunks of [`GPU_CHUNK`], a workgroup per (head, token, chunk),
//! and combine the chunks' softmax states in a second dispatch (`attention_split.wgsl`), for
//! decode and prefill alike; caches of at most one chunk, and heads whose size the split
//! kernel cannot take, get a workgroup per (head, token) with tree reductions over a scores
//! scratch (`attention.wgsl`), whose invocations walk the keys one after another (on an H200
//! ~0.5 us per key: 1 ms per layer at context 2048). CPU-type adapters get one invocation
//! per (head, token) with an online softmax and no barriers (`attention_cpu.wgsl`). There, decode over more than
//! [`SPLIT_CHUNK`] cached positions is split along the keys (flash-decoding): one invocation
//! per (kv head, chunk of keys) writes the softmax state of each query head of its group to
//! the scratch, and a second dispatch combines the chunks per head. One invocation per head
//! left most of the machine idle: on SmolLM2 (9 heads) that is 9 SIMD lanes, one core of two.
//! One per (query head, chunk) fetched each key and value once per head of the group, and
//! those fetches are most of a long decode's time on lavapipe.

use crate::error::{GpuError, Result};
use crate::gpu::context::{AdapterProfile, GpuContext};
use crate::gpu::defines::{DType, Defines};
use crate::kernels::dispatch::Dispatch;
use crate::kernels::kv::{KvSlab, KvStore};
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
    /// Decode: every query token is the next token of its own sequence (one, or a batch of
    /// sequences each in its own cache rows). The CPU-type kernel then splits caches longer
    /// than [`SPLIT_CHUNK`] along the keys; a prefill chunk's tokens (one sequence) already
    /// give it enough invocations.
    pub decode: bool,
    /// CPU-type kernel, split decode: one invocation per (kv head, chunk) for the whole GQA
    /// group (`split_group`), which fetches each key and value once for the group, instead
    /// of one per (query head, chunk). Faster where texel fetches are vector gathers
    /// (lavapipe: attention at context 2048 24-26 → 13-15 ms per token); slower on
    /// SwiftShader (132 → 144 ms), whose fetches cost less than the private-array traffic
    /// the grouped kernel adds. [`GpuContext::fetches_are_gathers`] says which.
    pub split_by_group: bool,
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
    chunk: u32,
}

/// A prepared attention: `out[t, h] = softmax(q[t, h] K^T * scale) V` over the visible keys.
#[derive(Debug, Clone)]
pub struct Attention {
    dispatches: Vec<Dispatch>,
    /// Scratch for scores, `n_tokens * n_heads * max_ctx` f32 (allocated once).
    pub scores: wgpu::Buffer,
}

impl Attention {
    /// `q`/`out`: `[n_tokens, n_heads, head_dim]`; caches: `[max_ctx, n_kv_heads, head_dim]`;
    /// `pos`: per query token a u32 (position, cache row base) pair (see
    /// [`crate::kernels::positions()`]). The workgroup size follows the adapter's profile.
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
        let (k, v) = (
            KvSlab::Buffer(k_cache.clone()),
            KvSlab::Buffer(v_cache.clone()),
        );
        let dispatches = prepare(ctx, profile, cfg, pos, q, (&k, &v), &scores, out)?;
        Ok(Attention { dispatches, scores })
    }

    /// The dispatches to record, in order (two for a split decode).
    pub fn dispatches(&self) -> &[Dispatch] {
        &self.dispatches
    }
}

/// Keys per chunk of the split decode kernel. Large enough that a chunk's state
/// (`head_dim + 4` floats) is small against its keys; small enough that a 512-key context
/// already spreads over several invocations per head.
pub const SPLIT_CHUNK: usize = 128;

/// Keys per chunk of the GPU split kernel (`attention_split.wgsl`): its workgroup size, one
/// key per invocation for the scores. 64 keys make 32 chunks per head at context 2048, 288
/// workgroups for SmolLM2's 9 heads, enough to occupy a large GPU.
pub const GPU_CHUNK: usize = 64;

/// Bytes of scratch an attention call needs: the GPU kernel's scores (`n_tokens * n_heads *
/// max_ctx` f32) or the split kernels' per-chunk states, whichever is larger.
pub fn scratch_bytes(cfg: &AttentionConfig) -> u64 {
    let scores = cfg.n_tokens * cfg.n_heads * cfg.max_ctx;
    let chunk = SPLIT_CHUNK.min(GPU_CHUNK);
    let chunks = cfg.n_tokens * cfg.n_heads * cfg.max_ctx.div_ceil(chunk) * (cfg.head_dim + 4);
    (scores.max(chunks) * 4) as u64
}

/// Whether the GPU kernel splits along the keys: a cache longer than one chunk, and a head
/// of whole vec4s that divide the workgroup (4 to 256 values in powers of two).
pub fn gpu_splits(profile: AdapterProfile, head_dim: usize, max_ctx: usize) -> bool {
    let hd4 = head_dim / 4;
    profile == AdapterProfile::Gpu
        && head_dim.is_multiple_of(4)
        && hd4 > 0
        && GPU_CHUNK.is_multiple_of(hd4)
        && max_ctx > GPU_CHUNK
}

/// Whether `profile` runs the CPU-type kernel for heads of `head_dim`: it reads a head 8
/// values (two vec4s, one f16 texel) at a time.
fn uses_cpu_kernel(profile: AdapterProfile, head_dim: usize) -> bool {
    profile == AdapterProfile::Cpu && head_dim.is_multiple_of(8)
}

/// Whether a decode over a cache of `max_ctx` positions splits into chunks and a combine
/// (two dispatches) on `profile`; otherwise attention is one dispatch.
pub fn splits_decode(profile: AdapterProfile, head_dim: usize, max_ctx: usize) -> bool {
    uses_cpu_kernel(profile, head_dim) && max_ctx > SPLIT_CHUNK
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
    (k_cache, v_cache): (&KvSlab, &KvSlab),
    scores: &wgpu::Buffer,
    out: &Tensor,
) -> Result<Vec<Dispatch>> {
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
    for (name, slab) in [("k_cache", k_cache), ("v_cache", v_cache)] {
        match slab {
            KvSlab::Buffer(t) => t.expect(OP, name, kv, dt)?,
            KvSlab::Texture { texture, .. } => {
                let rows = cfg.n_kv_heads * cfg.head_dim / slab.store().texel_values();
                if texture.width() as usize != rows || (texture.height() as usize) < cfg.max_ctx {
                    return Err(GpuError::ShapeMismatch {
                        op: OP,
                        detail: format!(
                            "{name} texture {}x{} cannot hold {} rows of {rows} texels",
                            texture.width(),
                            texture.height(),
                            cfg.max_ctx
                        ),
                    });
                }
            }
        }
    }
    let cpu = uses_cpu_kernel(profile, cfg.head_dim);
    let store = k_cache.store();
    if store != v_cache.store()
        || (store.is_texture() && !cpu)
        || (store == KvStore::Texture && dt != DType::F32)
    {
        return Err(GpuError::ShapeMismatch {
            op: OP,
            detail: "a texture KV cache needs the CPU-type kernel (heads a multiple of 8 wide), \
                     f32 activations for an f32 texture, and both slabs alike"
                .into(),
        });
    }
    pos.expect(OP, "pos", 2 * cfg.n_tokens, DType::F32)?;
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
        chunk: SPLIT_CHUNK as u32,
    };
    if !cpu && gpu_splits(profile, cfg.head_dim, cfg.max_ctx) {
        return gpu_split(ctx, cfg, p, pos, q, (k_cache, v_cache), scores, out);
    }
    let mut entries = vec![
        (1, pos.buffer.as_entire_binding()),
        (2, q.buffer.as_entire_binding()),
        (3, k_cache.resource()),
        (4, v_cache.resource()),
        (6, out.buffer.as_entire_binding()),
    ];
    let (shader, defines, grid) = if cpu {
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
            ShaderId::AttentionCpu(store),
            defines,
            [pairs.div_ceil(CPU_WORKGROUP), 1, 1],
        )
    } else {
        // A workgroup per (head, token) over the scores scratch. CPU-type adapters run a
        // workgroup's invocations as one loop: a small one keeps the barriers cheap; GPUs
        // want enough invocations to cover the keys.
        entries.push((5, scores.as_entire_binding()));
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
    let params = ctx.uniform("attention params", &p);
    entries.push((0, params.as_entire_binding()));
    if cfg.decode && splits_decode(profile, cfg.head_dim, cfg.max_ctx) {
        // Split decode: `split` reads q, the cache and writes the chunk states; `combine`
        // reads them and writes out (each pipeline's layout has only the bindings it uses).
        // GQA: one invocation per (kv head, chunk) for the group's query heads
        // (`split_group`, ROWS = heads per group, TOK = keys per chunk), which fetches each
        // key and value once for the group.
        let group = cfg.n_heads / cfg.n_kv_heads;
        let (split, invocations) = if group > 1 && cfg.split_by_group {
            let d = Defines {
                rows: group as u32,
                tokens: SPLIT_CHUNK as u32,
                ..defines
            };
            (
                ctx.pipeline(shader, "split_group", d),
                (cfg.n_tokens * cfg.n_kv_heads * cfg.max_ctx.div_ceil(SPLIT_CHUNK)) as u32,
            )
        } else {
            (
                ctx.pipeline(shader, "split", defines),
                (cfg.n_tokens * cfg.n_heads * cfg.max_ctx.div_ceil(SPLIT_CHUNK)) as u32,
            )
        };
        let combine = ctx.pipeline(shader, "combine", defines);
        let mut split_entries: Vec<_> = entries.iter().filter(|(b, _)| *b != 6).cloned().collect();
        split_entries.push((5, scores.as_entire_binding()));
        let combine_entries = vec![
            (0, params.as_entire_binding()),
            (1, pos.buffer.as_entire_binding()),
            (5, scores.as_entire_binding()),
            (6, out.buffer.as_entire_binding()),
        ];
        return Ok(vec![
            Dispatch {
                bind_group: ctx.bind_resources(&split, split_entries),
                pipeline: split,
                workgroups: ctx.grid(invocations.div_ceil(CPU_WORKGROUP)),
                label: "attention_split",
            },
            Dispatch {
                bind_group: ctx.bind_resources(&combine, combine_entries),
                pipeline: combine,
                workgroups: [
                    ((cfg.n_heads * cfg.n_tokens) as u32).div_ceil(CPU_WORKGROUP),
                    1,
                    1,
                ],
                label: "attention_combine",
            },
        ]);
    }
    let pipeline = ctx.pipeline(shader, "main", defines);
    Ok(vec![Dispatch {
        bind_group: ctx.bind_resources(&pipeline, entries),
        pipeline,
        workgroups: grid,
        label: shader.name(),
    }])
}

/// The GPU split: `split` over a (head, chunk, token) grid writes each chunk's softmax state
/// to `scores`, `combine` over (head, token) merges them into `out`.
#[allow(clippy::too_many_arguments)]
fn gpu_split(
    ctx: &GpuContext,
    cfg: &AttentionConfig,
    mut p: Params,
    pos: &Tensor,
    q: &Tensor,
    (k_cache, v_cache): (&KvSlab, &KvSlab),
    scores: &wgpu::Buffer,
    out: &Tensor,
) -> Result<Vec<Dispatch>> {
    p.chunk = GPU_CHUNK as u32;
    let params = ctx.uniform("attention params", &p);
    let defines = Defines {
        act: q.dtype,
        workgroup: GPU_CHUNK as u32,
        block: (cfg.head_dim / 4) as u32,
        ..Defines::default()
    };
    let split = ctx.pipeline(ShaderId::AttentionSplit, "split", defines);
    let combine = ctx.pipeline(ShaderId::AttentionSplit, "combine", defines);
    let split_entries = vec![
        (0, params.as_entire_binding()),
        (1, pos.buffer.as_entire_binding()),
        (2, q.buffer.as_entire_binding()),
        (3, k_cache.resource()),
        (4, v_cache.resource()),
        (5, scores.as_entire_binding()),
    ];
    let combine_entries = vec![
        (0, params.as_entire_binding()),
        (1, pos.buffer.as_entire_binding()),
        (5, scores.as_entire_binding()),
        (6, out.buffer.as_entire_binding()),
    ];
    let chunks = cfg.max_ctx.div_ceil(GPU_CHUNK) as u32;
    let (heads, tokens) = (cfg.n_heads as u32, cfg.n_tokens as u32);
    let max = ctx.limits.max_compute_workgroups_per_dimension;
    if chunks > max || tokens > max || heads > max {
        return Err(GpuError::ShapeMismatch {
            op: "attention",
            detail: format!("{heads}x{chunks}x{tokens} workgroups exceed the adapter's grid"),
        });
    }
    Ok(vec![
        Dispatch {
            bind_group: ctx.bind_resources(&split, split_entries),
            pipeline: split,
            workgroups: [heads, chunks, tokens],
            label: "attention_split",
        },
        Dispatch {
            bind_group: ctx.bind_resources(&combine, combine_entries),
            pipeline: combine,
            workgroups: [heads, tokens, 1],
            label: "attention_combine",
        },
    ])
}
