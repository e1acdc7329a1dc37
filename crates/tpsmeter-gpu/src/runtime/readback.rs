//! The token readback: one staging buffer allocated at load and mapped once per step, 4 bytes
//! per sampled id (WebLLM reads one int32 per token; so do we; a batched step reads one per
//! sequence).

use crate::error::{GpuError, Result};
use crate::gpu::context::GpuContext;

/// Bytes read back per decoded token.
pub const TOKEN_BYTES: u64 = 4;

/// A MAP_READ buffer holding the ids sampled last (up to `capacity`).
#[derive(Debug)]
pub struct TokenReadback {
    staging: wgpu::Buffer,
    capacity: usize,
}

impl TokenReadback {
    /// Room for `capacity` ids (at least one).
    pub fn new(ctx: &GpuContext, capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Self {
            staging: ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("token readback"),
                size: TOKEN_BYTES * capacity as u64,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            capacity,
        }
    }

    /// Records the copy of the sampled id into the staging buffer.
    pub fn encode(&self, enc: &mut wgpu::CommandEncoder, token: &wgpu::Buffer) {
        self.encode_at(enc, token, 0);
    }

    /// Records the copy of a sampled id into place `index` (below the capacity).
    pub fn encode_at(&self, enc: &mut wgpu::CommandEncoder, token: &wgpu::Buffer, index: usize) {
        debug_assert!(index < self.capacity);
        enc.copy_buffer_to_buffer(
            token,
            0,
            &self.staging,
            TOKEN_BYTES * index as u64,
            TOKEN_BYTES,
        );
    }

    /// Maps the staging buffer after the submit that copied into it and returns the id.
    pub async fn read(&self, ctx: &GpuContext) -> Result<u32> {
        let ids = self.read_n(ctx, 1).await?;
        Ok(ids[0])
    }

    /// [`TokenReadback::read`] for the first `n` places (at most the capacity).
    pub async fn read_n(&self, ctx: &GpuContext, n: usize) -> Result<Vec<u32>> {
        self.read_n_after(ctx, n, None).await
    }

    /// The id copied here by submission `after`, waiting natively for that submission only
    /// (steps queued behind it keep the GPU busy meanwhile).
    pub async fn read_after(&self, ctx: &GpuContext, after: &wgpu::SubmissionIndex) -> Result<u32> {
        let ids = self.read_n_after(ctx, 1, Some(after)).await?;
        Ok(ids[0])
    }

    async fn read_n_after(
        &self,
        ctx: &GpuContext,
        n: usize,
        after: Option<&wgpu::SubmissionIndex>,
    ) -> Result<Vec<u32>> {
        let n = n.clamp(1, self.capacity);
        ctx.map_read_after(&self.staging, after).await?;
        let ids = {
            let view = self
                .staging
                .get_mapped_range(..)
                .map_err(|e| GpuError::Readback {
                    reason: format!("{e:?}"),
                })?;
            view.chunks_exact(4)
                .take(n)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect()
        };
        self.staging.unmap();
        ctx.take_error()?;
        Ok(ids)
    }
}
