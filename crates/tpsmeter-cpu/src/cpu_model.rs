//! [`CpuModel`]: the forward pass on the CPU, token chunks at a time, threads splitting every
//! matrix product, and the sampler's CPU twin choosing the next id, so that the generation
//! loop ([`tpsmeter_model::generate`]) drives it exactly as it drives the GPU model.
//!
//! A pass runs rows of (token, sequence, position): one sequence's prompt chunk or token
//! here, and for serving the tokens of several sequences at once (`slots.rs`), each against
//! its own cache, so that the weights are read once for all of them.

use rayon::prelude::*;
use tpsmeter_model::ModelError;

use super::attention::{HeadArgs, KvElem, head, rope_apply, rope_table};
use super::cpu_runtime::{CpuOptions, CpuRuntime, Simd};
use super::cpu_weights::CpuWeights;
use super::matrix::{QMatrix, matmul, matmuls};
use super::q8::Activations;
use super::slots::Seq;
use crate::error::{CpuError, Result};
use tpsmeter_model::config::{Activation, ModelConfig};
use tpsmeter_model::generate::{CancelToken, ModelShape, TokenStep};
use tpsmeter_model::gguf::GgufFile;
use tpsmeter_model::ops::{gelu_tanh, rms_norm, silu};
use tpsmeter_model::options::ModelOptions;
use tpsmeter_model::sample::SamplerConfig;
use tpsmeter_model::step::{PREFILL_CHUNK, check_tokens};

/// Keys and values of every layer, grown as positions fill (so memory follows the
/// conversation, not the context limit).
#[derive(Debug)]
struct Cache<T> {
    k: Vec<Vec<T>>,
    v: Vec<Vec<T>>,
}

impl<T: KvElem> Cache<T> {
    fn new(layers: usize) -> Self {
        Self {
            k: vec![Vec::new(); layers],
            v: vec![Vec::new(); layers],
        }
    }

    fn bytes(&self) -> usize {
        self.k
            .iter()
            .chain(&self.v)
            .map(|v| v.capacity())
            .sum::<usize>()
            * size_of::<T>()
    }
}

/// The caches of the sequences (one per slot), in f16 (the default: as the GPU engine's f16
/// cache and llama.cpp's, so the same numbers and the same greedy tokens, at half the
/// memory) or f32.
#[derive(Debug)]
enum Kv {
    F16(Vec<Cache<u16>>),
    F32(Vec<Cache<f32>>),
}

/// Work counters since load.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuStats {
    /// Forward passes (a prompt chunk or a decoded token each).
    pub passes: u64,
    /// Tokens computed.
    pub tokens: u64,
}

/// A model loaded for the CPU backend.
#[derive(Debug)]
pub struct CpuModel {
    cfg: ModelConfig,
    w: CpuWeights,
    rt: CpuRuntime,
    kv: Kv,
    max_ctx: usize,
    /// Each slot's tokens and sampler; slot 0 is the single-sequence path's.
    pub(super) seqs: Vec<Seq>,
    stats: CpuStats,
    pause: Option<Pause>,
}

/// A future the model awaits after each forward pass (see [`CpuModel::set_pause`]).
pub struct Pause(Box<dyn Fn() -> std::pin::Pin<Box<dyn Future<Output = ()>>> + Send + Sync>);

impl Pause {
    pub fn new(
        f: impl Fn() -> std::pin::Pin<Box<dyn Future<Output = ()>>> + Send + Sync + 'static,
    ) -> Self {
        Self(Box::new(f))
    }
}

impl std::fmt::Debug for Pause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pause")
    }
}

impl CpuModel {
    /// Reads the configuration, copies the weights out of `file` (kept in their block
    /// formats), and starts the thread pool.
    pub fn load(file: &GgufFile<'_>, opts: &ModelOptions, cpu: CpuOptions) -> Result<Self> {
        let cfg = ModelConfig::from_header(&file.header)?;
        let w = CpuWeights::load(&mut &*file, &cfg)?;
        Self::from_weights(cfg, w, opts, cpu)
    }

