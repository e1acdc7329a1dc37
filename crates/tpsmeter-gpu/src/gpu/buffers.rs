//! Buffer helpers: storage and uniform buffers from host data, and readback.
//!
//! Sizes are rounded up to 16 bytes so kernels may load `vec4`s at the tail.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use crate::error::{GpuError, Result};
use crate::gpu::context::GpuContext;

/// Rounds `n` up to a multiple of 16 (and at least 16: empty bindings are invalid).
pub fn padded(n: u64) -> u64 {
    n.div_ceil(16).max(1) * 16
}

impl GpuContext {
    /// A storage buffer holding `bytes`, padded with zeros to 16 bytes.
    pub fn storage_from_bytes(&self, label: &str, bytes: &[u8]) -> Result<wgpu::Buffer> {
        let size = padded(bytes.len() as u64);
        self.check_binding(label, size)?;
        let buf = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_DST
                | wgpu::BufferUsages::COPY_SRC,
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
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_DST
                | wgpu::BufferUsages::COPY_SRC,
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
        self.wait()?;
        MapDone { state }
            .await
            .map_err(|reason| GpuError::Readback { reason })
    }

    /// Native blocking readback of `len` values of `T` from the start of `src`.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn read_vec<T: bytemuck::Pod>(&self, src: &wgpu::Buffer, len: usize) -> Result<Vec<T>> {
        let bytes =
            pollster::block_on(self.read_bytes(src, 0, (len * std::mem::size_of::<T>()) as u64))?;
        Ok(bytemuck::pod_collect_to_vec(&bytes))
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
