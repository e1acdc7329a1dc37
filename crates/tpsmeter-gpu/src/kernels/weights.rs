//! Quantized weight matrices on the GPU, repacked once at load and split by rows into parts
//! that each fit in one storage binding (lavapipe and many phones allow 128 MiB).

use crate::error::{GpuError, Result};
use crate::gpu::context::GpuContext;
use crate::kernels::format::WeightFormat;

/// Rows `row_start .. row_start + rows` of a weight matrix, in its own buffers.
#[derive(Debug, Clone)]
pub struct WeightPart {
    /// First row of the matrix held here.
    pub row_start: usize,
    /// Rows held here.
    pub rows: usize,
    /// Quantized values.
    pub q: wgpu::Buffer,
    /// Scales, for formats with a separate scale array.
    pub scales: Option<wgpu::Buffer>,
    /// Extra bits (Q5_0).
    pub aux: Option<wgpu::Buffer>,
}

/// A `rows x cols` weight matrix in GPU memory, quantized as in the file.
#[derive(Debug, Clone)]
pub struct QWeight {
    /// Storage format.
    pub format: WeightFormat,
    /// Output dimension.
    pub rows: usize,
    /// Input dimension.
    pub cols: usize,
    /// Row ranges, in order.
    pub parts: Vec<WeightPart>,
}

impl QWeight {
    /// Repacks and uploads `bytes` (GGUF row-major blocks of a `rows x cols` matrix).
    pub fn upload(
        ctx: &GpuContext,
        name: &str,
        format: WeightFormat,
        rows: usize,
        cols: usize,
        bytes: &[u8],
    ) -> Result<Self> {
        Self::upload_with_limit(ctx, name, format, rows, cols, bytes, ctx.max_binding())
    }

    /// [`QWeight::upload`] with an explicit per-binding limit (tests force splits with it).
    pub fn upload_with_limit(
        ctx: &GpuContext,
        name: &str,
        format: WeightFormat,
        rows: usize,
        cols: usize,
        bytes: &[u8],
        limit: u64,
    ) -> Result<Self> {
        let row_bytes = format.row_bytes(cols);
        if rows == 0 || bytes.len() != rows * row_bytes {
            return Err(GpuError::ShapeMismatch {
                op: "upload",
                detail: format!(
                    "{name}: {rows}x{cols} {format} needs {} bytes, got {}",
                    rows * row_bytes,
                    bytes.len()
                ),
            });
        }
        // Parts hold an even number of rows when possible, so that f16 scale pairs never
        // straddle parts; the largest array of a part is at most one row of values.
        let per_row = row_bytes as u64;
        let max_rows = (limit / per_row.max(1)) as usize;
        if max_rows == 0 {
            return Err(GpuError::BindingTooLarge {
                what: format!("one row of {name}"),
                bytes: per_row,
                limit,
            });
        }
        let step = if max_rows >= 2 { max_rows & !1 } else { 1 };
        let mut parts = Vec::new();
        let mut r = 0;
        while r < rows {
            let n = step.min(rows - r);
            let packed = format.repack(n, cols, &bytes[r * row_bytes..(r + n) * row_bytes])?;
            let label = format!("{name}[{r}..{}]", r + n);
            let q = ctx.storage_from_bytes(&label, &packed.q)?;
            let scales = if format.has_scales() {
                Some(ctx.storage_from_bytes(&label, &packed.scales)?)
            } else {
                None
            };
            let aux = if format.has_aux() {
                Some(ctx.storage_from_bytes(&label, &packed.aux)?)
            } else {
                None
            };
            parts.push(WeightPart {
                row_start: r,
                rows: n,
                q,
                scales,
                aux,
            });
            r += n;
        }
        Ok(QWeight {
            format,
            rows,
            cols,
            parts,
        })
    }

    /// Bytes a full pass over the weights reads (the quantized size).
    pub fn bytes(&self) -> u64 {
        (self.rows * self.format.row_bytes(self.cols)) as u64
    }
}
