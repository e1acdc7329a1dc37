//! [`GpuModel`]: a Llama-family model resident on one device, with its static KV cache,
//! prepared decode and prefill graphs and the GPU sampler.
//!
//! A decoded token is one command buffer and one submit: the token id and position go in
//! with `queue.writeBuffer`, every dispatch (embedding, all layers, output head, sampling)
//! is recorded into one compute pass, and the sampled id (4 bytes) comes back through a
//! staging buffer allocated at load. Nothing is allocated per token.

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{GpuError, Result};
use crate::gpu::context::GpuContext;
use crate::gpu::defines::DType;
use crate::kernels::attention::{self, AttentionConfig};
use crate::kernels::{Dispatch, Sampler, Tensor, positions};
use crate::model::gpu_weights::GpuWeights;
use tpsmeter_model::config::ModelConfig;
use tpsmeter_model::gguf::GgufFile;
use tpsmeter_model::sample::SamplerConfig;

use super::cost::{CostLog, CostMark, CostReport, Phase, PhaseTotals, StepClock};
use super::graph::{self, Activations, KvCache, Shared};
use super::prompt::Sample;
use super::readback::TokenReadback;
use tpsmeter_model::options::ModelOptions;

pub use tpsmeter_model::step::PREFILL_CHUNK;
use tpsmeter_model::step::check_tokens;

/// Positions below which a decode step's attention runs as one dispatch per layer even
/// where longer contexts split it into chunks and a combine (the CPU-type kernel): a short
/// cache gives the split no work worth a second dispatch, whose fixed cost (35-60 us on
/// lavapipe) is what the fused layer saves.
pub const SINGLE_PASS_CONTEXT: usize = 256;

/// Counters of the work done since load, for benchmarks and tests (per phase and per step:
/// [`GpuModel::cost_since`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepStats {
    /// Queue submits so far.
    pub submits: u64,
    /// Dispatches recorded so far.
    pub dispatches: u64,
    /// Bytes read back to the host so far.
    pub readback_bytes: u64,
    /// Tokens run through the model so far (prompt and decoded).
    pub tokens: u64,
    /// Compute passes begun so far.
    pub passes: u64,
    /// `set_pipeline` calls so far: one per change of pipeline within a pass (a dispatch of
    /// the pipeline already set encodes none).
    pub pipeline_changes: u64,
    /// `set_bind_group` calls so far, likewise one per change.
    pub bind_group_changes: u64,
    /// Bytes written through `queue.write_buffer` by steps so far (not the weights' upload).
    pub bytes_written: u64,
}

/// A model on the GPU, ready to run tokens.
#[derive(Debug)]
pub struct GpuModel {
    pub(super) ctx: Arc<GpuContext>,
    pub(super) cfg: ModelConfig,
    pub(super) weights: GpuWeights,
    pub(super) kv: KvCache,
    pub(super) pos: Tensor,
    pub(super) scores: wgpu::Buffer,
    pub(super) decode_act: Activations,
    pub(super) prefill_act: Activations,
    pub(super) logits: Tensor,
    /// Embedding and layers for one token.
    pub(super) decode: Vec<Dispatch>,
    /// The same with attention in one pass over the cache, for positions below
    /// [`SINGLE_PASS_CONTEXT`], where the long graph splits it in two (CPU-type adapters).
    pub(super) decode_short: Option<Vec<Dispatch>>,
    /// Output norm and head on `decode_act.x`.
    pub(super) head: Vec<Dispatch>,
    /// Embedding and layers per prefill chunk size.
    pub(super) prefill: HashMap<usize, Vec<Dispatch>>,
    pub(super) sampler: Sampler,
    pub(super) sampling: SamplerConfig,
    pub(super) readback: TokenReadback,
    /// Tokens whose keys and values the cache holds, by position.
    pub(super) history: Vec<u32>,
    /// The id returned by the last step, to recognise a decode continuation.
    pub(super) last_sampled: Option<u32>,
    pub(super) stats: StepStats,
    /// Per-phase costs and encode times of the steps (`cost.rs`).
    pub(super) cost: CostLog,
    /// Batched decoding's buffers and per-sequence state, made on first use (`batch.rs`).
    pub(super) batch: Option<super::slots::BatchState>,
    /// The one-sequence steps submitted and not read, and how many to keep (`chain.rs`).
    pub(super) chain: super::chain::Chain,
    /// [`ModelOptions::step_tokens`].
    pub(super) step_tokens: usize,
    /// What the load's compilation did (`warm.rs`), once it ran.
    pub(super) compiled: Option<super::warm::CompileReport>,
}