    /// The model with [`ModelOptions::slot_count`] sequences, whose caches grow as they fill.
    pub fn from_weights(
        cfg: ModelConfig,
        w: CpuWeights,
        opts: &ModelOptions,
        cpu: CpuOptions,
    ) -> Result<Self> {
        let slots = opts.slot_count();
        fn caches<T: KvElem>(slots: usize, layers: usize) -> Vec<Cache<T>> {
            (0..slots).map(|_| Cache::new(layers)).collect()
        }
        let mut m = Self {
            max_ctx: opts.positions(&cfg),
            kv: if opts.kv_f16 {
                Kv::F16(caches(slots, cfg.n_layers))
            } else {
                Kv::F32(caches(slots, cfg.n_layers))
            },
            cfg,
            w,
            rt: CpuRuntime::new(cpu)?,
            seqs: (0..slots).map(|_| Seq::default()).collect(),
            stats: CpuStats::default(),
            pause: None,
        };
        m.set_sampling(opts.sampling)?;
        Ok(m)
    }

    pub fn config(&self) -> &ModelConfig {
        &self.cfg
    }

    pub fn threads(&self) -> usize {
        self.rt.threads()
    }

    pub fn simd(&self) -> Simd {
        self.rt.simd()
    }

    pub fn stats(&self) -> CpuStats {
        self.stats
    }

    /// Most positions the cache holds.
    pub fn max_context(&self) -> usize {
        self.max_ctx
    }

    /// Weight bytes one decoded token reads (the bound a memory-bound decode is read
    /// against).
    pub fn weight_bytes_per_token(&self) -> u64 {
        self.w.bytes_per_token() as u64
    }

    /// Bytes of weights and of the keys and values held now.
    pub fn resident_bytes(&self) -> usize {
        let kv = match &self.kv {
            Kv::F16(c) => c.iter().map(Cache::bytes).sum::<usize>(),
            Kv::F32(c) => c.iter().map(Cache::bytes).sum(),
        };
        self.w.size() + kv
    }

    /// The sampling settings of the next generation (checked as the GPU sampler checks them).
    pub fn set_sampling(&mut self, s: SamplerConfig) -> Result<()> {
        s.check()?;
        self.seqs[0].set_sampling(s);
        Ok(())
    }

    /// Checks `tokens` at positions `start..` against the cache and the vocabulary (the
    /// GPU model's rule).
    fn check(&self, tokens: &[u32], start: usize) -> Result<()> {
        Ok(check_tokens(
            tokens,
            start,
            self.seqs[0].history.len(),
            self.max_ctx,
            self.cfg.vocab_size,
        )?)
    }

    /// Has the model await `pause` after every forward pass (a prompt chunk or a token).
    /// A browser Worker passes a yield to its event loop: the computation never awaits
    /// anything else, and without one a cancel message would wait for the whole generation.
    pub fn set_pause(&mut self, pause: Pause) {
        self.pause = Some(pause);
    }

    /// Runs `tokens` at `start..` (in chunks) and returns the logits after the last one.
    /// Positions from `start` on are overwritten; the sampler is not touched.
    pub async fn logits_async(&mut self, tokens: &[u32], start: usize) -> Result<Vec<f32>> {
        self.check(tokens, start)?;
        // Whatever comes next, it is no continuation of the last sampled step.
        self.seqs[0].last_sampled = None;
        Ok(self.chunks(tokens, start, None).await?.unwrap_or_default())
    }

