//! Warm from the first answer: every graph a model can run is prepared, and every pipeline
//! compiled and run once, while the model loads ([`GpuModel::compile`]).
//!
//! Why: graphs made on first use put their pipelines' compilation into the first answer's
//! time to first token, and a meter then reports that, not the engine's speed. Measured on
//! lavapipe before this existed (issue 40): Gemma-3-270M's first TTFT 6.8 s against 134 ms
//! once warm, SmolLM2-135M's 743 against 245 ms with the driver's disk cache warm; in
//! Chromium on SwiftShader SmolLM2's 1,971 against 862 ms.
//!
//! What it does, in order:
//! 1. the decode step's graph, made with the model, is confirmed compiled;
//! 2. each other graph is prepared in turn: the prompt chunks' (every power of two up to
//!    [`PREFILL_CHUNK`]), and with more than one slot the batched steps' (every batch size,
//!    every mixed-step size up to [`ModelOptions::step_tokens`], every head). Natively the
//!    pipelines compile as they are made; on the web the browser compiles them in its GPU
//!    process, and each graph's are awaited before the next is made, so that a cancel stops
//!    the compilation after the current graph rather than leaving the rest queued;
//! 3. one priming pass dispatches each distinct pipeline once, one workgroup each, and waits
//!    for it. Drivers may finish compiling at a pipeline's first dispatch (llvmpipe JITs its
//!    shader variant there: 25-300 ms of the first answer on lavapipe), and some clear
//!    resources on first use; this moves that to the load as well.
//!
//! Priming writes nothing a generation reads before writing it: activations and scratch are
//! rewritten by every step, cache rows are written by a step before its attention reads
//! them, and the first generation restarts the sampler (its state is reset whenever a step
//! does not continue the last one).
//!
//! [`PREFILL_CHUNK`]: super::gpu_model::PREFILL_CHUNK
//! [`ModelOptions::step_tokens`]: tpsmeter_model::options::ModelOptions::step_tokens

use std::sync::Arc;

use serde::Serialize;

use crate::error::{GpuError, Result};
use crate::kernels::Dispatch;

use super::gpu_model::{GpuModel, PREFILL_CHUNK};

/// A graph prepared at load besides the decode step's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Graph {
    /// A prompt chunk (or a mixed batched step) of this many tokens.
    Prefill(usize),
    /// A batched decode step of this many sequences: layers and head.
    Batch(usize),
    /// The output head of a mixed step whose first rows this many sample.
    StepHead(usize),
}

/// How far a load's compilation is, for a progress bar.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompileProgress {
    /// Graphs prepared, the decode step's first.
    pub graphs_done: usize,
    /// Graphs this model prepares.
    pub graphs: usize,
    /// Pipelines compiled so far (on the web: confirmed by the browser).
    pub pipelines: usize,
}

/// What a load's compilation did and how long it took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompileReport {
    /// Distinct compute pipelines made.
    pub pipelines: usize,
    /// Distinct shader modules compiled (pipelines of one shader and defines share one).
    pub shader_modules: usize,
    /// Graphs prepared.
    pub graphs: usize,
    /// Milliseconds preparing the graphs and compiling their pipelines, the decode step's
    /// included when it was timed ([`GpuModel::compile`]).
    pub compile_ms: f64,
    /// Milliseconds of the priming pass.
    pub prime_ms: f64,
}

impl GpuModel {
    /// The graphs [`GpuModel::compile`] prepares after the decode step's, in order.
    fn graph_plan(&self) -> Vec<Graph> {
        let mut plan = Vec::new();
        let mut c = PREFILL_CHUNK;
        while c >= 1 {
            plan.push(Graph::Prefill(c));
            c /= 2;
        }
        if self.kv.slots > 1 {
            plan.extend((2..=self.kv.slots).map(Graph::Batch));
            let step_tokens = self.step_tokens.min(PREFILL_CHUNK);
            plan.extend(
                (1..=step_tokens)
                    .filter(|n| !n.is_power_of_two())
                    .map(Graph::Prefill),
            );
            plan.extend((1..=self.kv.slots).map(Graph::StepHead));
        }
        plan
    }

