//! The 4-byte token readback: one staging buffer allocated at load and mapped once per
//! token (WebLLM reads one int32 per token; so do we).

use crate::error::{GpuError, Result};
use crate::gpu::context::GpuContext;

/// Bytes read back per decoded token.
pub const TOKEN_BYTES: u64 = 4;

/// A MAP_READ buffer holding the last sampled id.
#[derive(Debug)]
pub struct TokenReadback {
    staging: wgpu::Buffer,
}

impl TokenReadback {
    pub fn new(ctx: &GpuContext) -> Self {
        Self {
            staging: ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("token readback"),
                size: TOKEN_BYTES,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
        }
    }

    /// Records the copy of the sampled id into the staging buffer.
    pub fn encode(&self, enc: &mut wgpu::CommandEncoder, token: &wgpu::Buffer) {
        enc.copy_buffer_to_buffer(token, 0, &self.staging, 0, TOKEN_BYTES);
    }

    /// Maps the staging buffer after the submit that copied into it and returns the id.
    pub async fn read(&self, ctx: &GpuContext) -> Result<u32> {
        ctx.map_read(&self.staging).await?;
        let id = {
            let view = self
                .staging
                .get_mapped_range(..)
                .map_err(|e| GpuError::Readback {
                    reason: format!("{e:?}"),
                })?;
            let mut b = [0u8; 4];
            b.copy_from_slice(&view[..4]);
            u32::from_le_bytes(b)
        };
        self.staging.unmap();
        ctx.take_error()?;
        Ok(id)
    }
}
