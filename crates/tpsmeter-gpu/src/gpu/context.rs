//! The wgpu device, chosen once: adapter selection, features, limits, and what kind of
//! adapter it is (a CPU rasteriser like lavapipe or SwiftShader wants different kernel shapes
//! from a real GPU; docs/performance.md has the measurements on each kind).

use std::sync::{Arc, Mutex};

use crate::error::{GpuError, Result};
use crate::gpu::pipelines::PipelineCache;

/// What shape of kernel the adapter wants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AdapterProfile {
    /// A CPU implementation (lavapipe, SwiftShader): several rows per invocation, contiguous
    /// reads per invocation, no workgroup barriers.
    Cpu,
    /// A real GPU: coalesced reads and workgroup or subgroup reductions.
    Gpu,
}

/// How to pick the adapter.
#[derive(Clone, Debug, Default)]
pub struct ContextOptions {
    /// Native only: use the first adapter whose name contains this (case-insensitive).
    pub adapter_name: Option<String>,
    /// Force a kernel profile instead of deriving it from the adapter type (for tests and
    /// benchmarks comparing variants).
    pub profile: Option<AdapterProfile>,
    /// Do not request `shader-f16` even if offered (measures the f32 path alone).
    pub disable_f16: bool,
    /// Treat storage bindings as limited to this many bytes (below the device's own limit):
    /// weights larger than it are split by rows across bindings, as on a browser or adapter
    /// whose limit is that low. For tests, and to try a model against another limit.
    pub max_binding: Option<u64>,
}

/// The first error wgpu reported outside any error scope; kept so that a caller polling
/// for it gets a typed error instead of a log line.
type ErrorSlot = Arc<Mutex<Option<GpuError>>>;

/// A device, its queue and everything derived from the adapter once.
#[derive(Debug)]
pub struct GpuContext {
    /// The logical device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// Adapter name, backend, type.
    pub info: wgpu::AdapterInfo,
    /// The limits the device was created with (all the adapter offers).
    pub limits: wgpu::Limits,
    /// The features the device was created with.
    pub features: wgpu::Features,
    /// Which kernel variants to use.
    pub profile: AdapterProfile,
    pub(crate) pipelines: PipelineCache,
    errors: ErrorSlot,
    /// Why the device was lost, once it was: kept (unlike `errors`) because a lost device
    /// stays lost, and every later call must say so rather than fail in some other way.
    lost: Arc<Mutex<Option<String>>>,
}

impl GpuContext {
    /// Whether the adapter is a CPU rasteriser (lavapipe, llvmpipe, SwiftShader, WARP): the
    /// CPU backend outruns it, so `auto` takes the CPU there.
    pub fn is_software(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }

