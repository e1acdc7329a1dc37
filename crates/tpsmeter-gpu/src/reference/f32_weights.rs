//! The weights of the reference model, dequantized once to f32 at load and shape-checked
//! against the configuration. (Only the reference does this; the engine keeps blocks as
//! stored.)

use crate::error::{GpuError, Result};
use tpsmeter_model::ModelError;
use tpsmeter_model::config::ModelConfig;
use tpsmeter_model::gguf::GgufFile;
use tpsmeter_model::tensors::{self, LayerTensor as L};

/// One transformer block.
#[derive(Debug)]
pub struct LayerWeights {
    pub attn_norm: Vec<f32>,
    pub wq: Vec<f32>,
    pub wk: Vec<f32>,
    pub wv: Vec<f32>,
    pub bq: Option<Vec<f32>>,
    pub bk: Option<Vec<f32>>,
    pub bv: Option<Vec<f32>>,
    /// Gemma 3 per-head RMSNorm weights, `[head_dim]` each.
    pub q_norm: Option<Vec<f32>>,
    pub k_norm: Option<Vec<f32>>,
    pub wo: Vec<f32>,
    /// Gemma 3 norm of the attention output before the residual add.
    pub attn_post_norm: Option<Vec<f32>>,
    pub ffn_norm: Vec<f32>,
    pub w_gate: Vec<f32>,
    pub w_up: Vec<f32>,
    pub w_down: Vec<f32>,
    /// Gemma 3 norm of the FFN output before the residual add.
    pub ffn_post_norm: Option<Vec<f32>>,
}

/// All weights of a model.
#[derive(Debug)]
pub struct Weights {
    /// `[vocab, n_embd]` row-major.
    pub token_embd: Vec<f32>,
    pub layers: Vec<LayerWeights>,
    pub output_norm: Vec<f32>,
    /// `[vocab, n_embd]`; `None` when tied to `token_embd`.
    pub output: Option<Vec<f32>>,
    /// Llama 3.1+ RoPE frequency factors, `[rope_dim / 2]`.
    pub rope_freqs: Option<Vec<f32>>,
}

/// Loads tensor `name`, checking its dims (ggml order).
fn load(file: &GgufFile<'_>, name: &str, dims: &[usize]) -> Result<Vec<f32>> {
    let info = file.tensor_info(name)?;
    let want: Vec<u64> = dims.iter().map(|&d| d as u64).collect();
    // Trailing 1-sized dims are equivalent (ggml drops them; some writers keep them).
    let mut found = info.dims.clone();
    while found.len() > want.len() && found.last() == Some(&1) {
        found.pop();
    }
    if found != want {
        return Err(GpuError::from(ModelError::WrongTensorShape {
            tensor: name.into(),
            expected: want,
            found: info.dims.clone(),
        }));
    }
    Ok(file.dequantize(name)?)
}

fn load_opt(file: &GgufFile<'_>, name: &str, dims: &[usize]) -> Result<Option<Vec<f32>>> {
    if file.header.has_tensor(name) {
        load(file, name, dims).map(Some)
    } else {
        Ok(None)
    }
}

impl Weights {
    /// Dequantizes every tensor the configuration needs.
    pub fn load(file: &GgufFile<'_>, cfg: &ModelConfig) -> Result<Self> {
        let (e, v) = (cfg.n_embd, cfg.vocab_size);
        let mut layers = Vec::with_capacity(cfg.n_layers);
        for l in 0..cfg.n_layers {
            let required_if = |t: L, dims: &[usize]| -> Result<Option<Vec<f32>>> {
                if t.present(cfg) {
                    load(file, &t.name(l), dims).map(Some)
                } else {
                    Ok(None)
                }
            };
            layers.push(LayerWeights {
                attn_norm: load(file, &L::AttnNorm.name(l), &[e])?,
                wq: load(file, &L::AttnQ.name(l), &[e, cfg.q_dim()])?,
                wk: load(file, &L::AttnK.name(l), &[e, cfg.k_dim()])?,
                wv: load(file, &L::AttnV.name(l), &[e, cfg.v_dim()])?,
                bq: required_if(L::AttnQBias, &[cfg.q_dim()])?,
                bk: required_if(L::AttnKBias, &[cfg.k_dim()])?,
                bv: required_if(L::AttnVBias, &[cfg.v_dim()])?,
                q_norm: required_if(L::AttnQNorm, &[cfg.head_dim])?,
                k_norm: required_if(L::AttnKNorm, &[cfg.head_dim])?,
                wo: load(
                    file,
                    &L::AttnOutput.name(l),
                    &[cfg.n_head * cfg.head_dim_v, e],
                )?,
                attn_post_norm: required_if(L::PostAttentionNorm, &[e])?,
                ffn_norm: load(file, &L::FfnNorm.name(l), &[e])?,
                w_gate: load(file, &L::FfnGate.name(l), &[e, cfg.n_ff])?,
                w_up: load(file, &L::FfnUp.name(l), &[e, cfg.n_ff])?,
                w_down: load(file, &L::FfnDown.name(l), &[cfg.n_ff, e])?,
                ffn_post_norm: required_if(L::PostFfwNorm, &[e])?,
            });
        }
        Ok(Self {
            token_embd: load(file, tensors::TOKEN_EMBD, &[e, v])?,
            layers,
            output_norm: load(file, tensors::OUTPUT_NORM, &[e])?,
            output: if cfg.tied_embeddings {
                None
            } else {
                Some(load(file, tensors::OUTPUT, &[e, v])?)
            },
            rope_freqs: load_opt(file, tensors::ROPE_FREQS, &[cfg.rope_dim / 2])?,
        })
    }
}
