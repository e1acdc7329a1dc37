//! Activation tensors: a storage buffer with a length and an element type. Shapes beyond
//! the length are the ops' business (each op checks the sizes it needs).

use crate::error::{GpuError, Result};
use crate::gpu::context::GpuContext;
use crate::gpu::defines::DType;

/// A flat run of f32 or f16 values in a storage buffer.
#[derive(Debug, Clone)]
pub struct Tensor {
    /// The buffer (STORAGE | COPY_SRC | COPY_DST, size padded to 16 bytes).
    pub buffer: wgpu::Buffer,
    /// Number of elements.
    pub len: usize,
    /// Element type.
    pub dtype: DType,
}

impl Tensor {
    /// A zeroed tensor.
    pub fn zeros(ctx: &GpuContext, label: &str, len: usize, dtype: DType) -> Result<Self> {
        ctx.check_dtype(dtype, label)?;
        Ok(Tensor {
            buffer: ctx.storage_zeroed(label, (len * dtype.size()) as u64)?,
            len,
            dtype,
        })
    }

    /// A zeroed tensor whose buffer runs `slack` bytes past its `len` values, so that a
    /// kernel may bind a fixed-size window from any of them (the CPU-type matmul's uniform
    /// ranges: one pipeline then serves every token count, see `kernels::matmul`).
    pub fn zeros_with_slack(
        ctx: &GpuContext,
        label: &str,
        len: usize,
        dtype: DType,
        slack: u64,
    ) -> Result<Self> {
        ctx.check_dtype(dtype, label)?;
        Ok(Tensor {
            buffer: ctx.storage_zeroed(label, (len * dtype.size()) as u64 + slack)?,
            len,
            dtype,
        })
    }

    /// A tensor holding `values`, converted to `dtype`.
    pub fn from_f32(ctx: &GpuContext, label: &str, values: &[f32], dtype: DType) -> Result<Self> {
        ctx.check_dtype(dtype, label)?;
        let buffer = match dtype {
            DType::F32 => ctx.storage_from_bytes(label, bytemuck::cast_slice(values))?,
            DType::F16 => {
                let h: Vec<half::f16> = values.iter().map(|&v| half::f16::from_f32(v)).collect();
                ctx.storage_from_bytes(label, bytemuck::cast_slice(&h))?
            }
        };
        Ok(Tensor {
            buffer,
            len: values.len(),
            dtype,
        })
    }

    /// A tensor of u32 values (token ids, positions), typed as f32-sized storage.
    pub fn from_u32(ctx: &GpuContext, label: &str, values: &[u32]) -> Result<Self> {
        Ok(Tensor {
            buffer: ctx.storage_from_bytes(label, bytemuck::cast_slice(values))?,
            len: values.len(),
            dtype: DType::F32,
        })
    }

    /// Reads the tensor back as f32 (f16 values widened), on every target.
    pub async fn read_f32_async(&self, ctx: &GpuContext) -> Result<Vec<f32>> {
        match self.dtype {
            DType::F32 => ctx.read_vec_async::<f32>(&self.buffer, self.len).await,
            DType::F16 => {
                let bytes = ctx
                    .read_bytes(&self.buffer, 0, (self.len * 2) as u64)
                    .await?;
                let h: Vec<half::f16> = bytemuck::pod_collect_to_vec(&bytes);
                Ok(h.iter().map(|v| v.to_f32()).collect())
            }
        }
    }

    /// Native blocking [`Tensor::read_f32_async`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn read_f32(&self, ctx: &GpuContext) -> Result<Vec<f32>> {
        pollster::block_on(self.read_f32_async(ctx))
    }

    /// Checks that this tensor has at least `len` elements of type `dtype`.
    pub fn expect(&self, op: &'static str, name: &str, len: usize, dtype: DType) -> Result<()> {
        if self.len < len || self.dtype != dtype {
            return Err(GpuError::ShapeMismatch {
                op,
                detail: format!(
                    "{name} must hold {len} {dtype:?} values, has {} {:?}",
                    self.len, self.dtype
                ),
            });
        }
        Ok(())
    }
}
