//! The model worker: one thread owns the engine (GPU or CPU) and decodes the requests in
//! flight as one batch (continuous batching, see `scheduler.rs`); requests beyond its slots
//! wait in arrival order.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Instant;

use tokio::sync::mpsc::UnboundedSender;
use tpsmeter_gpu::cpu::{CpuModel, CpuOptions};
use tpsmeter_gpu::engine::{Backend, Batched, Engine, Prompts};
use tpsmeter_model::generate::{GenerateParams, StopReason};
use tpsmeter_model::options::ModelOptions;
use tpsmeter_model::request::Prompt;
use tpsmeter_model::sample::SamplerConfig;
use tpsmeter_model::tokenizer::TokenSpan;

use super::api_error::ApiError;
use super::encode::{LengthBound, check_length, encode_within};
use super::scheduler::Scheduler;
use crate::run::{BackendChoice, Picked, RunFigures, pick_backend};

/// The prompt's token ids, refused with a 400 when the model could not run it: empty, or
/// too long to leave a position for one generated token in `context` (OpenAI's
/// `context_length_exceeded`), which a long prompt is found to be by its length or its
/// first pieces before it is encoded whole (see `encode.rs`). Runs on the server's
/// threads, not the GPU thread, so a long prompt's encoding never stalls the streams
/// being decoded, and a prompt that does not fit is refused before any answer starts.
/// A chat template that prints the date prints `now` (Unix seconds), else today's.
pub fn encode_prompt(
    prompt: &Prompt,
    prompts: &Prompts,
    context: usize,
    span: Option<&TokenSpan>,
    now: Option<i64>,
) -> Result<Vec<u32>, ApiError> {
    fn failed(e: impl std::fmt::Display) -> ApiError {
        ApiError::invalid(format!("cannot encode the prompt: {e}"))
    }
    let (text, add_special) = match prompt {
        Prompt::Chat(m) => {
            let now = now.or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs() as i64)
                    .ok()
            });
            let (text, add_special) = prompts.chat_text(m, now).map_err(failed)?;
            (std::borrow::Cow::Owned(text), add_special)
        }
        Prompt::Text(t) => (std::borrow::Cow::Borrowed(t.as_str()), true),
    };
    let tokenizer = prompts.tokenizer();
    let bound = span.map(|s| s as &dyn LengthBound);
    encode_within(&text, add_special, context, bound, |t, special| {
        tokenizer.encode(t, special).map_err(failed)
    })
}

/// Refuses `prompt` by its length alone where that is known before any work (a raw prompt;
/// a chat's text is known once its template has run): see `encode.rs`.
pub fn check_prompt_length(
    prompt: &Prompt,
    context: usize,
    span: Option<&TokenSpan>,
) -> Result<(), ApiError> {
    match prompt {
        Prompt::Text(t) => check_length(t, context, span.map(|s| s as &dyn LengthBound)),
        Prompt::Chat(_) => Ok(()),
    }
}

/// One queued request.
#[derive(Debug)]
pub struct Job {
    /// The prompt's ids, checked against the model's vocabulary and context.
    pub prompt: Vec<u32>,
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
    /// Of `prompt_tokens`, those whose KV entries a slot already held (not evaluated).
    pub reused_tokens: usize,
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
    /// What the model runs on: the adapter's name, or the CPU with its threads, SIMD and why.
    pub adapter: String,
    /// Requests decoded together at most.
    pub slots: usize,
    /// KV cache positions per request.
    pub context: usize,
    /// The model's tokenizer and chat template, for encoding requests off the GPU thread.
    pub prompts: Prompts,
    /// How much text one token stands for (`Prompts::token_span`), computed once: a
    /// prompt's length then proves some prompts too long without encoding them.
    pub span: Option<Arc<TokenSpan>>,
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
    /// How long the scheduler waits for a new request after one ended (`--join-window-ms`).
    pub join_window: std::time::Duration,
    /// Most tokens one engine step runs (`--step-tokens`).
    pub step_tokens: usize,
}