    /// [`CpuModel::logits_async`], blocking the calling thread (natively).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn logits(&mut self, tokens: &[u32], start: usize) -> Result<Vec<f32>> {
        pollster::block_on(self.logits_async(tokens, start))
    }

    /// Runs `tokens` at `start..` in prompt chunks, stopping between chunks once `cancel` is
    /// set (`None`); the logits after the last token.
    async fn chunks(
        &mut self,
        tokens: &[u32],
        start: usize,
        cancel: Option<&CancelToken>,
    ) -> Result<Option<Vec<f32>>> {
        self.seqs[0].history.truncate(start);
        let mut logits = Vec::new();
        for (i, chunk) in tokens.chunks(PREFILL_CHUNK).enumerate() {
            if i > 0 && cancel.is_some_and(|c| c.is_cancelled()) {
                return Ok(None);
            }
            let at = start + i * PREFILL_CHUNK;
            let last = at + chunk.len() == start + tokens.len();
            let rows: Vec<Row> = (at..at + chunk.len())
                .map(|pos| Row { slot: 0, pos })
                .collect();
            let heads: &[usize] = if last { &[chunk.len() - 1] } else { &[] };
            logits = self.forward(chunk, &rows, heads)?;
            self.seqs[0].history.extend_from_slice(chunk);
            if let Some(pause) = &self.pause {
                (pause.0)().await;
            }
        }
        Ok(Some(logits))
    }

    /// Forgets the sampler's stream and the cache's contents.
    pub fn forget(&mut self) {
        self.seqs[0].forget();
    }

    /// What a step does before its forward pass: the sampler restarts unless the step feeds
    /// back the id it sampled last (the GPU model's rule).
    fn start(&mut self, tokens: &[u32], start: usize) -> Result<()> {
        self.check(tokens, start)?;
        self.seqs[0].begin_step(tokens, start);
        Ok(())
    }

    /// Steps `tokens` at `start..`, stopping between prompt chunks once `cancel` is set.
    async fn run(
        &mut self,
        tokens: &[u32],
        start: usize,
        cancel: Option<&CancelToken>,
    ) -> Result<Option<u32>> {
        self.start(tokens, start)?;
        Ok(self
            .chunks(tokens, start, cancel)
            .await?
            .map(|mut l| self.seqs[0].pick(&mut l)))
    }

    /// One forward pass of `tokens`, token `t` at `rows[t]` (its sequence and position):
    /// writes their keys and values into their sequences' caches and returns the logits
    /// after each token of `heads` (indices into `tokens`), in that order (`[head][vocab]`,
    /// empty without heads). The rows of one
    /// sequence must be consecutive positions, and each sequence's cache must hold the
    /// positions before its first row (the callers check both).
    pub(super) fn forward(
        &mut self,
        tokens: &[u32],
        rows: &[Row],
        heads: &[usize],
    ) -> Result<Vec<f32>> {
        let Self { cfg, w, rt, kv, .. } = self;
        let (cfg, w, rt) = (&*cfg, &*w, &*rt);
        self.stats.passes += 1;
        self.stats.tokens += tokens.len() as u64;
        let n = tokens.len();
        let e = cfg.n_embd;
        let mut x = vec![0f32; n * e];
        for (row, &t) in x.chunks_exact_mut(e).zip(tokens) {
            w.token_embd.dequantize_row(t as usize, row)?;
            if let Some(s) = cfg.embedding_scale {
                row.iter_mut().for_each(|v| *v *= s);
            }
        }
        rt.install(|| {
            match kv {
                Kv::F16(c) => layers(rt, cfg, w, rows, &mut x, c),
                Kv::F32(c) => layers(rt, cfg, w, rows, &mut x, c),
            }
            if heads.is_empty() {
                return Ok(Vec::new());
            }
            // The output head on the rows that sample only, together (its weights read once).
            let acts: Vec<Activations> = heads
                .iter()
                .map(|&t| {
                    let mut row = x[t * e..(t + 1) * e].to_vec();
                    rms_norm(&mut row, &w.output_norm, cfg.rms_eps);
                    let mut a = Activations::default();
                    a.set(&row);
                    a
                })
                .collect();
            let out_w: &QMatrix = w.output.as_ref().unwrap_or(&w.token_embd);
            let mut logits = vec![0f32; heads.len() * cfg.vocab_size];
            matmul(rt, out_w, &acts, &mut logits);
            Ok(logits)
        })
    }
}

/// Where a token of a forward pass runs: its sequence's cache and its position there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Row {
    pub slot: usize,
    pub pos: usize,
}

/// Every block on `x` (`[token][n_embd]`, token `t` at `rows[t]`), its keys and values
/// stored in `caches[rows[t].slot]`.
fn layers<T: KvElem>(
    rt: &CpuRuntime,
    cfg: &ModelConfig,
    w: &CpuWeights,
    rows: &[Row],
    x: &mut [f32],
    caches: &mut [Cache<T>],
) {
    let n = x.len() / cfg.n_embd;
    let mut s = Scratch::new(cfg, n, w.k_quants);
    // Each sequence's cache grows once per layer, to the end of its rows: grown row by row,
    // a prompt chunk's 64 reallocations left the allocator holding freed blocks (resident
    // 1.29x the file against 1.22x, `cargo bench -p tpsmeter-gpu --bench cpu`).
    let mut ends: Vec<(usize, usize)> = Vec::new();
    for r in rows {
        match ends.iter_mut().find(|(slot, _)| *slot == r.slot) {
            Some((_, end)) => *end = (*end).max(r.pos + 1),
            None => ends.push((r.slot, r.pos + 1)),
        }
    }
    for (l, lw) in w.layers.iter().enumerate() {
        for &(slot, end) in &ends {
            let c = &mut caches[slot];
            grow(&mut c.k[l], end * cfg.k_dim());
            grow(&mut c.v[l], end * cfg.v_dim());
        }
        attention_block(rt, cfg, w, l, lw, rows, x, caches, &mut s);
        ffn_block(rt, cfg, lw, x, &mut s);
    }
}