    fn prepare(&mut self, g: Graph) -> Result<()> {
        match g {
            Graph::Prefill(n) => self.prefill_graph(n),
            Graph::Batch(n) => self.batch_graph(n),
            Graph::StepHead(k) => self.step_head(k),
        }
    }

    /// Prepares every graph this model can run and compiles and primes their pipelines (see
    /// the module's docs), calling `progress` before each graph, after each pipeline the
    /// browser confirms, and at the end; `progress` returning `false` stops with
    /// [`GpuError::Cancelled`]. `clock` reads milliseconds; `started_ms`, when the decode
    /// step's graph began on it (counted as compilation), `None` for now. A second call
    /// prepares nothing new and primes again.
    pub async fn compile(
        &mut self,
        clock: &mut dyn FnMut() -> f64,
        started_ms: Option<f64>,
        progress: &mut dyn FnMut(CompileProgress) -> bool,
    ) -> Result<CompileReport> {
        let t0 = match started_ms {
            Some(t) => t,
            None => clock(),
        };
        let plan = self.graph_plan();
        let ctx = self.ctx.clone();
        let graphs = plan.len() + 1;
        let mut tell = |graphs_done: usize| {
            progress(CompileProgress {
                graphs_done,
                graphs,
                pipelines: ctx.pipelines.confirmed(),
            })
        };
        // The decode step's graph was made with the model.
        ctx.confirm_pipelines(&mut || tell(0)).await?;
        for (i, g) in plan.into_iter().enumerate() {
            if !tell(i + 1) {
                return Err(GpuError::compile_cancelled());
            }
            self.prepare(g)?;
            ctx.take_error()?;
            ctx.confirm_pipelines(&mut || tell(i + 1)).await?;
        }
        if !tell(graphs) {
            return Err(GpuError::compile_cancelled());
        }
        let t1 = clock();
        self.prime().await?;
        let t2 = clock();
        let report = CompileReport {
            pipelines: ctx.pipelines.len(),
            shader_modules: ctx.pipelines.modules(),
            graphs,
            compile_ms: t1 - t0,
            prime_ms: t2 - t1,
        };
        self.compiled = Some(report);
        Ok(report)
    }

    /// Native: [`GpuModel::compile`] timed on an `Instant`, blocking, without progress.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn compile_blocking(
        &mut self,
        started: Option<std::time::Instant>,
    ) -> Result<CompileReport> {
        let t0 = started.unwrap_or_else(std::time::Instant::now);
        let mut clock = move || t0.elapsed().as_secs_f64() * 1e3;
        pollster::block_on(self.compile(&mut clock, Some(0.0), &mut |_| true))
    }

    /// What the load's compilation did, once [`GpuModel::compile`] ran.
    pub fn compile_report(&self) -> Option<CompileReport> {
        self.compiled
    }

    /// Every graph prepared so far.
    fn graphs(&self) -> Vec<&[Dispatch]> {
        let mut out: Vec<&[Dispatch]> = vec![
            &self.decode,
            &self.head,
            std::slice::from_ref(self.sampler.dispatch()),
        ];
        out.extend(self.decode_short.as_deref());
        out.extend(self.prefill.values().map(Vec::as_slice));
        if let Some(b) = &self.batch {
            for (layers, head) in b.graphs.values() {
                out.push(layers);
                out.push(head);
            }
            out.extend(b.step_heads.values().map(Vec::as_slice));
        }
        out
    }

    /// Dispatches each distinct pipeline once (one workgroup, with the bind group of its
    /// first use) and waits for it. Not counted in [`GpuModel::stats`]: it is the load's.
    async fn prime(&mut self) -> Result<()> {
        let mut once: Vec<Dispatch> = Vec::new();
        for graph in self.graphs() {
            for d in graph {
                if !once.iter().any(|o| Arc::ptr_eq(&o.pipeline, &d.pipeline)) {
                    once.push(Dispatch {
                        workgroups: [1, 1, 1],
                        ..d.clone()
                    });
                }
            }
        }
        let refs: Vec<&Dispatch> = once.iter().collect();
        crate::kernels::dispatch::run(&self.ctx, &refs);
        // Reading 4 bytes back waits for the pass, on every target.
        self.ctx.read_bytes(&self.sampler.token, 0, 4).await?;
        self.ctx.take_error()
    }
}
