//! The GPU worker: one thread owns the engine and runs one request at a time; requests that
//! arrive meanwhile wait in its queue (a channel), in arrival order.

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Instant;

use tokio::sync::mpsc::UnboundedSender;
use tpsmeter_gpu::chat::ChatMessage;
use tpsmeter_gpu::generate::{CancelToken, GenerateParams, StopReason};
use tpsmeter_gpu::kernels::SamplerConfig;

use crate::run::{RunFigures, load_engine};

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
}

/// A handle to the worker thread.
#[derive(Debug, Clone)]
pub struct Worker {
    jobs: mpsc::Sender<Job>,
    /// `general.name` of the model.
    pub model_name: String,
    /// Adapter the model runs on.
    pub adapter: String,
}

impl Worker {
    /// Starts the thread and loads the model there; returns once it is ready.
    pub fn start(model: PathBuf, context: usize, adapter: Option<String>) -> anyhow::Result<Self> {
        let (jobs, rx) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = mpsc::channel::<anyhow::Result<(String, String)>>();
        std::thread::Builder::new()
            .name("tpsmeter-gpu".into())
            .spawn(move || {
                let mut engine = match load_engine(&model, context, adapter) {
                    Ok(e) => {
                        let _ = ready_tx.send(Ok((
                            e.name().to_owned(),
                            e.model().context().info.name.clone(),
                        )));
                        e
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                while let Ok(job) = rx.recv() {
                    run_job(&mut engine, job);
                }
            })?;
        let (model_name, adapter) = ready_rx
            .recv()
            .map_err(|_| anyhow::anyhow!("the GPU worker thread ended while loading"))??;
        Ok(Self {
            jobs,
            model_name,
            adapter,
        })
    }

    /// Queues a job.
    pub fn submit(&self, job: Job) -> anyhow::Result<()> {
        self.jobs
            .send(job)
            .map_err(|_| anyhow::anyhow!("the GPU worker has stopped"))
    }
}

fn run_job(engine: &mut tpsmeter_gpu::engine::Engine, job: Job) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .ok();
    let prompt = match &job.prompt {
        Prompt::Chat(m) => engine.encode_chat(m, now),
        Prompt::Text(t) => engine.encode(t),
    };
    let prompt = match prompt {
        Ok(p) => p,
        Err(e) => {
            let _ = job.events.send(Event::Failed(e.to_string()));
            return;
        }
    };
    let cancel = CancelToken::new();
    let t0 = Instant::now();
    let mut clock = move || t0.elapsed().as_secs_f64();
    let events = job.events.clone();
    let c = cancel.clone();
    let mut on_event = |ev: &tpsmeter_gpu::generate::TokenEvent| {
        if !ev.text.is_empty() && events.send(Event::Text(ev.text.clone())).is_err() {
            // The client went away: stop within one token.
            c.cancel();
        }
    };
    match engine.generate(
        &prompt,
        &job.params,
        &job.sampling,
        &cancel,
        &mut clock,
        &mut on_event,
    ) {
        Ok(g) => {
            let eog = usize::from(matches!(g.stop, StopReason::EndOfGeneration { .. }));
            let summary = Summary {
                prompt_tokens: g.prompt_tokens,
                completion_tokens: g.tokens.len().saturating_sub(eog),
                stop: g.stop,
                figures: RunFigures::from_generation(&g),
            };
            let _ = job.events.send(Event::Done(summary));
        }
        Err(e) => {
            let _ = job.events.send(Event::Failed(e.to_string()));
        }
    }
}