impl GpuModel {
    /// Reads the configuration from `file`, uploads the weights and prepares the decode
    /// graph (compiling its pipelines); [`GpuModel::compile`] prepares the rest.
    pub fn load(ctx: Arc<GpuContext>, file: &GgufFile<'_>, opts: &ModelOptions) -> Result<Self> {
        let cfg = ModelConfig::from_header(&file.header)?;
        let weights = GpuWeights::upload(&ctx, file, &cfg)?;
        Self::from_weights(ctx, cfg, weights, opts)
    }

    /// A model from weights already on the device (a streamed load assembles them as the
    /// download arrives): allocates the KV cache and activations and prepares the decode
    /// graph (compiling its pipelines).
    pub fn from_weights(
        ctx: Arc<GpuContext>,
        cfg: ModelConfig,
        weights: GpuWeights,
        opts: &ModelOptions,
    ) -> Result<Self> {
        let max_ctx = opts.positions(&cfg);
        let slots = opts.slot_count();
        let dt = DType::F32;
        let kv = KvCache::new(&ctx, &cfg, max_ctx, slots, dt, opts.kv_f16)?;
        let pos = Tensor::from_u32(&ctx, "positions", &vec![0; 2 * PREFILL_CHUNK.max(slots)])?;
        let scratch = |n_tokens: usize, decode: bool| {
            crate::kernels::attention::scratch_bytes(&AttentionConfig {
                n_tokens,
                n_heads: cfg.n_head,
                n_kv_heads: cfg.n_head_kv,
                head_dim: cfg.head_dim,
                max_ctx,
                window: 0,
                scale: 1.0,
                decode,
                // The same per-head chunk states either way.
                split_by_group: false,
            })
        };
        let scratch = scratch(PREFILL_CHUNK, false).max(scratch(slots, true));
        let scores = ctx.storage_zeroed("attention scores", scratch)?;
        let decode_act = Activations::new(&ctx, &cfg, 1, dt)?;
        let prefill_act = Activations::new(&ctx, &cfg, PREFILL_CHUNK, dt)?;
        let logits = Tensor::zeros(&ctx, "logits", cfg.vocab_size, DType::F32)?;
        let shared = Shared {
            cfg: &cfg,
            weights: &weights,
            kv: &kv,
            pos: &pos,
            scores: &scores,
        };
        let decode = graph::layers(&ctx, &shared, &decode_act, 1, true)?;
        // Where decode attention splits, a second graph for short caches: not a decode for
        // attention's purposes, so one pass over the keys.
        let decode_short = if attention::splits_decode(ctx.profile, cfg.head_dim, max_ctx) {
            Some(graph::layers(&ctx, &shared, &decode_act, 1, false)?)
        } else {
            None
        };
        let head = graph::head(&ctx, &shared, &decode_act, &logits, 1)?;
        let sampler = Sampler::new(&ctx, &opts.sampling, &logits, cfg.vocab_size)?;
        let readback = TokenReadback::new(&ctx, slots);
        let depth = opts
            .in_flight
            .unwrap_or_else(|| super::chain::default_in_flight(&ctx));
        let chain = super::chain::Chain::new(&ctx, depth);
        ctx.take_error()?;
        Ok(Self {
            ctx,
            cfg,
            weights,
            kv,
            pos,
            scores,
            decode_act,
            prefill_act,
            logits,
            decode,
            decode_short,
            head,
            prefill: HashMap::new(),
            sampler,
            sampling: opts.sampling,
            readback,
            history: Vec::new(),
            last_sampled: None,
            stats: StepStats::default(),
            cost: CostLog::new(),
            batch: None,
            chain,
            step_tokens: opts.step_tokens,
            compiled: None,
        })
    }

