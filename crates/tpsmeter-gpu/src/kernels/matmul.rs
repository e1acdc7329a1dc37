//! Tiled dequantize + matrix-matrix product for prefill: `y[t] (+)= W x[t]` for a batch of
//! tokens, staging inputs in workgroup memory and dequantizing each weight sub-block once per
//! tile of tokens (instead of once per token, as repeated matvecs would).

use crate::error::{GpuError, Result};
use crate::gpu::context::GpuContext;
use crate::gpu::defines::Defines;
use crate::kernels::dispatch::Dispatch;
use crate::kernels::matvec::Params;
use crate::kernels::source::ShaderId;
use crate::kernels::tensor::Tensor;
use crate::kernels::weights::QWeight;

/// Rows of W per workgroup (one per invocation).
const TILE_ROWS: u32 = 64;
/// Tokens per workgroup.
const TILE_TOKENS: u32 = 8;

/// A prepared `y = x W^T` over `n_tokens` rows of `x` (`[n_tokens, cols]` → `[n_tokens, rows]`).
#[derive(Debug, Clone)]
pub struct MatMul {
    dispatches: Vec<Dispatch>,
}

impl MatMul {
    /// Checks shapes and builds one dispatch per weight part.
    pub fn new(
        ctx: &GpuContext,
        w: &QWeight,
        x: &Tensor,
        y: &Tensor,
        n_tokens: usize,
        accumulate: bool,
    ) -> Result<Self> {
        const OP: &str = "matmul";
        if n_tokens == 0 {
            return Err(GpuError::ShapeMismatch {
                op: OP,
                detail: "no tokens".into(),
            });
        }
        x.expect(OP, "x", n_tokens * w.cols, x.dtype)?;
        y.expect(OP, "y", n_tokens * w.rows, x.dtype)?;
        ctx.check_dtype(x.dtype, OP)?;
        let defines = Defines {
            act: x.dtype,
            block: 32,
            workgroup: TILE_ROWS,
            rows: TILE_TOKENS,
            ..Defines::default()
        };
        let pipeline = ctx.pipeline(ShaderId::MatMul(w.format, w.store), "main", defines);
        let mut dispatches = Vec::with_capacity(w.parts.len());
        for part in &w.parts {
            let params = ctx.uniform(
                "matmul params",
                &Params {
                    rows: part.rows as u32,
                    nsub: (w.cols / 32) as u32,
                    row_offset: part.row_start as u32,
                    accumulate: u32::from(accumulate),
                    n_tokens: n_tokens as u32,
                    y_stride: w.rows as u32,
                    scale_bits: 0,
                    _pad: 0,
                },
            );
            let mut entries = vec![
                (0, params.as_entire_binding()),
                (1, x.buffer.as_entire_binding()),
                (4, y.buffer.as_entire_binding()),
            ];
            entries.extend(part.entries());
            let groups_y = (n_tokens as u32).div_ceil(TILE_TOKENS);
            let groups_x = (part.rows as u32).div_ceil(TILE_ROWS);
            if groups_x > ctx.limits.max_compute_workgroups_per_dimension
                || groups_y > ctx.limits.max_compute_workgroups_per_dimension
            {
                return Err(GpuError::ShapeMismatch {
                    op: OP,
                    detail: format!("{groups_x}x{groups_y} workgroups exceed the adapter's grid"),
                });
            }
            dispatches.push(Dispatch {
                bind_group: ctx.bind_resources(&pipeline, entries),
                pipeline: pipeline.clone(),
                workgroups: [groups_x, groups_y, 1],
                label: "matmul",
            });
        }
        Ok(MatMul { dispatches })
    }

    /// The dispatches (one per weight part).
    pub fn dispatches(&self) -> &[Dispatch] {
        &self.dispatches
    }
}
