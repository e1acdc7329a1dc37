//! One layer's keys or values in the static KV cache: a storage buffer, or on CPU-type
//! adapters an `rgba32float` texture (row = position, one texel per 4 values), which lavapipe
//! reads with vector gathers instead of its per-lane storage-buffer loop (decode at context
//! 512 ran 3x slower than at 64 with buffers there).

use crate::error::Result;
use crate::gpu::context::{AdapterProfile, GpuContext};
use crate::gpu::defines::DType;
use crate::kernels::tensor::Tensor;

/// Where a KV cache lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KvStore {
    /// Storage buffers (`kv_buffer.wgsl`), any dtype.
    Buffer,
    /// `rgba32float` textures (`kv_texture.wgsl`), f32 only.
    Texture,
}

impl KvStore {
    /// Textures where the adapter is CPU-type and the cache fits them (f32, heads a multiple
    /// of 4 wide, `max_ctx` rows within the texture limits); buffers otherwise.
    pub fn for_context(
        ctx: &GpuContext,
        max_ctx: usize,
        head_dim: usize,
        kv_dim: usize,
        dtype: DType,
    ) -> Self {
        let max = ctx.limits.max_texture_dimension_2d as usize;
        if ctx.profile == AdapterProfile::Cpu
            && dtype == DType::F32
            && head_dim.is_multiple_of(4)
            && max_ctx <= max
            && kv_dim / 4 <= max
        {
            KvStore::Texture
        } else {
            KvStore::Buffer
        }
    }
}

/// One layer's keys or values for `max_ctx` positions of `kv_dim` values.
#[derive(Debug, Clone)]
pub enum KvSlab {
    /// `[max_ctx, kv_dim]` in a storage buffer.
    Buffer(Tensor),
    /// `max_ctx` rows of `kv_dim / 4` texels.
    Texture {
        /// The texture (kept for its size and lifetime).
        texture: wgpu::Texture,
        /// Its view, bound for reading (attention) and writing (append).
        view: wgpu::TextureView,
    },
}

impl KvSlab {
    /// A zeroed slab in `store`.
    pub fn new(
        ctx: &GpuContext,
        label: &str,
        max_ctx: usize,
        kv_dim: usize,
        dtype: DType,
        store: KvStore,
    ) -> Result<Self> {
        match store {
            KvStore::Buffer => Ok(KvSlab::Buffer(Tensor::zeros(
                ctx,
                label,
                max_ctx * kv_dim,
                dtype,
            )?)),
            KvStore::Texture => {
                // wgpu zero-fills a texture before its first use.
                let texture = ctx.device.create_texture(&wgpu::TextureDescriptor {
                    label: Some(label),
                    size: wgpu::Extent3d {
                        width: (kv_dim / 4) as u32,
                        height: max_ctx as u32,
                        depth_or_array_layers: 1,
                    },
                    mip_level_count: 1,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format: wgpu::TextureFormat::Rgba32Float,
                    usage: wgpu::TextureUsages::TEXTURE_BINDING
                        | wgpu::TextureUsages::STORAGE_BINDING,
                    view_formats: &[],
                });
                let view = texture.create_view(&wgpu::TextureViewDescriptor::default());
                Ok(KvSlab::Texture { texture, view })
            }
        }
    }

    /// Which store this is.
    pub fn store(&self) -> KvStore {
        match self {
            KvSlab::Buffer(_) => KvStore::Buffer,
            KvSlab::Texture { .. } => KvStore::Texture,
        }
    }

    /// The binding resource (the same for reading and writing).
    pub fn resource(&self) -> wgpu::BindingResource<'_> {
        match self {
            KvSlab::Buffer(t) => t.buffer.as_entire_binding(),
            KvSlab::Texture { view, .. } => wgpu::BindingResource::TextureView(view),
        }
    }

    /// Bytes per position.
    pub fn bytes_per_position(&self, max_ctx: usize) -> u64 {
        match self {
            KvSlab::Buffer(t) => (t.len / max_ctx.max(1) * t.dtype.size()) as u64,
            KvSlab::Texture { texture, .. } => u64::from(texture.width()) * 16,
        }
    }
}
