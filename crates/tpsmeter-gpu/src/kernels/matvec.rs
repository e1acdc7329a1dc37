//! Fused dequantize + matrix-vector product for decode: `y = W x` or `y += W x`, reading
//! `W` quantized as stored (see [`crate::kernels::format`]) and never expanding it.
//!
//! Two kernel shapes live behind this one op: CPU-type adapters get several rows
//! per invocation with contiguous reads and no barriers; real GPUs get coalesced reads and a
//! workgroup or subgroup reduction.
//!
//! Two fusions ride on every shape, because on a real GPU the fixed cost of each dispatch
//! (24-70 us through Dawn or wgpu) outweighs the few extra instructions:
//! - an RMSNorm of the input folded in (`norm_fold.wgsl`): the decode step's norms then cost
//!   no dispatch of their own;
//! - a gated unit in the epilogue: gate and up rows held in one matrix (gate rows first),
//!   each output `act(gate_r . x) * (up_r . x)` written at once, so the FFN's first half is
//!   one dispatch instead of three.

use crate::error::{GpuError, Result};
use crate::gpu::context::{AdapterProfile, GpuContext};
use crate::gpu::defines::{DType, Defines};
use crate::kernels::dispatch::Dispatch;
use crate::kernels::elementwise::GluKind;
use crate::kernels::qweight::{QWeight, WeightPart};
use crate::kernels::source::{MatVecEntry, MatVecNorm, ShaderId, XSource};
use crate::kernels::tensor::Tensor;

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
    /// The variant measured best for the adapter's profile and a matrix of `outputs`
    /// results (a gated unit's outputs are half its rows). GPUs: 64 invocations reducing 4
    /// rows, with subgroups when available. CPU-type adapters: workgroups of 8, each
    /// invocation owning 16 rows or 8:
    /// - 16 on SwiftShader at every shape: each input slice loaded once serves twice the
    ///   rows, and a folded norm's extra work per slice is spread over them too
    ///   (benches/kernels.rs and benches/fusion.rs there: 15-25% faster than 8 rows at every
    ///   SmolLM2 shape, folded or not);
    /// - on lavapipe (whose input loads go through the lanes, x_lanes.wgsl) 16 only from
    ///   1536 outputs (the gated FFN, the head: 7-10% faster), 8 below (576 and 960 rows:
    ///   15-60% faster than 16; lavapipe spreads fewer invocations worse over its threads).
    pub fn for_matrix(ctx: &GpuContext, outputs: usize) -> Self {
        match ctx.profile {
            AdapterProfile::Cpu => MatVecVariant::Cpu {
                rows: if !ctx.fetches_are_gathers() || outputs >= 1536 {
                    16
                } else {
                    8
                },
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
            MatVecVariant::Cpu {
                rows: 16,
                workgroup: 8,
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

/// An RMSNorm folded into a matvec: `y = W (x / rms(x) * weight)`.
#[derive(Clone, Copy, Debug)]
pub struct NormFold<'a> {
    /// The norm's weight, `cols` f32 values.
    pub weight: &'a Tensor,
    /// Added to the mean square.
    pub eps: f32,
}

/// The input (or a folded norm's weight beside it) as a uniform range of exactly the
/// input's `bytes`, or as a whole storage buffer.
fn input(t: &Tensor, xs: XSource, bytes: u64) -> wgpu::BindingResource<'_> {
    match xs {
        XSource::Uniform => wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: &t.buffer,
            offset: 0,
            size: std::num::NonZeroU64::new(bytes),
        }),
        XSource::Storage => t.buffer.as_entire_binding(),
    }
}

/// Options of a matvec.
#[derive(Clone, Copy, Debug, Default)]
pub struct MatVecOptions<'a> {
    /// Add into `y` instead of overwriting (fuses a residual add).
    pub accumulate: bool,
    /// Kernel shape; `None` picks [`MatVecVariant::for_matrix`].
    pub variant: Option<MatVecVariant>,
    /// Normalise the input first.
    pub norm: Option<NormFold<'a>>,
    /// `W` holds gate rows then as many up rows (one part), and `y[r] = act(gate_r . x) *
    /// (up_r . x)` for the `W.rows / 2` outputs.
    pub glu: Option<GluKind>,
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
    /// Matvec with a folded norm: its epsilon.
    pub(crate) eps: f32,
    /// Matvec with a gated unit: the first up row.
    pub(crate) glu_up: u32,
    pub(crate) _pad: [u32; 2],
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
            eps: 0.0,
            glu_up: 0,
            _pad: [0; 2],
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
        let shape = |detail: String| GpuError::ShapeMismatch { op: OP, detail };
        // With a gated unit, each output reads a gate row and the up row `outputs` further.
        let outputs = if opts.glu.is_some() {
            if !w.rows.is_multiple_of(2) || w.parts.len() != 1 {
                return Err(shape(format!(
                    "a gated unit needs gate and up rows in one part, got {} rows in {} parts",
                    w.rows,
                    w.parts.len()
                )));
            }
            w.rows / 2
        } else {
            w.rows
        };
        x.expect(OP, "x", w.cols, x.dtype)?;
        y.expect(OP, "y", outputs, x.dtype)?;
        if let Some(n) = &opts.norm {
            n.weight.expect(OP, "norm weight", w.cols, DType::F32)?;
        }
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
            .unwrap_or_else(|| MatVecVariant::for_matrix(ctx, outputs));
        if matches!(variant, MatVecVariant::GpuSubgroup { .. }) && !ctx.has_subgroups() {
            return Err(GpuError::MissingFeature {
                feature: "subgroups",
                what: "matvec GpuSubgroup variant".into(),
            });
        }
        let (rows_per, workgroup) = variant.shape();
        if opts.glu.is_some() && !rows_per.is_multiple_of(2) {
            return Err(shape(format!(
                "a gated unit pairs rows: {rows_per} rows per unit is odd"
            )));
        }
        let outs_per = if opts.glu.is_some() {
            rows_per / 2
        } else {
            rows_per
        };
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
            norm: opts.norm.is_some(),
            glu: match opts.glu {
                None => 0,
                Some(GluKind::SwiGlu) => 1,
                Some(GluKind::GeluTanh) => 2,
            },
            ..Defines::default()
        };
        let norm = if opts.norm.is_some() {
            MatVecNorm::Fold
        } else {
            MatVecNorm::None
        };
        let pipeline = ctx.pipeline(
            ShaderId::MatVec(w.format, entry, w.store, xs, norm),
            "main",
            defines,
        );
        let mut dispatches = Vec::with_capacity(w.parts.len());
        for part in &w.parts {
            let mut params = Params::matrix(w, part, opts.accumulate, 1, 0);
            if let Some(n) = &opts.norm {
                params.eps = n.eps;
            }
            if opts.glu.is_some() {
                params.rows = outputs as u32;
                params.glu_up = outputs as u32;
            }
            let params = ctx.uniform("matvec params", &params);
            let mut entries = vec![
                (0, params.as_entire_binding()),
                (1, input(x, xs, x_bytes)),
                (4, y.buffer.as_entire_binding()),
            ];
            if let Some(n) = &opts.norm {
                entries.push((7, input(n.weight, xs, x_bytes)));
            }
            entries.extend(part.entries());
            let bind_group = ctx.bind_resources(&pipeline, entries);
            let units = if opts.glu.is_some() {
                outputs as u32
            } else {
                part.rows as u32
            };
            let groups = match variant {
                MatVecVariant::Cpu { .. } => units.div_ceil(outs_per * workgroup),
                _ => units.div_ceil(outs_per),
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
