//! Compiled compute pipelines, cached by (shader, entry point, defines) so each is built once
//! at load (shader compilation is slow on CPU adapters and in browsers) and reused for
//! every token. Pipelines of one shader and defines share one compiled module.
//!
//! Natively wgpu compiles a pipeline inside `create_compute_pipeline`. On the web the call
//! returns at once and the browser compiles in its GPU process, so the Worker never blocks
//! on it; each creation there is wrapped in a validation error scope, and the scope's pop
//! resolves once the browser has handled (compiled) that pipeline. The model's load awaits
//! those ([`GpuContext::confirm_pipelines`]) to report progress and to surface a failed
//! compilation as an error of the load. Why not `createComputePipelineAsync`: wgpu 30 has
//! no async creation, and a pipeline made outside wgpu cannot be handed to it; one made
//! twice (async, then through wgpu) with a derived layout would be compiled twice, since
//! derived layouts are unique to their pipeline.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::Result;
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

/// Resolves once the browser has handled one pipeline's creation, with its validation
/// error if it failed (web only).
#[cfg(target_arch = "wasm32")]
type Fence = std::pin::Pin<Box<dyn std::future::Future<Output = Option<wgpu::Error>>>>;

/// Pipelines created whose compilation the browser has not confirmed yet, oldest first.
#[derive(Default)]
struct Unconfirmed {
    #[cfg(target_arch = "wasm32")]
    fences: std::collections::VecDeque<(&'static str, Fence)>,
}

impl std::fmt::Debug for Unconfirmed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unconfirmed")
            .field("pipelines", &self.len())
            .finish()
    }
}

impl Unconfirmed {
    fn len(&self) -> usize {
        #[cfg(target_arch = "wasm32")]
        return self.fences.len();
        #[cfg(not(target_arch = "wasm32"))]
        0
    }
}

/// Pipelines and modules already built on one device.
#[derive(Debug, Default)]
pub struct PipelineCache {
    modules: Mutex<HashMap<ModuleKey, wgpu::ShaderModule>>,
    pipelines: Mutex<HashMap<Key, Arc<wgpu::ComputePipeline>>>,
    unconfirmed: Mutex<Unconfirmed>,
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

    /// Number of distinct shader modules compiled so far (pipelines of one shader and
    /// defines share one).
    pub fn modules(&self) -> usize {
        self.modules.lock().map(|m| m.len()).unwrap_or(0)
    }

    /// Pipelines built whose compilation is confirmed: all of them natively; on the web,
    /// those the browser has finished ([`GpuContext::confirm_pipelines`]).
    pub fn confirmed(&self) -> usize {
        let pending = self.unconfirmed.lock().map(|u| u.len()).unwrap_or(0);
        self.len().saturating_sub(pending)
    }
}

impl GpuContext {
    /// Distinct compute pipelines made on this device so far.
    pub fn pipelines_built(&self) -> usize {
        self.pipelines.len()
    }

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
        // On the web the browser reports this creation's errors to this scope.
        #[cfg(target_arch = "wasm32")]
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
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
        #[cfg(target_arch = "wasm32")]
        if let Ok(mut u) = self.pipelines.unconfirmed.lock() {
            u.fences.push_back((shader.name(), Box::pin(scope.pop())));
        }
        if let Ok(mut m) = self.pipelines.pipelines.lock() {
            m.insert(key, pipeline.clone());
        }
        pipeline
    }

    /// Waits until the browser has compiled every pipeline created so far, calling
    /// `on_each` after each (in creation order); natively they are compiled already and
    /// this returns at once. A pipeline that failed to compile is a
    /// [`crate::GpuError::Validation`] naming its kernel; a device lost meanwhile,
    /// [`crate::GpuError::DeviceLost`]; `on_each` returning `false` stops the wait with
    /// [`crate::GpuError::Cancelled`] (what is still compiling in the browser finishes
    /// there).
    pub async fn confirm_pipelines(&self, on_each: &mut dyn FnMut() -> bool) -> Result<()> {
        #[cfg(target_arch = "wasm32")]
        if self.pipelines.confirmed() == self.pipelines.len() {
            // Nothing compiling: a round trip through the GPU process all the same, so that
            // the Worker's event loop runs between graphs (a cancel message gets through).
            let _ = self
                .device
                .push_error_scope(wgpu::ErrorFilter::Validation)
                .pop()
                .await;
        }
        #[cfg(target_arch = "wasm32")]
        loop {
            // The lock is not held across the await.
            let next = match self.pipelines.unconfirmed.lock() {
                Ok(mut u) => u.fences.pop_front(),
                Err(_) => None,
            };
            let Some((name, fence)) = next else { break };
            if let Some(e) = fence.await {
                return Err(crate::error::GpuError::Validation {
                    message: format!("compiling the {name} kernel: {e}"),
                });
            }
            if let Some(lost) = self.lost() {
                return Err(lost);
            }
            if !on_each() {
                return Err(crate::error::GpuError::compile_cancelled());
            }
        }
        #[cfg(not(target_arch = "wasm32"))]
        let _ = on_each;
        self.take_error()
    }
}