/// Where the model runs (`--backend`, `--adapter`, `--threads`).
#[derive(Debug, Clone)]
pub struct Placement {
    pub choice: BackendChoice,
    pub adapter: Option<String>,
    pub threads: Option<usize>,
    /// The CPU backend's portable kernels (`--portable-kernels`).
    pub portable: bool,
}

/// What the worker thread reports once loaded: the model's name, what it runs on, its slots,
/// positions per slot, and its prompt side.
type Ready = anyhow::Result<(String, String, usize, usize, Prompts)>;

impl Worker {
    /// Starts the thread and loads the model there; returns once it is ready.
    pub fn start(model: PathBuf, plan: KvPlan, placement: Placement) -> anyhow::Result<Self> {
        let (jobs, rx) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = mpsc::channel::<Ready>();
        std::thread::Builder::new()
            .name("tpsmeter-model".into())
            .spawn(move || match load_for_serving(&model, plan, placement) {
                Ok(Loaded::Gpu(e)) => {
                    // The load compiled every graph a request can need (`step_tokens`).
                    let on = e.model().context().info.name.clone();
                    serve_on(*e, on, plan, &ready_tx, rx);
                }
                Ok(Loaded::Cpu(e, why)) => {
                    let m = e.model();
                    let on = format!(
                        "the CPU ({} threads, {}: {why})",
                        m.threads(),
                        m.simd().name()
                    );
                    serve_on(*e, on, plan, &ready_tx, rx);
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                }
            })?;
        let (model_name, adapter, slots, context, prompts) = ready_rx
            .recv()
            .map_err(|_| anyhow::anyhow!("the model's worker thread ended while loading"))??;
        let span = prompts.token_span().map(Arc::new);
        Ok(Self {
            jobs,
            model_name,
            adapter,
            slots,
            context,
            prompts,
            span,
        })
    }

    /// Queues a job.
    pub fn submit(&self, job: Job) -> anyhow::Result<()> {
        self.jobs
            .send(job)
            .map_err(|_| anyhow::anyhow!("the model's worker has stopped"))
    }
}

/// Reports the loaded model on `ready` and runs the scheduler on it until the server ends.
fn serve_on<M: Backend + Batched>(
    mut engine: Engine<M>,
    on: String,
    plan: KvPlan,
    ready: &mpsc::Sender<Ready>,
    jobs: mpsc::Receiver<Job>,
) {
    let m = engine.model();
    let _ = ready.send(Ok((
        engine.name().to_owned(),
        on,
        m.slots(),
        tpsmeter_model::generate::ModelShape::max_context(m),
        engine.prompts().clone(),
    )));
    let (prompts, model) = engine.split_mut();
    Scheduler::new(prompts, model, jobs, plan.join_window, plan.step_tokens).run();
}

/// A model loaded for serving, on the backend `--backend` chose.
enum Loaded {
    Gpu(Box<Engine>),
    /// With why the CPU runs it.
    Cpu(Box<Engine<CpuModel>>, String),
}

