//! One layer's keys or values in the static KV cache: a storage buffer, or on CPU-type
//! adapters a texture (row = position), which lavapipe reads with vector gathers instead of
//! its per-lane storage-buffer loop (decode at context 512 ran 3x slower than at 64 with
//! buffers there). The texture holds f16 values, 8 to an `rgba32uint` texel, where the head
//! size allows: a gather then brings 8 values instead of 4, and the gathers are what a long
//! decode's attention costs there (context 2048: 16 of its 21 ms). f16 is also the cache
//! type llama.cpp uses by default; arithmetic stays f32.

use crate::error::Result;
use crate::gpu::context::{AdapterProfile, GpuContext};
use crate::gpu::defines::DType;
use crate::kernels::tensor::Tensor;

/// Where a KV cache lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KvStore {
    /// Storage buffers (`kv_buffer.wgsl`), any dtype.
    Buffer,
    /// `rgba32float` textures (`kv_texture.wgsl`), 4 f32 values per texel: exact where the
    /// f16 texture rounds.
    Texture,
    /// `rgba32uint` textures (`kv_texture_f16.wgsl`), 8 f16 values per texel.
    TextureF16,
}

impl KvStore {
    /// On CPU-type adapters a texture where heads are a multiple of 8 wide (the CPU-type
    /// attention reads a head 8 values at a time) and the cache fits the texture limits: f16
    /// when `f16` allows, else f32 (f32 activations only); buffers otherwise.
    pub fn for_context(
        ctx: &GpuContext,
        max_ctx: usize,
        head_dim: usize,
        kv_dim: usize,
        dtype: DType,
        f16: bool,
    ) -> Self {
        let max = ctx.limits.max_texture_dimension_2d as usize;
        let fits = |per: usize| {
            ctx.profile == AdapterProfile::Cpu
                && head_dim.is_multiple_of(8)
                && kv_dim.is_multiple_of(per)
                && max_ctx <= max
                && kv_dim / per <= max
        };
        if f16 && fits(8) {
            KvStore::TextureF16
        } else if dtype == DType::F32 && fits(4) {
            KvStore::Texture
        } else {
            KvStore::Buffer
        }
    }

    /// Values per texel of a texture store; 1 for buffers.
    pub fn texel_values(self) -> usize {
        match self {
            KvStore::Buffer => 1,
            KvStore::Texture => 4,
            KvStore::TextureF16 => 8,
        }
    }

    /// Whether this is a texture store.
    pub fn is_texture(self) -> bool {
        self != KvStore::Buffer
    }
}

/// One layer's keys or values for `max_ctx` positions of `kv_dim` values.
#[derive(Debug, Clone)]
pub enum KvSlab {
    /// `[max_ctx, kv_dim]` in a storage buffer.
    Buffer(Tensor),
    /// `max_ctx` rows of `kv_dim / 4` (f32) or `kv_dim / 8` (f16) texels.
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
            KvStore::Texture | KvStore::TextureF16 => {
                // wgpu zero-fills a texture before its first use.
                let texture = ctx.device.create_texture(&wgpu::TextureDescriptor {
                    label: Some(label),
                    size: wgpu::Extent3d {
                        width: (kv_dim / store.texel_values()) as u32,
                        height: max_ctx as u32,
                        depth_or_array_layers: 1,
                    },
                    mip_level_count: 1,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format: if store == KvStore::TextureF16 {
                        wgpu::TextureFormat::Rgba32Uint
                    } else {
                        wgpu::TextureFormat::Rgba32Float
                    },
                    // COPY_SRC: tests read the cache back.
                    usage: wgpu::TextureUsages::TEXTURE_BINDING
                        | wgpu::TextureUsages::STORAGE_BINDING
                        | wgpu::TextureUsages::COPY_SRC,
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
            KvSlab::Texture { texture, .. } => match texture.format() {
                wgpu::TextureFormat::Rgba32Uint => KvStore::TextureF16,
                _ => KvStore::Texture,
            },
        }
    }

    /// The binding resource (the same for reading and writing).
    pub fn resource(&self) -> wgpu::BindingResource<'_> {
        match self {
            KvSlab::Buffer(t) => t.buffer.as_entire_binding(),
            KvSlab::Texture { view, .. } => wgpu::BindingResource::TextureView(view),
        }
    }

    /// The whole slab as f32 rows of `kv_dim` values (f16 texels widened), for tests and
    /// debugging: copies it to a staging buffer and waits for the device.
    pub async fn read_f32_async(&self, ctx: &GpuContext) -> Result<Vec<f32>> {
        let (texture, store) = match self {
            KvSlab::Buffer(t) => return t.read_f32_async(ctx).await,
            KvSlab::Texture { texture, .. } => (texture, self.store()),
        };
        let (w, h) = (texture.width() as u64, texture.height() as u64);
        // Texture-to-buffer copies need rows aligned to 256 bytes.
        let row = (w * 16).div_ceil(256) * 256;
        let staging = ctx.storage_zeroed("kv readback", row * h)?;
        let mut enc = ctx.encoder("kv readback");
        enc.copy_texture_to_buffer(
            texture.as_image_copy(),
            wgpu::TexelCopyBufferInfo {
                buffer: &staging,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(row as u32),
                    rows_per_image: None,
                },
            },
            texture.size(),
        );
        ctx.submit(enc);
        let bytes = ctx.read_bytes(&staging, 0, row * h).await?;
        let mut out = Vec::new();
        for r in bytes.chunks_exact(row as usize) {
            let texels = &r[..(w * 16) as usize];
            if store == KvStore::TextureF16 {
                let hs: Vec<half::f16> = bytemuck::pod_collect_to_vec(texels);
                out.extend(hs.iter().map(|v| v.to_f32()));
            } else {
                out.extend(bytemuck::pod_collect_to_vec::<u8, f32>(texels));
            }
        }
        Ok(out)
    }

    /// Bytes per position.
    pub fn bytes_per_position(&self, max_ctx: usize) -> u64 {
        match self {
            KvSlab::Buffer(t) => (t.len / max_ctx.max(1) * t.dtype.size()) as u64,
            KvSlab::Texture { texture, .. } => u64::from(texture.width()) * 16,
        }
    }
}
