//! Compiled compute pipelines, cached by (shader, entry point, defines) so each is built once
//! at load (shader compilation is slow on CPU adapters and in browsers) and reused for
//! every token.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::gpu::context::GpuContext;
use crate::gpu::defines::Defines;

/// A WGSL module the cache can build: the kernels name theirs
/// ([`crate::kernels::source::ShaderId`]); this layer only renders and compiles them, so it
/// does not depend on the kernels.
pub trait Shader: Copy + std::fmt::Debug {
    /// Label for debugging.
    fn name(&self) -> &'static str;
    /// The full WGSL text for `defines`.
    fn source(&self, defines: &Defines) -> String;
}

/// A module by its shader's debug form (unique per shader: a fieldless enum variant or one
/// with its fields) and its defines.
type ModuleKey = (String, Defines);
type Key = (String, &'static str, Defines);

/// Pipelines and modules already built on one device.
#[derive(Debug, Default)]
pub struct PipelineCache {
    modules: Mutex<HashMap<ModuleKey, wgpu::ShaderModule>>,
    pipelines: Mutex<HashMap<Key, Arc<wgpu::ComputePipeline>>>,
}

impl PipelineCache {
    /// Number of distinct pipelines built so far.
    pub fn len(&self) -> usize {
        self.pipelines.lock().map(|p| p.len()).unwrap_or(0)
    }

    /// Whether none has been built yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl GpuContext {
    /// The pipeline for `entry` of `shader` specialised by `defines`, built on first use.
    ///
    /// Bind group layouts are derived from the shader (`layout: None`): every binding an
    /// entry point uses appears in its group 0, and nothing else.
    pub fn pipeline(
        &self,
        shader: impl Shader,
        entry: &'static str,
        defines: Defines,
    ) -> Arc<wgpu::ComputePipeline> {
        let id = format!("{shader:?}");
        let key = (id.clone(), entry, defines);
        if let Some(p) = self
            .pipelines
            .pipelines
            .lock()
            .ok()
            .and_then(|m| m.get(&key).cloned())
        {
            return p;
        }
        let module = {
            let mut modules = match self.pipelines.modules.lock() {
                Ok(m) => m,
                Err(poisoned) => poisoned.into_inner(),
            };
            modules
                .entry((id, defines))
                .or_insert_with(|| {
                    let src = shader.source(&defines);
                    self.device
                        .create_shader_module(wgpu::ShaderModuleDescriptor {
                            label: Some(shader.name()),
                            source: wgpu::ShaderSource::Wgsl(src.into()),
                        })
                })
                .clone()
        };
        let pipeline = Arc::new(self.device.create_compute_pipeline(
            &wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: None,
                module: &module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            },
        ));
        if let Ok(mut m) = self.pipelines.pipelines.lock() {
            m.insert(key, pipeline.clone());
        }
        pipeline
    }
}