    /// The model's hyper-parameters.
    pub fn config(&self) -> &ModelConfig {
        &self.cfg
    }

    /// The device.
    pub fn context(&self) -> &Arc<GpuContext> {
        &self.ctx
    }

    /// Positions the KV cache holds per sequence.
    pub fn max_context(&self) -> usize {
        self.kv.max_ctx
    }

    /// Where the KV cache lives; [`crate::kernels::KvStore::TextureF16`] stores keys and
    /// values as f16 (CPU-type adapters), as llama.cpp does by default.
    pub fn kv_store(&self) -> crate::kernels::KvStore {
        self.kv
            .k
            .first()
            .map_or(crate::kernels::KvStore::Buffer, |s| s.store())
    }

    /// Work counters since load.
    pub fn stats(&self) -> StepStats {
        self.stats
    }

    /// Times each step's encoding with `clock` (milliseconds) from now on: natively an
    /// `Instant` is the default; on the web pass `performance.now()`, without which
    /// encode times are not measured.
    pub fn set_clock(&mut self, clock: StepClock) {
        self.cost.set_clock(clock);
    }

    /// Where a span of steps to report on begins ([`GpuModel::cost_since`]).
    pub fn cost_mark(&self) -> CostMark {
        self.cost.mark()
    }

    /// What the steps since `mark` cost: per decoded token (decode) and per prompt chunk
    /// (prefill), with the median encode time of each.
    pub fn cost_since(&self, mark: &CostMark) -> CostReport {
        self.cost.since(mark)
    }

    /// Totals of one phase since load.
    pub fn cost_totals(&self, phase: Phase) -> PhaseTotals {
        self.cost.totals(phase)
    }

    /// Weight bytes one decoded token reads (all layer matrices and the output head).
    pub fn weight_bytes_per_token(&self) -> u64 {
        self.weights.bytes_per_token()
    }

    /// Dispatches recorded for the next decoded token (at the cache's current length).
    pub fn dispatches_per_token(&self) -> usize {
        self.decode_graph(self.history.len()).len() + self.head.len() + 1
    }

    /// The one-token layers for a token at `position`.
    pub(super) fn decode_graph(&self, position: usize) -> &[Dispatch] {
        decode_graph(&self.decode, self.decode_short.as_deref(), position)
    }

    /// Current sampling settings.
    pub fn sampling(&self) -> SamplerConfig {
        self.sampling
    }

    /// Changes the sampling settings (they are baked into the sampler's parameters, so this
    /// prepares a new sampler dispatch; the KV cache stays valid).
    pub fn set_sampling(&mut self, cfg: SamplerConfig) -> Result<()> {
        if cfg != self.sampling {
            // Steps in flight sample with the old sampler.
            self.discard_in_flight();
            self.sampler = Sampler::new(&self.ctx, &cfg, &self.logits, self.cfg.vocab_size)?;
            self.sampling = cfg;
            self.last_sampled = None;
        }
        Ok(())
    }

