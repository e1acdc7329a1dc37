//! The GPU worker: one thread owns the engine and decodes the requests in flight as one batch
//! (continuous batching, see `scheduler.rs`); requests beyond its slots wait in arrival order.

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Instant;

use tokio::sync::mpsc::UnboundedSender;
use tpsmeter_gpu::chat::ChatMessage;
use tpsmeter_gpu::generate::{GenerateParams, StopReason};
use tpsmeter_gpu::kernels::SamplerConfig;

use super::scheduler::Scheduler;
use crate::run::RunFigures;

/// What to run the model on.
#[derive(Debug, Clone)]
pub enum Prompt {
    Chat(Vec<ChatMessage>),
    Text(String),
}

/// One queued request.
#[derive(Debug)]
pub struct Job {
    pub prompt: Prompt,
    pub params: GenerateParams,
    pub sampling: SamplerConfig,
    /// Where the worker sends the request's events; a closed receiver cancels the request.
    pub events: UnboundedSender<Event>,
    /// When the server received the request (queueing is measured from here).
    pub arrived: Instant,
}

/// What the worker reports about a request.
#[derive(Debug)]
pub enum Event {
    /// A piece of text (never empty).
    Text(String),
    /// The request finished.
    Done(Summary),
    /// The request failed before or while generating.
    Failed(String),
}

/// The end of a request.
#[derive(Debug, Clone)]
pub struct Summary {
    pub prompt_tokens: usize,
    /// Generated tokens, the end-of-generation token excluded.
    pub completion_tokens: usize,
    pub stop: StopReason,
    pub figures: RunFigures,
    /// Seconds the request waited for a free slot before its prompt ran.
    pub queued_s: f64,
}

/// A handle to the worker thread.
#[derive(Debug, Clone)]
pub struct Worker {
    jobs: mpsc::Sender<Job>,
    /// `general.name` of the model.
    pub model_name: String,
    /// Adapter the model runs on.
    pub adapter: String,
    /// Requests decoded together at most.
    pub slots: usize,
    /// KV cache positions per request.
    pub context: usize,
}

/// How the worker lays out the KV cache.
#[derive(Debug, Clone, Copy)]
pub struct KvPlan {
    /// Requests decoded together (slots of the cache).
    pub slots: usize,
    /// Positions per request.
    pub context: usize,
    /// Most bytes the whole cache may take.
    pub budget_bytes: u64,
}

impl Worker {
    /// Starts the thread and loads the model there; returns once it is ready.
    pub fn start(model: PathBuf, plan: KvPlan, adapter: Option<String>) -> anyhow::Result<Self> {
        let (jobs, rx) = mpsc::channel::<Job>();
        type Ready = anyhow::Result<(String, String, usize, usize)>;
        let (ready_tx, ready_rx) = mpsc::channel::<Ready>();
        std::thread::Builder::new()
            .name("tpsmeter-gpu".into())
            .spawn(move || {
                // Every graph a request can need is made before the server answers, so no
                // first request of a size pays for it (nor stalls the others).
                let loaded = load_for_serving(&model, plan, adapter).and_then(|mut e| {
                    let m = e.model_mut();
                    m.warm_prefill()?;
                    m.warm_batches()?;
                    Ok(e)
                });
                let mut engine = match loaded {
                    Ok(e) => e,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let m = engine.model();
                let _ = ready_tx.send(Ok((
                    engine.name().to_owned(),
                    m.context().info.name.clone(),
                    m.slots(),
                    m.max_context(),
                )));
                let (prompts, model) = engine.split_mut();
                Scheduler::new(prompts, model, rx).run();
            })?;
        let (model_name, adapter, slots, context) = ready_rx
            .recv()
            .map_err(|_| anyhow::anyhow!("the GPU worker thread ended while loading"))??;
        Ok(Self {
            jobs,
            model_name,
            adapter,
            slots,
            context,
        })
    }

    /// Queues a job.
    pub fn submit(&self, job: Job) -> anyhow::Result<()> {
        self.jobs
            .send(job)
            .map_err(|_| anyhow::anyhow!("the GPU worker has stopped"))
    }
}

/// Loads the model with as many slots and positions per slot as `plan` asks, within its KV
/// budget and the device's limits: positions per slot shrink (to a multiple of 256, at least
/// 256) before the budget is exceeded, and a slot count the device cannot hold is an error
/// naming the limit.
fn load_for_serving(
    path: &std::path::Path,
    plan: KvPlan,
    adapter: Option<String>,
) -> anyhow::Result<tpsmeter_gpu::engine::Engine> {
    use anyhow::Context as _;
    let bytes = std::fs::read(path).with_context(|| format!("reading model {}", path.display()))?;
    let file = tpsmeter_gpu::gguf::GgufFile::parse(&bytes)
        .with_context(|| format!("reading {}", path.display()))?;
    let cfg = tpsmeter_gpu::model::config::ModelConfig::from_header(&file.header)
        .with_context(|| format!("reading {}", path.display()))?;
    let slots = plan.slots.clamp(1, tpsmeter_gpu::engine::MAX_SLOTS);
    // The cache is f32: keys and values of every layer per position.
    let per_position = (cfg.n_layers * (cfg.k_dim() + cfg.v_dim()) * 4) as u64;
    let context = plan.context.min(cfg.context_length).max(1);
    let fits = (plan.budget_bytes / (per_position * slots as u64)) as usize;
    let context = if context <= fits {
        context
    } else {
        let c = fits / 256 * 256;
        anyhow::ensure!(
            c >= 256,
            "{slots} slots of even 256 positions need {} MiB of KV cache, over the budget of {} MiB: \
             lower --parallel or raise --kv-budget-mib",
            (per_position * 256 * slots as u64) >> 20,
            plan.budget_bytes >> 20
        );
        eprintln!(
            "KV budget {} MiB: {c} positions per slot for {slots} slots (asked {context})",
            plan.budget_bytes >> 20
        );
        c
    };
    drop(file);
    crate::run::load_engine_with(
        &bytes,
        path,
        tpsmeter_gpu::engine::ModelOptions {
            max_context: context,
            slots,
            ..Default::default()
        },
        adapter,
    )
}