    /// Picks an adapter and creates a device with every limit the adapter offers and the
    /// optional features (`shader-f16`, subgroups) the kernels can use.
    pub async fn new(opts: &ContextOptions) -> Result<Self> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
        let adapter = Self::pick_adapter(&instance, opts).await?;
        let info = adapter.get_info();
        let offered = adapter.features();
        let mut features = wgpu::Features::empty();
        if offered.contains(wgpu::Features::SHADER_F16) && !opts.disable_f16 {
            features |= wgpu::Features::SHADER_F16;
        }
        // wgpu hides subgroups on the web; natively they speed up GPU-profile reductions.
        if offered.contains(wgpu::Features::SUBGROUP) {
            features |= wgpu::Features::SUBGROUP;
        }
        let limits = adapter.limits();
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("tpsmeter"),
                required_features: features,
                required_limits: limits.clone(),
                ..Default::default()
            })
            .await
            .map_err(|e| GpuError::RequestDevice {
                adapter: info.name.clone(),
                reason: e.to_string(),
            })?;
        let errors: ErrorSlot = Arc::new(Mutex::new(None));
        let slot = errors.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            let err = match e {
                wgpu::Error::OutOfMemory { .. } => GpuError::OutOfMemory {
                    what: "running a command".into(),
                },
                other => GpuError::Validation {
                    message: other.to_string(),
                },
            };
            if let Ok(mut s) = slot.lock() {
                s.get_or_insert(err);
            }
        }));
        let slot = errors.clone();
        let lost: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
        let lost_slot = lost.clone();
        device.set_device_lost_callback(move |reason, msg| {
            let reason = format!("{reason:?}: {msg}");
            if let Ok(mut l) = lost_slot.lock() {
                l.get_or_insert(reason.clone());
            }
            if let Ok(mut s) = slot.lock() {
                s.get_or_insert(GpuError::DeviceLost { reason });
            }
        });
        let profile = opts.profile.unwrap_or(match info.device_type {
            wgpu::DeviceType::Cpu => AdapterProfile::Cpu,
            _ => AdapterProfile::Gpu,
        });
        let mut limits = limits;
        if let Some(cap) = opts.max_binding {
            limits.max_storage_buffer_binding_size =
                limits.max_storage_buffer_binding_size.min(cap.max(4));
        }
        Ok(GpuContext {
            device,
            queue,
            info,
            limits,
            features,
            profile,
            pipelines: PipelineCache::default(),
            errors,
            lost,
        })
    }

    /// Blocking [`GpuContext::new`] for native callers.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new_blocking(opts: &ContextOptions) -> Result<Self> {
        pollster::block_on(Self::new(opts))
    }

    #[cfg(not(target_arch = "wasm32"))]
    async fn pick_adapter(
        instance: &wgpu::Instance,
        opts: &ContextOptions,
    ) -> Result<wgpu::Adapter> {
        if let Some(want) = &opts.adapter_name {
            let want_lc = want.to_lowercase();
            let adapters = instance.enumerate_adapters(wgpu::Backends::all()).await;
            return adapters
                .into_iter()
                .find(|a| a.get_info().name.to_lowercase().contains(&want_lc))
                .ok_or_else(|| GpuError::NoAdapter {
                    wanted: Some(want.clone()),
                });
        }
        instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                ..Default::default()
            })
            .await
            .map_err(|_| GpuError::NoAdapter { wanted: None })
    }

    #[cfg(target_arch = "wasm32")]
    async fn pick_adapter(
        instance: &wgpu::Instance,
        _opts: &ContextOptions,
    ) -> Result<wgpu::Adapter> {
        instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                ..Default::default()
            })
            .await
            .map_err(|_| GpuError::NoAdapter { wanted: None })
    }

    /// Whether f16 activation kernels can run here.
    pub fn has_f16(&self) -> bool {
        self.features.contains(wgpu::Features::SHADER_F16)
    }

    /// Whether subgroup reductions can run here (never on the web through wgpu).
    pub fn has_subgroups(&self) -> bool {
        self.features.contains(wgpu::Features::SUBGROUP)
    }

    /// Threads a CPU-type adapter runs a dispatch's workgroups on, as far as this process can
    /// tell: Mesa's llvmpipe (lavapipe) starts one per CPU unless `LP_NUM_THREADS` says
    /// otherwise. 0 where unknown (in a browser: SwiftShader's pool is not visible), and
    /// for GPUs, where it does not apply.
    pub fn cpu_threads(&self) -> usize {
        if self.profile != AdapterProfile::Cpu {
            return 0;
        }
        #[cfg(not(target_arch = "wasm32"))]
        {
            if let Some(n) = std::env::var("LP_NUM_THREADS")
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok())
            {
                return n;
            }
            std::thread::available_parallelism().map_or(0, std::num::NonZeroUsize::get)
        }
        #[cfg(target_arch = "wasm32")]
        {
            0
        }
    }

    /// Whether this is Mesa's llvmpipe (lavapipe), where a texel fetch with lane-varying
    /// coordinates is a vector gather and the gathers are most of a long decode's attention:
    /// the split decode kernel then fetches once per GQA group (see
    /// `AttentionConfig::split_by_group`). SwiftShader, the other CPU adapter met here, ran
    /// that kernel slower.
    pub fn fetches_are_gathers(&self) -> bool {
        self.profile == AdapterProfile::Cpu && self.info.name.contains("llvmpipe")
    }

    /// Largest storage binding in bytes (the smaller of the binding and buffer limits).
    pub fn max_binding(&self) -> u64 {
        self.limits
            .max_storage_buffer_binding_size
            .min(self.limits.max_buffer_size)
    }

    /// The device-lost error, when the device was lost (a GPU process crash, a driver reset,
    /// `destroy`). Nothing on this context works afterwards: a new one must be created.
    pub fn lost(&self) -> Option<GpuError> {
        let reason = self.lost.lock().ok()?.clone()?;
        Some(GpuError::DeviceLost { reason })
    }

    /// Returns (and clears) the first uncaptured error or device loss since the last call.
    pub fn take_error(&self) -> Result<()> {
        match self.errors.lock() {
            Ok(mut s) => match s.take() {
                Some(e) => Err(e),
                None => Ok(()),
            },
            Err(_) => Ok(()),
        }
    }

    /// Submits encoded work.
    pub fn submit(&self, encoder: wgpu::CommandEncoder) -> wgpu::SubmissionIndex {
        self.queue.submit(Some(encoder.finish()))
    }

    /// A fresh command encoder.
    pub fn encoder(&self, label: &str) -> wgpu::CommandEncoder {
        self.device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) })
    }

    /// Native only: waits until all submitted work finished, surfacing device loss or
    /// uncaptured errors as a typed error.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn wait(&self) -> Result<()> {
        self.wait_for(None)
    }

    /// Native only: waits until submission `index` has run (all submitted work when
    /// `None`), surfacing device loss or uncaptured errors as a typed error. Work queued
    /// after `index` keeps running.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn wait_for(&self, index: Option<&wgpu::SubmissionIndex>) -> Result<()> {
        self.device
            .poll(wgpu::PollType::Wait {
                submission_index: index.cloned(),
                timeout: None,
            })
            .map_err(|e| GpuError::DeviceLost {
                reason: e.to_string(),
            })?;
        self.take_error()
    }
}
