//! Fused dequantize + matrix-vector product for decode: `y = W x` or `y += W x`, reading
//! `W` quantized as stored (see [`crate::kernels::format`]) and never expanding it.
//!
//! Two kernel shapes live behind this one op (engine.md): CPU-type adapters get several rows
//! per invocation with contiguous reads and no barriers; real GPUs get coalesced reads and a
//! workgroup or subgroup reduction.

use crate::error::{GpuError, Result};
use crate::gpu::context::{AdapterProfile, GpuContext};
use crate::gpu::defines::{DType, Defines};
use crate::kernels::dispatch::Dispatch;
use crate::kernels::source::{MatVecEntry, ShaderId, XSource};
use crate::kernels::tensor::Tensor;
use crate::kernels::weights::{QWeight, WeightPart};

/// Kernel shape of a matvec.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatVecVariant {
    /// `rows` rows per invocation, `workgroup` invocations, no barriers.
    Cpu { rows: u32, workgroup: u32 },
    /// `rows` rows per workgroup of `workgroup` invocations, shared-memory reduction.
    GpuShared { rows: u32, workgroup: u32 },
    /// `rows` rows per workgroup of `workgroup` invocations, subgroup reduction.
    GpuSubgroup { rows: u32, workgroup: u32 },
}

impl MatVecVariant {
    /// The variant measured best for the adapter's profile. CPU-type: 8 rows per invocation,
    /// workgroup 8 (benches/kernels.rs on lavapipe here: 20-30% faster than 4 x 16 at every
    /// SmolLM2 shape; engine.md found 8 x 8 best on SwiftShader too). GPUs: 64 invocations
    /// reducing 4 rows, with subgroups when available.
    pub fn for_context(ctx: &GpuContext) -> Self {
        match ctx.profile {
            AdapterProfile::Cpu => MatVecVariant::Cpu {
                rows: 8,
                workgroup: 8,
            },
            AdapterProfile::Gpu if ctx.has_subgroups() => MatVecVariant::GpuSubgroup {
                rows: 4,
                workgroup: 64,
            },
            AdapterProfile::Gpu => MatVecVariant::GpuShared {
                rows: 4,
                workgroup: 64,
            },
        }
    }

    /// The shapes worth measuring on this adapter: the CPU-type shapes the choice above was
    /// made among, the shared-memory GPU shape, and the subgroup one where subgroups exist.
    pub fn candidates(ctx: &GpuContext) -> Vec<Self> {
        let mut v = vec![
            MatVecVariant::Cpu {
                rows: 4,
                workgroup: 16,
            },
            MatVecVariant::Cpu {
                rows: 8,
                workgroup: 8,
            },
            MatVecVariant::Cpu {
                rows: 2,
                workgroup: 16,
            },
            MatVecVariant::GpuShared {
                rows: 4,
                workgroup: 64,
            },
        ];
        if ctx.has_subgroups() {
            v.push(MatVecVariant::GpuSubgroup {
                rows: 4,
                workgroup: 64,
            });
        }
        v
    }

    fn entry(self) -> MatVecEntry {
        match self {
            MatVecVariant::Cpu { .. } => MatVecEntry::Cpu,
            MatVecVariant::GpuShared { .. } => MatVecEntry::GpuShared,
            MatVecVariant::GpuSubgroup { .. } => MatVecEntry::GpuSubgroup,
        }
    }

    fn shape(self) -> (u32, u32) {
        match self {
            MatVecVariant::Cpu { rows, workgroup }
            | MatVecVariant::GpuShared { rows, workgroup }
            | MatVecVariant::GpuSubgroup { rows, workgroup } => (rows, workgroup),
        }
    }
}

/// Whether CPU-type kernels with `workgroup` invocations per workgroup load their uniform
/// inputs through subgroup broadcasts (x_lanes.wgsl): on lavapipe only (where a uniform load
/// at a loop-dependent offset runs once per lane), natively (subgroups), where a subgroup
/// holds the workgroup's first 8 lanes.
pub(crate) fn lanes_load_inputs(ctx: &GpuContext, workgroup: u32) -> bool {
    ctx.fetches_are_gathers()
        && ctx.has_subgroups()
        && ctx.info.subgroup_min_size >= 8
        && workgroup >= 8
        && workgroup.is_multiple_of(8)
}

/// Options of a matvec.
#[derive(Clone, Copy, Debug, Default)]
pub struct MatVecOptions {
    /// Add into `y` instead of overwriting (fuses a residual add).
    pub accumulate: bool,
    /// Kernel shape; `None` picks [`MatVecVariant::for_context`].
    pub variant: Option<MatVecVariant>,
}

/// Parameters shared with the matmul kernel (`matvec_common.wgsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct Params {
    pub(crate) rows: u32,
    pub(crate) nsub: u32,
    pub(crate) row_offset: u32,
    pub(crate) accumulate: u32,
    pub(crate) n_tokens: u32,
    pub(crate) y_stride: u32,
    /// Embedding lookup: output scale as f32 bits.
    pub(crate) scale_bits: u32,
    /// CPU matmul: index in y of the dispatch's first token.
    pub(crate) t0: u32,
}

