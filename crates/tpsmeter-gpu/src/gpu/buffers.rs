//! Buffer helpers: storage and uniform buffers from host data, and readback.
//!
//! Sizes are rounded up to 16 bytes so kernels may load `vec4`s at the tail.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use crate::error::{GpuError, Result};
use crate::gpu::context::GpuContext;
use crate::gpu::defines::TEX_SHIFT;

/// Rounds `n` up to a multiple of 16 (and at least 16: empty bindings are invalid).
pub fn padded(n: u64) -> u64 {
    n.div_ceil(16).max(1) * 16
}

/// Usage of every storage buffer. UNIFORM too: on CPU-type adapters a matvec reads its input
/// vector as a uniform binding of the same buffer another kernel wrote as storage.
const STORAGE_USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::UNIFORM)
    .union(wgpu::BufferUsages::COPY_DST)
    .union(wgpu::BufferUsages::COPY_SRC);

/// Texel formats of weight textures: 16-byte texels for quantized values, 4-byte texels for
/// scales and extra bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TexelKind {
    /// `rgba32uint`, read as `vec4<u32>`.
    Vec4,
    /// `r32uint`, read as `u32`.
    Scalar,
}

impl TexelKind {
    /// Bytes per texel.
    pub fn bytes(self) -> usize {
        match self {
            TexelKind::Vec4 => 16,
            TexelKind::Scalar => 4,
        }
    }

    fn format(self) -> wgpu::TextureFormat {
        match self {
            TexelKind::Vec4 => wgpu::TextureFormat::Rgba32Uint,
            TexelKind::Scalar => wgpu::TextureFormat::R32Uint,
        }
    }
}

impl GpuContext {
    /// Texels one weight texture can hold: `TEX_W` per row, as many rows as the adapter
    /// allows.
    pub fn max_texels(&self) -> u64 {
        (1u64 << TEX_SHIFT) * u64::from(self.limits.max_texture_dimension_2d)
    }

    /// A 2D texture holding `bytes` as a flat array of `kind` texels, `TEX_W` texels per row
    /// (see `weights_texture.wgsl`); the last row is padded with zeros.
    pub fn texture_from_bytes(
        &self,
        label: &str,
        bytes: &[u8],
        kind: TexelKind,
    ) -> Result<wgpu::TextureView> {
        let width = 1u32 << TEX_SHIFT;
        let row_bytes = width as usize * kind.bytes();
        let rows = bytes.len().div_ceil(row_bytes).max(1);
        if rows as u64 > u64::from(self.limits.max_texture_dimension_2d) {
            return Err(GpuError::BindingTooLarge {
                what: label.to_string(),
                bytes: bytes.len() as u64,
                limit: self.max_texels() * kind.bytes() as u64,
            });
        }
        let size = wgpu::Extent3d {
            width,
            height: rows as u32,
            depth_or_array_layers: 1,
        };
        let texture = self.device.create_texture(&wgpu::TextureDescriptor {
            label: Some(label),
            size,
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: kind.format(),
            usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
            view_formats: &[],
        });
        let layout = wgpu::TexelCopyBufferLayout {
            offset: 0,
            bytes_per_row: Some(row_bytes as u32),
            rows_per_image: None,
        };
        let dst = wgpu::TexelCopyTextureInfo {
            texture: &texture,
            mip_level: 0,
            origin: wgpu::Origin3d::ZERO,
            aspect: wgpu::TextureAspect::All,
        };
        // Whole rows straight from the caller's bytes; only the ragged last row is copied
        // to pad it.
        let whole = bytes.len() / row_bytes;
        if whole > 0 {
            self.queue.write_texture(
                dst,
                &bytes[..whole * row_bytes],
                layout,
                wgpu::Extent3d {
                    height: whole as u32,
                    ..size
                },
            );
        }
        if whole < rows {
            let mut tail = vec![0u8; row_bytes];
            tail[..bytes.len() - whole * row_bytes].copy_from_slice(&bytes[whole * row_bytes..]);
            self.queue.write_texture(
                wgpu::TexelCopyTextureInfo {
                    origin: wgpu::Origin3d {
                        x: 0,
                        y: whole as u32,
                        z: 0,
                    },
                    ..dst
                },
                &tail,
                layout,
                wgpu::Extent3d { height: 1, ..size },
            );
        }
        Ok(texture.create_view(&wgpu::TextureViewDescriptor::default()))
    }

