//! The CPU backend's weights: matrices in their stored block format ([`QMatrix`]), norms and
//! biases as f32 (a few KiB per layer).

use super::matrix::QMatrix;
use super::tensors::TensorSource;
use crate::error::Result;
use tpsmeter_model::ModelError;
use tpsmeter_model::config::ModelConfig;
use tpsmeter_model::tensors::{self, LayerTensor as L};

/// One transformer block.
#[derive(Debug)]
pub struct CpuLayer {
    pub attn_norm: Vec<f32>,
    pub wq: QMatrix,
    pub wk: QMatrix,
    pub wv: QMatrix,
    pub bq: Option<Vec<f32>>,
    pub bk: Option<Vec<f32>>,
    pub bv: Option<Vec<f32>>,
    pub q_norm: Option<Vec<f32>>,
    pub k_norm: Option<Vec<f32>>,
    pub wo: QMatrix,
    pub attn_post_norm: Option<Vec<f32>>,
    pub ffn_norm: Vec<f32>,
    pub w_gate: QMatrix,
    pub w_up: QMatrix,
    pub w_down: QMatrix,
    pub ffn_post_norm: Option<Vec<f32>>,
}

/// Every weight of a model.
#[derive(Debug)]
pub struct CpuWeights {
    /// `[vocab rows, n_embd]`.
    pub token_embd: QMatrix,
    pub layers: Vec<CpuLayer>,
    pub output_norm: Vec<f32>,
    /// `None` when tied to `token_embd`.
    pub output: Option<QMatrix>,
    pub rope_freqs: Option<Vec<f32>>,
    /// Whether any matrix is a K-quant, whose kernels read 256-blocks of activations
    /// (found once at load: a pass quantizes them only then).
    pub k_quants: bool,
}

/// A small f32 tensor of exactly `n` values (norms, biases), dequantized.
fn vector(file: &mut impl TensorSource, name: &str, n: usize) -> Result<Vec<f32>> {
    let info = file.info(name)?;
    let mut dims = info.dims.clone();
    while dims.len() > 1 && dims.last() == Some(&1) {
        dims.pop();
    }
    if dims != [n as u64] {
        return Err(crate::error::CpuError::from(ModelError::WrongTensorShape {
            tensor: name.into(),
            expected: vec![n as u64],
            found: info.dims.clone(),
        }));
    }
    file.dequantize(name)
}

/// [`vector`] of layer `layer`'s `tensor` when the configuration has it.
fn optional(
    file: &mut impl TensorSource,
    cfg: &ModelConfig,
    layer: usize,
    tensor: L,
    n: usize,
) -> Result<Option<Vec<f32>>> {
    tensor
        .present(cfg)
        .then(|| vector(file, &tensor.name(layer), n))
        .transpose()
}

impl CpuWeights {
    /// Takes every tensor the configuration needs out of `file` (a file's buffer can go once
    /// this returns), checking shapes.
    pub fn load(file: &mut impl TensorSource, cfg: &ModelConfig) -> Result<Self> {
        let (e, v) = (cfg.n_embd, cfg.vocab_size);
        let mut layers = Vec::with_capacity(cfg.n_layers);
        for l in 0..cfg.n_layers {
            layers.push(CpuLayer {
                attn_norm: vector(file, &L::AttnNorm.name(l), e)?,
                wq: QMatrix::load(file, &L::AttnQ.name(l), e, cfg.q_dim())?,
                wk: QMatrix::load(file, &L::AttnK.name(l), e, cfg.k_dim())?,
                wv: QMatrix::load(file, &L::AttnV.name(l), e, cfg.v_dim())?,
                bq: optional(file, cfg, l, L::AttnQBias, cfg.q_dim())?,
                bk: optional(file, cfg, l, L::AttnKBias, cfg.k_dim())?,
                bv: optional(file, cfg, l, L::AttnVBias, cfg.v_dim())?,
                q_norm: optional(file, cfg, l, L::AttnQNorm, cfg.head_dim)?,
                k_norm: optional(file, cfg, l, L::AttnKNorm, cfg.head_dim)?,
                wo: QMatrix::load(file, &L::AttnOutput.name(l), cfg.n_head * cfg.head_dim_v, e)?,
                attn_post_norm: optional(file, cfg, l, L::PostAttentionNorm, e)?,
                ffn_norm: vector(file, &L::FfnNorm.name(l), e)?,
                w_gate: QMatrix::load(file, &L::FfnGate.name(l), e, cfg.n_ff)?,
                w_up: QMatrix::load(file, &L::FfnUp.name(l), e, cfg.n_ff)?,
                w_down: QMatrix::load(file, &L::FfnDown.name(l), cfg.n_ff, e)?,
                ffn_post_norm: optional(file, cfg, l, L::PostFfwNorm, e)?,
            });
        }
        let mut w = Self {
            token_embd: QMatrix::load(file, tensors::TOKEN_EMBD, e, v)?,
            layers,
            output_norm: vector(file, tensors::OUTPUT_NORM, e)?,
            output: if cfg.tied_embeddings {
                None
            } else {
                Some(QMatrix::load(file, tensors::OUTPUT, e, v)?)
            },
            rope_freqs: if file.has(tensors::ROPE_FREQS) {
                Some(vector(file, tensors::ROPE_FREQS, cfg.rope_dim / 2)?)
            } else {
                None
            },
            k_quants: false,
        };
        w.k_quants = w.has_k_quants();
        Ok(w)
    }

    /// Whether any matrix is a K-quant.
    fn has_k_quants(&self) -> bool {
        use tpsmeter_model::quant::GgmlType::{Q4_K, Q5_K, Q6_K};
        let k = |q: &QMatrix| matches!(q.ty, Q4_K | Q5_K | Q6_K);
        k(&self.token_embd)
            || self.output.as_ref().is_some_and(k)
            || self.layers.iter().any(|l| {
                [&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down]
                    .into_iter()
                    .any(k)
            })
    }

    /// Weight bytes one decoded token reads: every layer matrix and the output head (the
    /// embedding table itself when tied), not the embedding table's other rows.
    pub fn bytes_per_token(&self) -> usize {
        let head = self.output.as_ref().unwrap_or(&self.token_embd).size();
        head + self
            .layers
            .iter()
            .map(|l| {
                [&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down]
                    .into_iter()
                    .map(QMatrix::size)
                    .sum::<usize>()
            })
            .sum::<usize>()
    }

    /// Bytes of weights held.
    pub fn size(&self) -> usize {
        let m = |q: &QMatrix| q.size();
        let f = |v: &Vec<f32>| v.len() * 4;
        let o = |v: &Option<Vec<f32>>| v.as_ref().map_or(0, f);
        m(&self.token_embd)
            + self.output.as_ref().map_or(0, m)
            + f(&self.output_norm)
            + self
                .layers
                .iter()
                .map(|l| {
                    m(&l.wq)
                        + m(&l.wk)
                        + m(&l.wv)
                        + m(&l.wo)
                        + m(&l.w_gate)
                        + m(&l.w_up)
                        + m(&l.w_down)
                        + f(&l.attn_norm)
                        + f(&l.ffn_norm)
                        + o(&l.bq)
                        + o(&l.bk)
                        + o(&l.bv)
                        + o(&l.q_norm)
                        + o(&l.k_norm)
                        + o(&l.attn_post_norm)
                        + o(&l.ffn_post_norm)
                })
                .sum::<usize>()
    }
}
