//! Quantized embedding lookup: token ids in a buffer → dequantized rows (f32 or f16), read
//! straight from the quantized table (Q8_0, Q4_1, Q4_0, F16, F32).

use crate::error::{GpuError, Result};
use crate::gpu::context::GpuContext;
use crate::gpu::defines::{DType, Defines};
use crate::kernels::dispatch::Dispatch;
use crate::kernels::format::WeightFormat;
use crate::kernels::source::ShaderId;
use crate::kernels::tensor::Tensor;
use crate::kernels::weights::QWeight;

const WORKGROUP: u32 = 32;

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n_tokens: u32,
    nsub: u32,
    row_start: u32,
    rows: u32,
    scale: f32,
    _pad: [u32; 3],
}

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
        let entry = match table.format {
            WeightFormat::Q8_0 => "q8_0",
            WeightFormat::Q4_1 => "q4_1",
            WeightFormat::Q4_0 => "q4_0",
            WeightFormat::F16 => "f16w",
            WeightFormat::F32 => "f32w",
            other => {
                return Err(GpuError::UnsupportedFormat {
                    op: OP,
                    format: other.to_string(),
                });
            }
        };
        tokens.expect(OP, "tokens", n_tokens, DType::F32)?;
        out.expect(OP, "out", n_tokens * table.cols, out.dtype)?;
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
                    n_tokens: n_tokens as u32,
                    nsub,
                    row_start: part.row_start as u32,
                    rows: part.rows as u32,
                    scale,
                    _pad: [0; 3],
                };
                let mut b = vec![(1, &tokens.buffer), (2, &part.q), (4, &out.buffer)];
                if let Some(s) = &part.scales {
                    b.push((3, s));
                }
                ctx.prepare(
                    ShaderId::Embed,
                    entry,
                    defines,
                    &p,
                    &b,
                    [nsub.div_ceil(WORKGROUP), n_tokens as u32, 1],
                )
            })
            .collect();
        Ok(Embed { dispatches })
    }

    /// The dispatches (one per table part).
    pub fn dispatches(&self) -> &[Dispatch] {
        &self.dispatches
    }
}
