//! The reference forward pass: one token at a time through every block, with a KV cache,
//! returning the logits. It is the oracle the GPU forward pass is tested against, so it
//! favours obviousness over speed: f32 throughout, no fusion, no threads.

use super::f32_weights::Weights;
use super::ops::{gelu_tanh, matvec, rms_norm, rope, silu, softmax};
use crate::error::{GpuError, Result};
use tpsmeter_model::ModelError;
use tpsmeter_model::config::{Activation, ModelConfig};
use tpsmeter_model::gguf::GgufFile;

/// Keys and values of every layer for positions `0..len`.
#[derive(Debug)]
pub struct KvCache {
    /// Per layer, `[capacity, k_dim]`.
    k: Vec<Vec<f32>>,
    /// Per layer, `[capacity, v_dim]`.
    v: Vec<Vec<f32>>,
    capacity: usize,
    len: usize,
    /// Keys and values rounded to f16 as they are stored (the engine's f16 cache, and
    /// llama.cpp's default): the reference then computes what such an engine computes.
    f16: bool,
}

impl KvCache {
    /// An empty cache for `capacity` positions.
    pub fn new(cfg: &ModelConfig, capacity: usize) -> Self {
        Self {
            k: vec![vec![0.0; capacity * cfg.k_dim()]; cfg.n_layers],
            v: vec![vec![0.0; capacity * cfg.v_dim()]; cfg.n_layers],
            capacity,
            len: 0,
            f16: false,
        }
    }

    /// Rounds keys and values to f16 as they are stored from now on.
    pub fn store_f16(&mut self, on: bool) {
        self.f16 = on;
    }

    /// Positions filled so far (the position of the next token).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no position is filled.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Forgets positions from `len` on (to re-decode from a shared prefix).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }
}

/// A model whose weights are dequantized to f32, runnable on the CPU.
#[derive(Debug)]
pub struct ReferenceModel {
    pub config: ModelConfig,
    pub weights: Weights,
}

impl ReferenceModel {
    /// Reads the configuration and dequantizes the weights of `file`.
    pub fn load(file: &GgufFile<'_>) -> Result<Self> {
        let config = ModelConfig::from_header(&file.header)?;
        let weights = Weights::load(file, &config)?;
        Ok(Self { config, weights })
    }

    /// A KV cache for up to `capacity` positions (capped at the model's context length).
    pub fn new_cache(&self, capacity: usize) -> KvCache {
        KvCache::new(&self.config, capacity.min(self.config.context_length))
    }

    /// Logits after each of `tokens`, appended at the cache's current position.
    pub fn forward_tokens(&self, tokens: &[u32], cache: &mut KvCache) -> Result<Vec<Vec<f32>>> {
        tokens.iter().map(|&t| self.forward(t, cache)).collect()
    }