impl Params {
    /// `y (+)= W x` over one weight part for `n_tokens` tokens, the first written at token
    /// `t0` of `y` (rows of `y` are `w.rows` wide).
    pub(crate) fn matrix(
        w: &QWeight,
        part: &WeightPart,
        accumulate: bool,
        n_tokens: usize,
        t0: usize,
    ) -> Self {
        Params {
            rows: part.rows as u32,
            nsub: (w.cols / 32) as u32,
            row_offset: part.row_start as u32,
            accumulate: u32::from(accumulate),
            n_tokens: n_tokens as u32,
            y_stride: w.rows as u32,
            scale_bits: 0,
            t0: t0 as u32,
        }
    }
}

/// A prepared `y (+)= W x`: one dispatch per weight part.
#[derive(Debug, Clone)]
pub struct MatVec {
    dispatches: Vec<Dispatch>,
    /// Weight bytes one run reads.
    pub weight_bytes: u64,
}

impl MatVec {
    /// Checks shapes and builds the dispatches.
    pub fn new(
        ctx: &GpuContext,
        w: &QWeight,
        x: &Tensor,
        y: &Tensor,
        opts: MatVecOptions,
    ) -> Result<Self> {
        const OP: &str = "matvec";
        x.expect(OP, "x", w.cols, x.dtype)?;
        y.expect(OP, "y", w.rows, x.dtype)?;
        ctx.check_dtype(x.dtype, OP)?;
        if !w.cols.is_multiple_of(w.format.col_multiple()) {
            return Err(GpuError::ShapeMismatch {
                op: OP,
                detail: format!(
                    "{} columns is not a multiple of {}",
                    w.cols,
                    w.format.col_multiple()
                ),
            });
        }
        let variant = opts
            .variant
            .unwrap_or_else(|| MatVecVariant::for_context(ctx));
        if matches!(variant, MatVecVariant::GpuSubgroup { .. }) && !ctx.has_subgroups() {
            return Err(GpuError::MissingFeature {
                feature: "subgroups",
                what: "matvec GpuSubgroup variant".into(),
            });
        }
        let (rows_per, workgroup) = variant.shape();
        // CPU-type shapes read x at offsets shared by every invocation: a uniform binding
        // loads those cheaper than storage (x_uniform.wgsl). GPU shapes spread x over lanes.
        let x_bytes = (w.cols * 4) as u64;
        let xs = if matches!(variant, MatVecVariant::Cpu { .. })
            && x.dtype == DType::F32
            && x_bytes <= ctx.limits.max_uniform_buffer_binding_size
        {
            XSource::Uniform
        } else {
            XSource::Storage
        };
        // On lavapipe a uniform input comes through the lanes (x_lanes.wgsl): its loads at
        // loop-dependent offsets are per lane there.
        let entry = match variant.entry() {
            MatVecEntry::Cpu if xs == XSource::Uniform && lanes_load_inputs(ctx, workgroup) => {
                MatVecEntry::CpuLanes
            }
            e => e,
        };
        let defines = Defines {
            act: x.dtype,
            block: 32,
            workgroup,
            rows: rows_per,
            subgroups: matches!(entry, MatVecEntry::GpuSubgroup | MatVecEntry::CpuLanes),
            x_vec4s: (w.cols / 4) as u32,
            ..Defines::default()
        };
        let pipeline = ctx.pipeline(
            ShaderId::MatVec(w.format, entry, w.store, xs),
            "main",
            defines,
        );
        let mut dispatches = Vec::with_capacity(w.parts.len());
        for part in &w.parts {
            let params = ctx.uniform(
                "matvec params",
                &Params::matrix(w, part, opts.accumulate, 1, 0),
            );
            let x_binding = match xs {
                XSource::Uniform => wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &x.buffer,
                    offset: 0,
                    size: std::num::NonZeroU64::new(x_bytes),
                }),
                XSource::Storage => x.buffer.as_entire_binding(),
            };
            let mut entries = vec![
                (0, params.as_entire_binding()),
                (1, x_binding),
                (4, y.buffer.as_entire_binding()),
            ];
            entries.extend(part.entries());
            let bind_group = ctx.bind_resources(&pipeline, entries);
            let groups = match variant {
                MatVecVariant::Cpu { .. } => (part.rows as u32).div_ceil(rows_per * workgroup),
                _ => (part.rows as u32).div_ceil(rows_per),
            };
            dispatches.push(Dispatch {
                pipeline: pipeline.clone(),
                bind_group,
                workgroups: ctx.grid(groups),
                label: "matvec",
            });
        }
        Ok(MatVec {
            dispatches,
            weight_bytes: w.bytes(),
        })
    }

    /// Records the dispatches.
    pub fn encode(&self, pass: &mut wgpu::ComputePass<'_>) {
        for d in &self.dispatches {
            d.encode(pass);
        }
    }

    /// The dispatches (one per weight part).
    pub fn dispatches(&self) -> &[Dispatch] {
        &self.dispatches
    }
}