/// Loads the model with as many slots and positions per slot as `plan` asks, within its KV
/// budget and, on a GPU, the device's limits (one layer's keys for every slot are one
/// binding): positions per slot shrink (to a multiple of 256, at least 256) before either is
/// exceeded, and a slot count that cannot have 256 positions is an error naming the limit.
fn load_for_serving(
    path: &std::path::Path,
    plan: KvPlan,
    placement: Placement,
) -> anyhow::Result<Loaded> {
    use anyhow::Context as _;
    let bytes = std::fs::read(path).with_context(|| format!("reading model {}", path.display()))?;
    let file = tpsmeter_model::gguf::GgufFile::parse(&bytes)
        .with_context(|| format!("reading {}", path.display()))?;
    let cfg = tpsmeter_model::config::ModelConfig::from_header(&file.header)
        .with_context(|| format!("reading {}", path.display()))?;
    drop(file);
    let slots = plan.slots.clamp(1, tpsmeter_model::options::MAX_SLOTS) as u64;
    let asked = plan.context.min(cfg.context_length).max(1);
    let budget = "the KV budget (--kv-budget-mib)";
    let picked = pick_backend(placement.choice, placement.adapter)?;
    // Keys and values of every layer per position: f32 on the GPU, f16 on the CPU (whose
    // cache grows as it fills, so the budget bounds what it can reach).
    let elem = if matches!(picked, Picked::Gpu(_)) {
        4
    } else {
        2
    };
    let per_position = (cfg.n_layers * (cfg.k_dim() + cfg.v_dim()) * elem) as u64;
    let mut limits = vec![(per_position * slots, plan.budget_bytes, budget)];
    if let Picked::Gpu(ctx) = &picked {
        let row = (cfg.k_dim().max(cfg.v_dim()) * 4) as u64;
        limits.push((
            row * slots,
            ctx.max_binding(),
            "the device's largest binding",
        ));
    }
    let (context, bound) = fit_context(asked, &limits)?;
    if let Some(what) = bound {
        eprintln!("{context} positions per slot for {slots} slots (asked {asked}): {what}");
    }
    let opts = ModelOptions {
        max_context: context,
        slots: slots as usize,
        // Every mixed step's size is compiled at load, so no first request of a size pays
        // for it (nor stalls the others).
        step_tokens: plan.step_tokens,
        ..Default::default()
    };
    Ok(match picked {
        Picked::Gpu(ctx) => Loaded::Gpu(Box::new(crate::run::load_engine_with(
            &bytes, path, opts, ctx,
        )?)),
        Picked::Cpu(why) => {
            let cpu = CpuOptions {
                threads: placement.threads,
                portable: placement.portable,
                ..Default::default()
            };
            let e = Engine::load_cpu(&bytes, &opts, cpu)
                .with_context(|| format!("loading {}", path.display()))?;
            Loaded::Cpu(Box::new(e), why)
        }
    })
}

/// The most positions per slot, up to `asked`, within every (bytes per position, limit,
/// what) of `limits`, and the limit that bound it if one did: shrunk to a multiple of 256
/// where a limit binds; an error naming the limit when not even 256 fit.
fn fit_context<'a>(
    asked: usize,
    limits: &[(u64, u64, &'a str)],
) -> anyhow::Result<(usize, Option<&'a str>)> {
    let mut context = asked;
    let mut bound = None;
    for &(per_position, limit, what) in limits {
        let fits = usize::try_from(limit / per_position.max(1)).unwrap_or(usize::MAX);
        if context > fits {
            let c = fits / 256 * 256;
            anyhow::ensure!(
                c >= 256,
                "256 positions per slot need {} MiB, over {what} ({} MiB): lower --parallel",
                (per_position * 256) >> 20,
                limit >> 20
            );
            context = c;
            bound = Some(what);
        }
    }
    Ok((context, bound))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::fit_context;

    #[test]
    fn positions_shrink_to_the_tightest_limit_in_steps_of_256() {
        // Fits both: unchanged (not rounded).
        assert_eq!(
            fit_context(1000, &[(10, 1 << 20, "a")]).unwrap(),
            (1000, None)
        );
        // 10_000 / 4 = 2500 fit: 2304.
        assert_eq!(
            fit_context(4096, &[(4, 10_000, "a")]).unwrap(),
            (2304, Some("a"))
        );
        // The second limit binds harder.
        assert_eq!(
            fit_context(4096, &[(4, 10_000, "a"), (8, 5_000, "b")]).unwrap(),
            (512, Some("b"))
        );
        // Not even 256: an error naming the limit.
        let e = fit_context(4096, &[(1 << 20, 100 << 20, "the KV budget")]).unwrap_err();
        assert!(e.to_string().contains("the KV budget"), "{e}");
    }
}
