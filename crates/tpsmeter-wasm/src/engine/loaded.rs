//! [`Loaded`]: a model on whichever backend this build has, the GPU's (`gpu` feature,
//! WebGPU) or the CPU's (`cpu` feature, wasm SIMD). The page loads one build or the other
//! (the CPU's only when it is used), and the exported classes are the same in both, so the
//! Worker drives either alike. What differs is here: the device-loss check, `info`, and the
//! work counters of a generation.

use serde::Serialize;
#[cfg(feature = "cpu")]
use tpsmeter_gpu::cpu::CpuModel;
use tpsmeter_gpu::engine::Engine;
use tpsmeter_gpu::runtime::StepCost;
#[cfg(feature = "gpu")]
use tpsmeter_gpu::{GpuError, gpu::context::AdapterProfile, runtime::GpuModel, runtime::StepStats};

/// A loaded engine.
#[derive(Debug)]
pub(crate) enum Loaded {
    #[cfg(feature = "gpu")]
    Gpu(Box<Engine<GpuModel>>),
    #[cfg(feature = "cpu")]
    Cpu(Box<Engine<CpuModel>>),
}

/// Runs `$body` with `$e` bound to the engine, whatever its backend.
macro_rules! with_engine {
    ($loaded:expr, $e:ident => $body:expr) => {
        match $loaded {
            #[cfg(feature = "gpu")]
            $crate::engine::loaded::Loaded::Gpu($e) => $body,
            #[cfg(feature = "cpu")]
            $crate::engine::loaded::Loaded::Cpu($e) => $body,
        }
    };
}
pub(crate) use with_engine;

/// Work counters read before a generation, to report what it did (one per generation: its
/// size does not matter).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Mark {
    /// The counters, the cost log's mark, and the pipelines built so far.
    #[cfg(feature = "gpu")]
    Gpu(StepStats, tpsmeter_gpu::runtime::CostMark, usize),
    #[cfg(feature = "cpu")]
    Cpu(tpsmeter_gpu::cpu::CpuStats),
}

/// What one generation cost the backend (the result's counter fields).
#[derive(Debug, Default, Serialize)]
pub(crate) struct Work {
    /// GPU work for this generation (prompt and decode); 0 on the CPU.
    pub submits: u64,
    pub dispatches: u64,
    pub readback_bytes: u64,
    /// What the host did per decoded token (`null` when none was decoded, and on the CPU):
    /// the engine's counters and median encode+submit time.
    pub per_token_cost: Option<StepCost>,
    /// The same per prompt chunk (`null` when the whole prompt was reused, and on the CPU).
    pub prefill_cost: Option<StepCost>,
    /// Forward passes the CPU ran (a prompt chunk or a decoded token each); 0 on the GPU.
    pub cpu_passes: u64,
    /// GPU pipelines compiled during this generation: 0 once the load compiled them all.
    pub pipelines_compiled: u64,
}

impl Loaded {
    /// Why nothing can run any more: the GPU device was lost. Never on the CPU.
    #[cfg(feature = "gpu")]
    pub(crate) fn lost(&self) -> Option<GpuError> {
        match self {
            Loaded::Gpu(e) => e.model().context().lost(),
            #[cfg(feature = "cpu")]
            Loaded::Cpu(_) => None,
        }
    }

    #[cfg(not(feature = "gpu"))]
    pub(crate) fn lost(&self) -> Option<tpsmeter_gpu::GpuError> {
        None
    }

    /// The backend, its limits and the per-token figures the page shows, as JSON.
    pub(crate) fn info(&self) -> serde_json::Value {
        let vocab = with_engine!(self, e => e.tokenizer().vocab_size());
        match self {
            #[cfg(feature = "gpu")]
            Loaded::Gpu(e) => {
                let model = e.model();
                let ctx = model.context();
                serde_json::json!({
                    "backend": "webgpu",
                    "adapter": ctx.info.name,
                    "graphicsBackend": format!("{:?}", ctx.info.backend),
                    "profile": match ctx.profile { AdapterProfile::Cpu => "cpu", AdapterProfile::Gpu => "gpu" },
                    "shaderF16": ctx.has_f16(),
                    "maxStorageBindingBytes": ctx.max_binding(),
                    "maxContext": model.max_context(),
                    "weightBytesPerToken": model.weight_bytes_per_token(),
                    "dispatchesPerToken": model.dispatches_per_token(),
                    "inFlight": model.in_flight(),
                    "vocabSize": vocab,
                    "synthetic": e.is_synthetic(),
                })
            }
            #[cfg(feature = "cpu")]
            Loaded::Cpu(e) => {
                let model = e.model();
                serde_json::json!({
                    "backend": "cpu",
                    "adapter": "CPU (WebAssembly)",
                    "threads": model.threads(),
                    "simd": model.simd().name(),
                    "maxContext": model.max_context(),
                    "weightBytesPerToken": model.weight_bytes_per_token(),
                    "residentBytes": model.resident_bytes(),
                    "vocabSize": vocab,
                    "synthetic": e.is_synthetic(),
                })
            }
        }
    }

    pub(crate) fn mark(&self) -> Mark {
        match self {
            #[cfg(feature = "gpu")]
            Loaded::Gpu(e) => Mark::Gpu(
                e.model().stats(),
                e.model().cost_mark(),
                e.model().context().pipelines_built(),
            ),
            #[cfg(feature = "cpu")]
            Loaded::Cpu(e) => Mark::Cpu(e.model().stats()),
        }
    }

    /// What the backend did since `mark`.
    pub(crate) fn work_since(&self, mark: &Mark) -> Work {
        match (self, mark) {
            #[cfg(feature = "gpu")]
            (Loaded::Gpu(e), Mark::Gpu(before, cost_mark, pipelines)) => {
                let after = e.model().stats();
                let cost = e.model().cost_since(cost_mark);
                Work {
                    submits: after.submits - before.submits,
                    dispatches: after.dispatches - before.dispatches,
                    readback_bytes: after.readback_bytes - before.readback_bytes,
                    per_token_cost: cost.decode,
                    prefill_cost: cost.prefill,
                    cpu_passes: 0,
                    pipelines_compiled: (e.model().context().pipelines_built() - pipelines) as u64,
                }
            }
            #[cfg(feature = "cpu")]
            (Loaded::Cpu(e), Mark::Cpu(before)) => Work {
                cpu_passes: e.model().stats().passes - before.passes,
                ..Work::default()
            },
            #[allow(unreachable_patterns)]
            _ => Work::default(),
        }
    }
}