/// Makes `v` at least `len` long, growing in steps of 1/8 so appends stay amortised.
fn grow<T: KvElem>(v: &mut Vec<T>, len: usize) {
    if v.len() < len {
        let want = len.max(v.len() + v.len() / 8);
        v.reserve_exact(want - v.len());
        v.resize(len, T::default());
    }
}

/// Per-pass buffers, `[token][...]`.
struct Scratch {
    h: Vec<f32>,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    attn: Vec<f32>,
    proj: Vec<f32>,
    gate: Vec<f32>,
    up: Vec<f32>,
    acts: Vec<Activations>,
    /// Whether the activations need K-quant blocks.
    k_quants: bool,
}

impl Scratch {
    fn new(cfg: &ModelConfig, n: usize, k_quants: bool) -> Self {
        Self {
            h: vec![0.0; n * cfg.n_embd],
            q: vec![0.0; n * cfg.q_dim()],
            k: vec![0.0; n * cfg.k_dim()],
            v: vec![0.0; n * cfg.v_dim()],
            attn: vec![0.0; n * cfg.n_head * cfg.head_dim_v],
            proj: vec![0.0; n * cfg.n_embd],
            gate: vec![0.0; n * cfg.n_ff],
            up: vec![0.0; n * cfg.n_ff],
            acts: vec![Activations::default(); n],
            k_quants,
        }
    }

    /// Quantizes `rows` (`[token][width]`) into the activations the kernels read.
    fn set_acts(&mut self, which: Rows) {
        let rows = match which {
            Rows::H => &self.h,
            Rows::Attn => &self.attn,
            Rows::Gate => &self.gate,
        };
        let width = rows.len() / self.acts.len();
        for (a, r) in self.acts.iter_mut().zip(rows.chunks_exact(width)) {
            a.set_for(r, self.k_quants);
        }
    }
}

/// Which of the scratch rows feed the next products.
#[derive(Clone, Copy)]
enum Rows {
    H,
    Attn,
    Gate,
}

/// The attention half of block `l`, adding its output to `x`.
#[allow(clippy::too_many_arguments)]
fn attention_block<T: KvElem>(
    rt: &CpuRuntime,
    cfg: &ModelConfig,
    w: &CpuWeights,
    l: usize,
    lw: &super::cpu_weights::CpuLayer,
    rows: &[Row],
    x: &mut [f32],
    caches: &mut [Cache<T>],
    s: &mut Scratch,
) {
    let (hd, hdv) = (cfg.head_dim, cfg.head_dim_v);
    let (k_dim, v_dim) = (cfg.k_dim(), cfg.v_dim());
    s.h.copy_from_slice(x);
    norm_rows(&mut s.h, &lw.attn_norm, cfg.rms_eps);
    s.set_acts(Rows::H);
    matmuls(
        rt,
        &s.acts,
        &mut [(&lw.wq, &mut s.q), (&lw.wk, &mut s.k), (&lw.wv, &mut s.v)],
    );
    for (out, bias) in [(&mut s.q, &lw.bq), (&mut s.k, &lw.bk), (&mut s.v, &lw.bv)] {
        if let Some(b) = bias {
            out.chunks_exact_mut(b.len())
                .for_each(|o| o.iter_mut().zip(b).for_each(|(o, b)| *o += b));
        }
    }
    if let (Some(qn), Some(kn)) = (&lw.q_norm, &lw.k_norm) {
        norm_rows(&mut s.q, qn, cfg.rms_eps);
        norm_rows(&mut s.k, kn, cfg.rms_eps);
    }
    let base = cfg.rope_base_for_layer(l);
    let local = cfg.is_local_layer(l);
    let freqs = w.rope_freqs.as_deref();
    let mut table = Vec::with_capacity(cfg.rope_dim / 2);
    for (t, r) in rows.iter().enumerate() {
        let pos = r.pos;
        // Local (sliding-window) layers are not position-scaled in llama.cpp's Gemma 3.
        let rope_pos = if local {
            pos as f32
        } else {
            pos as f32 / cfg.rope_scale
        };
        rope_table(rope_pos, cfg.rope_dim, base, freqs, &mut table);
        let q = &mut s.q[t * cfg.q_dim()..(t + 1) * cfg.q_dim()];
        let k = &mut s.k[t * k_dim..(t + 1) * k_dim];
        for head in q.chunks_exact_mut(hd).chain(k.chunks_exact_mut(hd)) {
            rope_apply(head, &table, cfg.rope_layout);
        }
    }
    // Every token's keys and values are in its cache before any attention reads them (a
    // prompt chunk attends to its own earlier tokens).
    for (t, r) in rows.iter().enumerate() {
        let c = &mut caches[r.slot];
        let (k, v) = (&s.k[t * k_dim..][..k_dim], &s.v[t * v_dim..][..v_dim]);
        for (c, v) in c.k[l][r.pos * k_dim..][..k_dim].iter_mut().zip(k) {
            *c = T::store(*v);
        }
        for (c, v) in c.v[l][r.pos * v_dim..][..v_dim].iter_mut().zip(v) {
            *c = T::store(*v);
        }
    }
    let caches = &*caches;
    let group = cfg.n_head / cfg.n_head_kv;
    let window = match cfg.sliding_window {
        Some(sw) if local => Some(sw.window),
        _ => None,
    };
    let q = &s.q;
    // One task per (token, head): its scores, softmax and weighted values.
    let simd = rt.simd;
    s.attn.par_chunks_mut(hdv).enumerate().for_each(|(i, out)| {
        let (t, hq) = (i / cfg.n_head, i % cfg.n_head);
        let Row { slot, pos } = rows[t];
        let hk = hq / group;
        let args = HeadArgs {
            q: &q[t * cfg.q_dim() + hq * hd..t * cfg.q_dim() + (hq + 1) * hd],
            k: &caches[slot].k[l],
            v: &caches[slot].v[l],
            k_dim,
            v_dim,
            k_off: hk * hd,
            v_off: hk * hdv,
            first: window.map_or(0, |w| (pos + 1).saturating_sub(w)),
            last: pos,
            scale: cfg.attention_scale,
        };
        head(simd, &args, out);
    });
    s.set_acts(Rows::Attn);
    matmul(rt, &lw.wo, &s.acts, &mut s.proj);
    add_output(x, &mut s.proj, lw.attn_post_norm.as_deref(), cfg.rms_eps);
}