    /// A storage buffer holding `bytes`, padded with zeros to 16 bytes.
    pub fn storage_from_bytes(&self, label: &str, bytes: &[u8]) -> Result<wgpu::Buffer> {
        let size = padded(bytes.len() as u64);
        self.check_binding(label, size)?;
        let buf = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage: STORAGE_USAGE,
            mapped_at_creation: false,
        });
        // write_buffer needs a multiple of 4 bytes; the padding stays zero.
        let whole = bytes.len() / 4 * 4;
        if whole > 0 {
            self.queue.write_buffer(&buf, 0, &bytes[..whole]);
        }
        if whole < bytes.len() {
            let mut tail = [0u8; 4];
            tail[..bytes.len() - whole].copy_from_slice(&bytes[whole..]);
            self.queue.write_buffer(&buf, whole as u64, &tail);
        }
        Ok(buf)
    }

    /// A zeroed storage buffer of `size` bytes (padded).
    pub fn storage_zeroed(&self, label: &str, size: u64) -> Result<wgpu::Buffer> {
        let size = padded(size);
        self.check_binding(label, size)?;
        Ok(self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage: STORAGE_USAGE,
            mapped_at_creation: false,
        }))
    }

    /// A uniform buffer holding a plain-old-data parameter struct.
    pub fn uniform<T: bytemuck::Pod>(&self, label: &str, value: &T) -> wgpu::Buffer {
        let bytes = bytemuck::bytes_of(value);
        let buf = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: padded(bytes.len() as u64),
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        self.queue.write_buffer(&buf, 0, bytes);
        buf
    }

    /// Fails with [`GpuError::BindingTooLarge`] when one binding of `size` bytes is over the
    /// adapter's limits; callers split larger tensors first.
    pub fn check_binding(&self, what: &str, size: u64) -> Result<()> {
        let limit = self.max_binding();
        if size > limit {
            return Err(GpuError::BindingTooLarge {
                what: what.to_string(),
                bytes: size,
                limit,
            });
        }
        Ok(())
    }

    /// Copies `size` bytes at `offset` of `src` (which needs COPY_SRC) back to the host.
    /// Submits its own copy; everything submitted before completes first.
    pub async fn read_bytes(&self, src: &wgpu::Buffer, offset: u64, size: u64) -> Result<Vec<u8>> {
        let size4 = size.div_ceil(4) * 4;
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size: size4.max(4),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut enc = self.encoder("readback");
        enc.copy_buffer_to_buffer(src, offset, &staging, 0, size4);
        self.submit(enc);
        self.map_read(&staging).await?;
        let out = {
            let view = staging
                .get_mapped_range(..)
                .map_err(|e| GpuError::Readback {
                    reason: format!("{e:?}"),
                })?;
            view[..size as usize].to_vec()
        };
        staging.unmap();
        Ok(out)
    }

    /// Maps a MAP_READ buffer for reading, after the submit that filled it, and resolves once
    /// the mapping is done. The caller reads `get_mapped_range` and unmaps.
    pub async fn map_read(&self, staging: &wgpu::Buffer) -> Result<()> {
        self.map_read_after(staging, None).await
    }

    /// [`GpuContext::map_read`] once submission `after` has run: natively the device is
    /// polled until that submission only, so later submissions (decode steps queued behind
    /// it) keep running while the caller reads; `None` waits for everything submitted.
    pub async fn map_read_after(
        &self,
        staging: &wgpu::Buffer,
        after: Option<&wgpu::SubmissionIndex>,
    ) -> Result<()> {
        let state: MapState = Arc::new(Mutex::new((None, None)));
        let cb_state = state.clone();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            if let Ok(mut s) = cb_state.lock() {
                s.0 = Some(r.map_err(|e| e.to_string()));
                if let Some(w) = s.1.take() {
                    w.wake();
                }
            }
        });
        // Natively the callback runs inside poll; on the web it runs from the event loop
        // and the future below yields until then.
        #[cfg(not(target_arch = "wasm32"))]
        self.wait_for(after)?;
        #[cfg(target_arch = "wasm32")]
        let _ = after;
        MapDone { state }
            .await
            .map_err(|reason| GpuError::Readback { reason })
    }

    /// Reads `len` values of `T` from the start of `src`, on every target.
    pub async fn read_vec_async<T: bytemuck::Pod>(
        &self,
        src: &wgpu::Buffer,
        len: usize,
    ) -> Result<Vec<T>> {
        let bytes = self
            .read_bytes(src, 0, (len * std::mem::size_of::<T>()) as u64)
            .await?;
        Ok(bytemuck::pod_collect_to_vec(&bytes))
    }

    /// Native blocking [`GpuContext::read_vec_async`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn read_vec<T: bytemuck::Pod>(&self, src: &wgpu::Buffer, len: usize) -> Result<Vec<T>> {
        pollster::block_on(self.read_vec_async(src, len))
    }
}

type MapState = Arc<Mutex<(Option<std::result::Result<(), String>>, Option<Waker>)>>;

/// Resolves once a buffer-map callback has run.
struct MapDone {
    state: MapState,
}

impl Future for MapDone {
    type Output = std::result::Result<(), String>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Ok(mut s) = self.state.lock() else {
            return Poll::Ready(Err("map state poisoned".into()));
        };
        match s.0.take() {
            Some(r) => Poll::Ready(r),
            None => {
                s.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}