    /// Runs one token at position `cache.len()` and returns the logits (`vocab_size`).
    pub fn forward(&self, token: u32, cache: &mut KvCache) -> Result<Vec<f32>> {
        let cfg = &self.config;
        let w = &self.weights;
        let pos = cache.len;
        if pos >= cache.capacity {
            return Err(GpuError::from(ModelError::ContextFull {
                position: pos,
                limit: cache.capacity,
            }));
        }
        let t = token as usize;
        if t >= cfg.vocab_size {
            return Err(GpuError::from(ModelError::TokenOutOfRange {
                token,
                vocab: cfg.vocab_size,
            }));
        }
        let (e, hd, hdv) = (cfg.n_embd, cfg.head_dim, cfg.head_dim_v);
        let group = cfg.n_head / cfg.n_head_kv;

        let mut x = w.token_embd[t * e..(t + 1) * e].to_vec();
        if let Some(s) = cfg.embedding_scale {
            x.iter_mut().for_each(|v| *v *= s);
        }
        let mut h = vec![0.0; e];
        let mut q = vec![0.0; cfg.q_dim()];
        let mut k = vec![0.0; cfg.k_dim()];
        let mut v = vec![0.0; cfg.v_dim()];
        let mut attn = vec![0.0; cfg.n_head * hdv];
        let mut proj = vec![0.0; e];
        let mut gate = vec![0.0; cfg.n_ff];
        let mut up = vec![0.0; cfg.n_ff];
        let mut scores = vec![0.0; pos + 1];
        let scaled_pos = pos as f32 / cfg.rope_scale;

        for (l, lw) in w.layers.iter().enumerate() {
            // Attention block.
            h.copy_from_slice(&x);
            rms_norm(&mut h, &lw.attn_norm, cfg.rms_eps);
            matvec(&lw.wq, &h, &mut q);
            matvec(&lw.wk, &h, &mut k);
            matvec(&lw.wv, &h, &mut v);
            for (out, bias) in [(&mut q, &lw.bq), (&mut k, &lw.bk), (&mut v, &lw.bv)] {
                if let Some(b) = bias {
                    out.iter_mut().zip(b).for_each(|(o, b)| *o += b);
                }
            }
            if let (Some(qn), Some(kn)) = (&lw.q_norm, &lw.k_norm) {
                q.chunks_exact_mut(hd)
                    .for_each(|head| rms_norm(head, qn, cfg.rms_eps));
                k.chunks_exact_mut(hd)
                    .for_each(|head| rms_norm(head, kn, cfg.rms_eps));
            }
            let base = cfg.rope_base_for_layer(l);
            // Local (sliding-window) layers are not position-scaled in llama.cpp's Gemma 3.
            let rope_pos = if cfg.is_local_layer(l) {
                pos as f32
            } else {
                scaled_pos
            };
            let freqs = w.rope_freqs.as_deref();
            for head in q.chunks_exact_mut(hd).chain(k.chunks_exact_mut(hd)) {
                rope(head, rope_pos, cfg.rope_dim, base, cfg.rope_layout, freqs);
            }
            cache.k[l][pos * k.len()..(pos + 1) * k.len()].copy_from_slice(&k);
            cache.v[l][pos * v.len()..(pos + 1) * v.len()].copy_from_slice(&v);
            if cache.f16 {
                let rows = cache.k[l][pos * k.len()..(pos + 1) * k.len()]
                    .iter_mut()
                    .chain(&mut cache.v[l][pos * v.len()..(pos + 1) * v.len()]);
                for x in rows {
                    *x = half::f16::from_f32(*x).to_f32();
                }
            }

            // Positions this layer may see: all, or the last `window` ones.
            let first = match cfg.sliding_window {
                Some(sw) if cfg.is_local_layer(l) => (pos + 1).saturating_sub(sw.window),
                _ => 0,
            };
            let (kc, vc) = (&cache.k[l], &cache.v[l]);
            let (k_dim, v_dim) = (cfg.k_dim(), cfg.v_dim());
            for hq in 0..cfg.n_head {
                let hk = hq / group;
                let qh = &q[hq * hd..(hq + 1) * hd];
                let sc = &mut scores[first..=pos];
                for (j, s) in sc.iter_mut().enumerate() {
                    let p = first + j;
                    let kh = &kc[p * k_dim + hk * hd..p * k_dim + (hk + 1) * hd];
                    *s = super::ops::dot(qh, kh) * cfg.attention_scale;
                }
                softmax(sc);
                let out = &mut attn[hq * hdv..(hq + 1) * hdv];
                out.fill(0.0);
                for (j, &p_weight) in sc.iter().enumerate() {
                    let p = first + j;
                    let vh = &vc[p * v_dim + hk * hdv..p * v_dim + (hk + 1) * hdv];
                    out.iter_mut().zip(vh).for_each(|(o, v)| *o += p_weight * v);
                }
            }
            matvec(&lw.wo, &attn, &mut proj);
            if let Some(n) = &lw.attn_post_norm {
                rms_norm(&mut proj, n, cfg.rms_eps);
            }
            x.iter_mut().zip(&proj).for_each(|(x, p)| *x += p);

            // Feed-forward block.
            h.copy_from_slice(&x);
            rms_norm(&mut h, &lw.ffn_norm, cfg.rms_eps);
            matvec(&lw.w_gate, &h, &mut gate);
            matvec(&lw.w_up, &h, &mut up);
            for (g, u) in gate.iter_mut().zip(&up) {
                let a = match cfg.activation {
                    Activation::Silu => silu(*g),
                    Activation::GeluTanh => gelu_tanh(*g),
                };
                *g = a * u;
            }
            matvec(&lw.w_down, &gate, &mut proj);
            if let Some(n) = &lw.ffn_post_norm {
                rms_norm(&mut proj, n, cfg.rms_eps);
            }
            x.iter_mut().zip(&proj).for_each(|(x, p)| *x += p);
        }
        cache.len += 1;

        rms_norm(&mut x, &w.output_norm, cfg.rms_eps);
        let out_w = w.output.as_deref().unwrap_or(&w.token_embd);
        let mut logits = vec![0.0; cfg.vocab_size];
        matvec(out_w, &x, &mut logits);
        Ok(logits)
    }
}

/// Index of the largest logit (lowest index on ties), as greedy decoding picks.
pub fn argmax(logits: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in logits.iter().enumerate() {
        if v > logits[best] {
            best = i;
        }
    }
    best
}
