//! A prepared dispatch: pipeline, bind group and grid, built once at load and encoded every
//! token (no per-token allocation or bind-group creation).

use std::sync::Arc;

use crate::error::{GpuError, Result};
use crate::gpu::context::GpuContext;
use crate::gpu::defines::{DType, Defines};
use crate::kernels::source::ShaderId;

/// One compute dispatch ready to encode.
#[derive(Debug, Clone)]
pub struct Dispatch {
    pub(crate) pipeline: Arc<wgpu::ComputePipeline>,
    pub(crate) bind_group: wgpu::BindGroup,
    pub(crate) workgroups: [u32; 3],
    /// The kernel's name, for per-kernel profiles.
    pub label: &'static str,
}

impl Dispatch {
    /// Records this dispatch into a compute pass.
    pub fn encode(&self, pass: &mut wgpu::ComputePass<'_>) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.dispatch_workgroups(self.workgroups[0], self.workgroups[1], self.workgroups[2]);
    }
}

/// Encodes `dispatches`, in order, in one compute pass of `enc`.
pub fn encode_pass(enc: &mut wgpu::CommandEncoder, label: &str, dispatches: &[&Dispatch]) {
    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: Some(label),
        timestamp_writes: None,
    });
    for d in dispatches {
        d.encode(&mut pass);
    }
}

/// Encodes `dispatches` in one compute pass of a new command buffer and submits it.
pub fn run(ctx: &GpuContext, dispatches: &[&Dispatch]) {
    let mut enc = ctx.encoder("run");
    encode_pass(&mut enc, "run", dispatches);
    ctx.submit(enc);
}

impl GpuContext {
    /// Spreads `n` workgroups over x and y when `n` exceeds the per-dimension limit;
    /// kernels rebuild the linear index as `wid.x + wid.y * nwg.x`.
    pub fn grid(&self, n: u32) -> [u32; 3] {
        let max = self.limits.max_compute_workgroups_per_dimension.max(1);
        if n <= max {
            [n.max(1), 1, 1]
        } else {
            [max, n.div_ceil(max), 1]
        }
    }

    /// A bind group for group 0 of `pipeline` from (binding, buffer) pairs.
    pub fn bind(
        &self,
        pipeline: &wgpu::ComputePipeline,
        entries: &[(u32, &wgpu::Buffer)],
    ) -> wgpu::BindGroup {
        self.bind_resources(
            pipeline,
            entries
                .iter()
                .map(|(binding, buf)| (*binding, buf.as_entire_binding()))
                .collect(),
        )
    }

    /// A bind group for group 0 of `pipeline` from (binding, resource) pairs: buffer ranges
    /// and texture views as well as whole buffers.
    pub fn bind_resources(
        &self,
        pipeline: &wgpu::ComputePipeline,
        entries: Vec<(u32, wgpu::BindingResource<'_>)>,
    ) -> wgpu::BindGroup {
        let layout = pipeline.get_bind_group_layout(0);
        let entries: Vec<wgpu::BindGroupEntry<'_>> = entries
            .into_iter()
            .map(|(binding, resource)| wgpu::BindGroupEntry { binding, resource })
            .collect();
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &layout,
            entries: &entries,
        })
    }

    /// Builds a dispatch of `entry` of `shader`: `params` at binding 0, then `buffers`.
    pub fn prepare<P: bytemuck::Pod>(
        &self,
        shader: ShaderId,
        entry: &'static str,
        defines: Defines,
        params: &P,
        buffers: &[(u32, &wgpu::Buffer)],
        workgroups: [u32; 3],
    ) -> Dispatch {
        let pipeline = self.pipeline(shader, entry, defines);
        let ubuf = self.uniform(entry, params);
        let mut entries = vec![(0, &ubuf)];
        entries.extend_from_slice(buffers);
        let bind_group = self.bind(&pipeline, &entries);
        Dispatch {
            pipeline,
            bind_group,
            workgroups,
            label: shader.name(),
        }
    }

    /// Fails when `dtype` needs a feature this device lacks.
    pub fn check_dtype(&self, dtype: DType, what: &str) -> Result<()> {
        if dtype == DType::F16 && !self.has_f16() {
            return Err(GpuError::MissingFeature {
                feature: "shader-f16",
                what: what.to_string(),
            });
        }
        Ok(())
    }
}