    /// The buffers every graph of this model binds.
    pub(super) fn shared(&self) -> Shared<'_> {
        Shared {
            cfg: &self.cfg,
            weights: &self.weights,
            kv: &self.kv,
            pos: &self.pos,
            scores: &self.scores,
        }
    }

    pub(super) fn prefill_graph(&mut self, n: usize) -> Result<()> {
        if !self.prefill.contains_key(&n) {
            let g = graph::layers(&self.ctx, &self.shared(), &self.prefill_act, n, false)?;
            self.prefill.insert(n, g);
        }
        Ok(())
    }

    /// Records one decode token at `position`: the layers, the output head and the sampler,
    /// in one pass.
    pub(super) fn record_token(&mut self, enc: &mut wgpu::CommandEncoder, position: usize) {
        let sample = [self.sampler.dispatch().clone()];
        record(
            &mut self.stats,
            enc,
            &[
                decode_graph(&self.decode, self.decode_short.as_deref(), position),
                &self.head,
                &sample,
            ],
        );
    }

    pub(super) fn record(&mut self, enc: &mut wgpu::CommandEncoder, dispatches: &[&[Dispatch]]) {
        record(&mut self.stats, enc, dispatches);
    }

    /// Runs `tokens` at positions `start..` and submits the work that samples the next id;
    /// [`GpuModel::read_token`] returns it. Entries from `start` on are overwritten.
    pub fn submit_step(&mut self, tokens: &[u32], start: usize) -> Result<()> {
        self.start_step(tokens, start)?;
        if tokens.len() == 1 {
            let q = &self.ctx.queue;
            let s = &mut self.stats;
            write(
                s,
                q,
                &self.pos.buffer,
                bytemuck::cast_slice(&positions(start, 1, 0)),
            );
            write(
                s,
                q,
                &self.decode_act.tokens.buffer,
                bytemuck::cast_slice(tokens),
            );
            let mut enc = self.ctx.encoder("decode");
            self.record_token(&mut enc, start);
            self.readback.encode(&mut enc, &self.sampler.token);
            let index = self.ctx.submit(enc);
            self.chain.push_main(index, Phase::Decode);
            self.stats.submits += 1;
            self.stats.tokens += 1;
            self.cost.end(Phase::Decode, &self.stats, 1);
        } else {
            self.submit_prompt(tokens, start, 0, Sample::Model)?;
            self.stats.tokens += tokens.len() as u64;
        }
        Ok(())
    }

    /// What every step does before it records: checks `tokens`, updates the history and
    /// restarts the sampler unless the step continues the last one.
    pub(super) fn start_step(&mut self, tokens: &[u32], start: usize) -> Result<()> {
        self.check_tokens(tokens, start, self.history.len())?;
        // A step the host writes ends any chain: what was in flight is not read.
        self.discard_in_flight();
        self.cost.begin(&self.stats);
        // A continuation feeds back the id sampled last, right after the cache's end; anything
        // else starts a new generation, whose sampler state (step counter, recent tokens for
        // the repetition penalty) restarts from the context.
        let continuation = tokens.len() == 1
            && start == self.history.len()
            && self.last_sampled == Some(tokens[0]);
        self.history.truncate(start);
        self.history.extend_from_slice(tokens);
        // Slot 0's rows are this path's rows: what batched decoding kept there is gone.
        if let Some(b) = self.batch.as_mut() {
            b.forget_slot(0);
        }
        if !continuation {
            self.stats.bytes_written += self.sampler.reset(&self.ctx, 0, &self.history);
        }
        self.last_sampled = None;
        Ok(())
    }

    /// Checks that `tokens` (not empty, every id in the vocabulary) can run at positions
    /// `start..` of a sequence whose cache holds `held` positions.
    pub(super) fn check_tokens(&self, tokens: &[u32], start: usize, held: usize) -> Result<()> {
        Ok(check_tokens(
            tokens,
            start,
            held,
            self.kv.max_ctx,
            self.cfg.vocab_size,
        )?)
    }

    /// Native: [`GpuModel::submit_step`] then [`GpuModel::read_token`], blocking.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn step_blocking(&mut self, tokens: &[u32], start: usize) -> Result<u32> {
        self.submit_step(tokens, start)?;
        pollster::block_on(self.read_token())
    }

    /// The logits of the last step (before sampling changed them, when the repetition
    /// penalty is off): for tests and teacher forcing.
    pub async fn read_logits_async(&self) -> Result<Vec<f32>> {
        self.logits.read_f32_async(&self.ctx).await
    }

    /// Native blocking [`GpuModel::read_logits_async`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn read_logits(&self) -> Result<Vec<f32>> {
        pollster::block_on(self.read_logits_async())
    }
}