/// The feed-forward half of a block, adding its output to `x`.
fn ffn_block(
    rt: &CpuRuntime,
    cfg: &ModelConfig,
    lw: &super::cpu_weights::CpuLayer,
    x: &mut [f32],
    s: &mut Scratch,
) {
    s.h.copy_from_slice(x);
    norm_rows(&mut s.h, &lw.ffn_norm, cfg.rms_eps);
    s.set_acts(Rows::H);
    matmuls(
        rt,
        &s.acts,
        &mut [(&lw.w_gate, &mut s.gate), (&lw.w_up, &mut s.up)],
    );
    for (g, u) in s.gate.iter_mut().zip(&s.up) {
        let a = match cfg.activation {
            Activation::Silu => silu(*g),
            Activation::GeluTanh => gelu_tanh(*g),
        };
        *g = a * u;
    }
    s.set_acts(Rows::Gate);
    matmul(rt, &lw.w_down, &s.acts, &mut s.proj);
    add_output(x, &mut s.proj, lw.ffn_post_norm.as_deref(), cfg.rms_eps);
}

/// RMSNorm of every row of `rows` (rows as long as `weight`) in place.
fn norm_rows(rows: &mut [f32], weight: &[f32], eps: f32) {
    rows.chunks_exact_mut(weight.len())
        .for_each(|r| rms_norm(r, weight, eps));
}

/// Adds a block's output to the residual stream `x`, after the block's post-norm (Gemma 3)
/// where it has one.
fn add_output(x: &mut [f32], out: &mut [f32], post_norm: Option<&[f32]>, eps: f32) {
    if let Some(w) = post_norm {
        norm_rows(out, w, eps);
    }
    x.iter_mut().zip(out.iter()).for_each(|(x, p)| *x += p);
}

impl TokenStep for CpuModel {
    type Error = CpuError;

    async fn step(&mut self, tokens: &[u32], start: usize) -> Result<u32> {
        self.run(tokens, start, None)
            .await?
            .ok_or(CpuError::from(ModelError::BatchState {
                reason: "step ended without a token",
            }))
    }

    async fn step_cancellable(
        &mut self,
        tokens: &[u32],
        start: usize,
        cancel: &CancelToken,
    ) -> Result<Option<u32>> {
        self.run(tokens, start, Some(cancel)).await
    }
}

impl ModelShape for CpuModel {
    fn max_context(&self) -> usize {
        self.max_ctx
    }

    fn vocab_size(&self) -> usize {
        self.config().vocab_size
    }
}
