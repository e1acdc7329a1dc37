//! Quantized weight matrices on the GPU, repacked once at load and split by rows into parts
//! that each fit in one binding (lavapipe and many phones allow 128 MiB of storage buffer).
//!
//! Real GPUs read weights from storage buffers. CPU-type adapters read them from 2D textures
//! holding the same bytes: lavapipe turns a texel fetch into a vector gather but a
//! storage-buffer load with per-invocation addresses into a scalar loop over lanes
//! (docs/performance.md, "Weights as textures"). Either way the bytes are the repacked file
//! bytes; nothing is expanded.

use crate::error::{GpuError, Result};
use crate::gpu::buffers::TexelKind;
use crate::gpu::context::{AdapterProfile, GpuContext};
use crate::kernels::format::WeightFormat;

/// Where a weight matrix lives, which decides the kernels' weight accessors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WeightStore {
    /// Storage buffers (`weights_buffer.wgsl`).
    Buffer,
    /// `rgba32uint` / `r32uint` textures (`weights_texture.wgsl`).
    Texture,
}

impl WeightStore {
    /// The store the adapter reads fastest.
    pub fn for_context(ctx: &GpuContext) -> Self {
        match ctx.profile {
            AdapterProfile::Cpu => WeightStore::Texture,
            AdapterProfile::Gpu => WeightStore::Buffer,
        }
    }
}

/// The most bytes of GGUF rows one part holds in `store`.
fn part_limit(ctx: &GpuContext, store: WeightStore) -> u64 {
    match store {
        WeightStore::Buffer => ctx.max_binding(),
        // Every array of a part has at most as many texels as its values have 16-byte
        // texels, and those are at most the part's bytes / 16.
        WeightStore::Texture => ctx.max_texels() * 16,
    }
}

/// One array of a weight part, bound at one binding slot.
#[derive(Debug, Clone)]
pub enum WeightData {
    /// A storage buffer.
    Buffer(wgpu::Buffer),
    /// A texture view.
    Texture(wgpu::TextureView),
}

impl WeightData {
    fn upload(
        ctx: &GpuContext,
        store: WeightStore,
        label: &str,
        bytes: &[u8],
        kind: TexelKind,
    ) -> Result<Self> {
        Ok(match store {
            WeightStore::Buffer => WeightData::Buffer(ctx.storage_from_bytes(label, bytes)?),
            WeightStore::Texture => {
                WeightData::Texture(ctx.texture_from_bytes(label, bytes, kind)?)
            }
        })
    }

    /// The binding resource.
    pub fn resource(&self) -> wgpu::BindingResource<'_> {
        match self {
            WeightData::Buffer(b) => b.as_entire_binding(),
            WeightData::Texture(t) => wgpu::BindingResource::TextureView(t),
        }
    }
}

/// Rows `row_start .. row_start + rows` of a weight matrix, in its own buffers or textures.
#[derive(Debug, Clone)]
pub struct WeightPart {
    /// First row of the matrix held here.
    pub row_start: usize,
    /// Rows held here.
    pub rows: usize,
    /// Quantized values (binding 2).
    pub q: WeightData,
    /// Scales, for formats with a separate scale array (binding 3).
    pub scales: Option<WeightData>,
    /// Extra bits, Q5_0 (binding 5).
    pub aux: Option<WeightData>,
}

impl WeightPart {
    /// (binding, resource) of every weight array of this part.
    pub fn entries(&self) -> Vec<(u32, wgpu::BindingResource<'_>)> {
        let mut e = vec![(2, self.q.resource())];
        if let Some(s) = &self.scales {
            e.push((3, s.resource()));
        }
        if let Some(a) = &self.aux {
            e.push((5, a.resource()));
        }
        e
    }
}

/// A `rows x cols` weight matrix in GPU memory, quantized as in the file.
#[derive(Debug, Clone)]
pub struct QWeight {
    /// Storage format.
    pub format: WeightFormat,
    /// Output dimension: its rows, or the width of the output rows it is placed into
    /// ([`QWeight::placed`]).
    pub rows: usize,
    /// Input dimension.
    pub cols: usize,
    /// Buffers or textures.
    pub store: WeightStore,
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
        let store = WeightStore::for_context(ctx);
        Self::upload_with(
            ctx,
            name,
            format,
            rows,
            cols,
            bytes,
            store,
            part_limit(ctx, store),
        )
    }

    /// Whether [`QWeight::upload`] keeps a `rows x cols` matrix in one part (one binding per
    /// array), which a matrix fused from several needs where its kernel pairs their rows.
    pub fn fits_one_part(ctx: &GpuContext, format: WeightFormat, rows: usize, cols: usize) -> bool {
        let row = format.row_bytes(cols) as u64;
        let limit = part_limit(ctx, WeightStore::for_context(ctx));
        row > 0 && limit / row >= rows as u64
    }

    /// The same weights writing their rows into columns `offset .. offset + rows` of output
    /// rows `width` wide (several matrices filling one row: q, k and v of a model whose
    /// three differ in format). The arrays are shared, not copied.
    pub fn placed(&self, offset: usize, width: usize) -> QWeight {
        let mut w = self.clone();
        w.rows = width;
        for p in &mut w.parts {
            p.row_start += offset;
        }
        w
    }

    /// [`QWeight::upload`] into an explicit store with an explicit per-binding limit in bytes
    /// of GGUF rows (tests force splits and the other store with it).
    #[allow(clippy::too_many_arguments)] // Each is one independent knob of the upload.
    pub fn upload_with(
        ctx: &GpuContext,
        name: &str,
        format: WeightFormat,
        rows: usize,
        cols: usize,
        bytes: &[u8],
        store: WeightStore,
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
            let q = WeightData::upload(ctx, store, &label, &packed.q, TexelKind::Vec4)?;
            let scales = if format.has_scales() {
                Some(WeightData::upload(
                    ctx,
                    store,
                    &label,
                    &packed.scales,
                    TexelKind::Scalar,
                )?)
            } else {
                None
            };
            let aux = if format.has_aux() {
                Some(WeightData::upload(
                    ctx,
                    store,
                    &label,
                    &packed.aux,
                    TexelKind::Scalar,
                )?)
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
            store,
            parts,
        })
    }

    /// Bytes a full pass over the weights reads (the quantized size).
    pub fn bytes(&self) -> u64 {
        let rows: usize = self.parts.iter().map(|p| p.rows).sum();
        (rows * self.format.row_bytes(self.cols)) as u64
    }
}