/// The one-token layers for a token at `position`: the single-pass attention graph (where
/// there is one) below [`SINGLE_PASS_CONTEXT`], else the split one.
pub(super) fn decode_graph<'a>(
    long: &'a [Dispatch],
    short: Option<&'a [Dispatch]>,
    position: usize,
) -> &'a [Dispatch] {
    match short {
        Some(short) if position < SINGLE_PASS_CONTEXT => short,
        _ => long,
    }
}

/// Writes `data` at the start of `buffer` through the queue, counting the bytes.
pub(super) fn write(
    stats: &mut StepStats,
    queue: &wgpu::Queue,
    buffer: &wgpu::Buffer,
    data: &[u8],
) {
    queue.write_buffer(buffer, 0, data);
    stats.bytes_written += data.len() as u64;
}

/// Records `dispatches` into one compute pass of `enc`, counting them, the pass and the
/// pipeline and bind-group changes. A pipeline or bind group already set in the pass is not
/// set again: pass state persists between dispatches (WebGPU §"compute pass encoding"), and
/// on the web every call is a trip through JS into the browser's GPU process.
pub(super) fn record(
    stats: &mut StepStats,
    enc: &mut wgpu::CommandEncoder,
    dispatches: &[&[Dispatch]],
) {
    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: Some("step"),
        timestamp_writes: None,
    });
    stats.passes += 1;
    let mut pipeline: Option<&wgpu::ComputePipeline> = None;
    let mut bind_group: Option<&wgpu::BindGroup> = None;
    for list in dispatches {
        for d in *list {
            if pipeline != Some(&*d.pipeline) {
                pass.set_pipeline(&d.pipeline);
                pipeline = Some(&*d.pipeline);
                stats.pipeline_changes += 1;
            }
            if bind_group != Some(&d.bind_group) {
                pass.set_bind_group(0, &d.bind_group, &[]);
                bind_group = Some(&d.bind_group);
                stats.bind_group_changes += 1;
            }
            let [x, y, z] = d.workgroups;
            pass.dispatch_workgroups(x, y, z);
        }
        stats.dispatches += list.len() as u64;
    }
}

impl tpsmeter_model::generate::ModelShape for GpuModel {
    fn max_context(&self) -> usize {
        self.kv.max_ctx
    }

    fn vocab_size(&self) -> usize {
        self.config().vocab_size
    }
}

impl tpsmeter_model::generate::TokenStep for GpuModel {
    type Error = GpuError;

    async fn step(&mut self, tokens: &[u32], start: usize) -> Result<u32> {
        self.submit_step(tokens, start)?;
        self.read_token().await
    }

    fn step_cancellable(
        &mut self,
        tokens: &[u32],
        start: usize,
        cancel: &tpsmeter_model::generate::CancelToken,
    ) -> impl std::future::Future<Output = Result<Option<u32>>> {
        GpuModel::step_cancellable(self, tokens, start, cancel)
    }

    fn in_flight(&self) -> usize {
        GpuModel::in_flight(self)
    }

    fn submit(&mut self, token: u32, start: usize) -> Result<()> {
        self.submit_step(&[token], start)
    }

    fn chain(&mut self) -> Result<()> {
        self.submit_chained()
    }

    fn read(&mut self) -> impl std::future::Future<Output = Result<u32>> {
        self.read_token()
    }

    fn discard(&mut self) {
        self.discard_in_flight();
    }
}
