//! Quantized embedding lookup: token ids in a buffer → dequantized rows (f32 or f16), read
//! straight from the quantized table in any weight format (the format's `decode`, shared with
//! the prefill matmul).

use crate::error::{GpuError, Result};
use crate::gpu::context::GpuContext;
use crate::gpu::defines::{DType, Defines};
use crate::kernels::dispatch::Dispatch;
use crate::kernels::matvec::Params;
use crate::kernels::qweight::QWeight;
use crate::kernels::source::ShaderId;
use crate::kernels::tensor::Tensor;

const WORKGROUP: u32 = 32;

/// `out[t, :] = scale * table[tokens[t], :]`.
#[derive(Debug, Clone)]
pub struct Embed {
    dispatches: Vec<Dispatch>,
}

impl Embed {
    /// `tokens` holds `n_tokens` u32 ids; `out` holds `n_tokens * table.cols` values.
    /// Ids outside the table leave their output row untouched.
    pub fn new(
        ctx: &GpuContext,
        table: &QWeight,
        tokens: &Tensor,
        out: &Tensor,
        n_tokens: usize,
        scale: f32,
    ) -> Result<Self> {
        const OP: &str = "embed";
        tokens.expect(OP, "tokens", n_tokens, DType::F32)?;
        out.expect(OP, "out", n_tokens * table.cols, out.dtype)?;
        ctx.check_dtype(out.dtype, OP)?;
        if n_tokens == 0
            || n_tokens as u64 > u64::from(ctx.limits.max_compute_workgroups_per_dimension)
        {
            return Err(GpuError::ShapeMismatch {
                op: OP,
                detail: format!("{n_tokens} tokens in one lookup"),
            });
        }
        let nsub = (table.cols / 32) as u32;
        let defines = Defines {
            act: out.dtype,
            workgroup: WORKGROUP,
            ..Defines::default()
        };
        let dispatches = table
            .parts
            .iter()
            .map(|part| {
                let p = Params {
                    rows: part.rows as u32,
                    nsub,
                    row_offset: part.row_start as u32,
                    accumulate: 0,
                    n_tokens: n_tokens as u32,
                    y_stride: table.cols as u32,
                    scale_bits: scale.to_bits(),
                    t0: 0,
                    eps: 0.0,
                    glu_up: 0,
                    _pad: [0; 2],
                };
                let pipeline =
                    ctx.pipeline(ShaderId::Embed(table.format, table.store), "main", defines);
                let params = ctx.uniform("embed params", &p);
                let mut entries = vec![
                    (0, params.as_entire_binding()),
                    (6, tokens.buffer.as_entire_binding()),
                    (4, out.buffer.as_entire_binding()),
                ];
                entries.extend(part.entries());
                Dispatch {
                    bind_group: ctx.bind_resources(&pipeline, entries),
                    pipeline,
                    workgroups: [nsub.div_ceil(WORKGROUP), n_tokens as u32, 1],
                    label: "embed",
                }
            })
            .collect();
        Ok(Embed { dispatches })
    }

    /// The dispatches (one per table part).
    pub fn dispatches(&self) -> &[Dispatch] {
        &self.dispatches
    }
}
