//! The weights of a Llama-family model (Llama, SmolLM2, TinyLlama, Qwen2, Gemma 3) on the GPU.
//!
//! Matrices are uploaded quantized as the file stores them (repacked by
//! [`QWeight::upload`], split by rows where one binding would exceed the adapter's
//! `maxStorageBufferBindingSize`); small vectors (norms, biases) are expanded to f32, which
//! costs a few hundred KiB. Shapes are checked against the configuration so the forward pass
//! can wire dispatches without further checks.

use crate::error::{GpuError, Result};
use crate::gguf::{GgmlType, GgufFile};
use crate::gpu::context::GpuContext;
use crate::gpu::defines::DType;
use crate::kernels::{QWeight, Tensor, WeightFormat};
use crate::model::config::ModelConfig;

/// One transformer block's weights.
#[derive(Debug)]
pub struct GpuLayer {
    pub attn_norm: Tensor,
    pub wq: QWeight,
    pub wk: QWeight,
    pub wv: QWeight,
    /// Qwen2's q/k/v biases, kept on the host: the engine uploads them repeated for its
    /// largest batch so that one elementwise add covers every token.
    pub bias: Option<[Vec<f32>; 3]>,
    /// Gemma 3's RMSNorm weights of each query and key head (`[head_dim]`).
    pub qk_norm: Option<[Tensor; 2]>,
    pub wo: QWeight,
    /// Gemma 3's RMSNorm of the attention output before the residual add.
    pub attn_post_norm: Option<Tensor>,
    pub ffn_norm: Tensor,
    pub w_gate: QWeight,
    pub w_up: QWeight,
    pub w_down: QWeight,
    /// Gemma 3's RMSNorm of the FFN output before the residual add.
    pub ffn_post_norm: Option<Tensor>,
}

/// All weights of a Llama-family model, resident on one device.
#[derive(Debug)]
pub struct GpuWeights {
    /// `[vocab, n_embd]`, read by the embedding lookup and, when tied, by the output head.
    pub token_embd: QWeight,
    pub layers: Vec<GpuLayer>,
    pub output_norm: Tensor,
    /// `None` when the output head is tied to `token_embd`.
    pub output: Option<QWeight>,
    /// Llama 3.x RoPE frequency factors (`rope_freqs.weight`, `rope_dim / 2` values).
    pub rope_freqs: Option<Tensor>,
}

/// The matrix kernels' name for a GGML tensor type, or an error naming the tensor.
pub fn weight_format(ty: GgmlType, tensor: &str) -> Result<WeightFormat> {
    Ok(match ty {
        GgmlType::F32 => WeightFormat::F32,
        GgmlType::F16 => WeightFormat::F16,
        GgmlType::Q4_0 => WeightFormat::Q4_0,
        GgmlType::Q4_1 => WeightFormat::Q4_1,
        GgmlType::Q5_0 => WeightFormat::Q5_0,
        GgmlType::Q8_0 => WeightFormat::Q8_0,
        GgmlType::Q4_K => WeightFormat::Q4_K,
        GgmlType::Q6_K => WeightFormat::Q6_K,
        other => {
            return Err(GpuError::UnsupportedFormat {
                op: "weight upload",
                format: format!("{other} (tensor {tensor:?})"),
            });
        }
    })
}

/// Uploads matrix `name`, which must be `rows x cols` (ggml dims `[cols, rows]`).
fn matrix(
    ctx: &GpuContext,
    file: &GgufFile<'_>,
    name: &str,
    cols: usize,
    rows: usize,
) -> Result<QWeight> {
    let info = file.tensor_info(name)?;
    let mut dims = info.dims.clone();
    while dims.len() > 2 && dims.last() == Some(&1) {
        dims.pop();
    }
    if dims != [cols as u64, rows as u64] {
        return Err(GpuError::WrongTensorShape {
            tensor: name.into(),
            expected: vec![cols as u64, rows as u64],
            found: info.dims.clone(),
        });
    }
    let format = weight_format(info.ty, name)?;
    QWeight::upload(ctx, name, format, rows, cols, file.bytes_of(info)?)
}

/// Vector `name` of `len` values as f32 on the host.
fn host_vector(file: &GgufFile<'_>, name: &str, len: usize) -> Result<Vec<f32>> {
    let info = file.tensor_info(name)?;
    if info.n_elements != len as u64 {
        return Err(GpuError::WrongTensorShape {
            tensor: name.into(),
            expected: vec![len as u64],
            found: info.dims.clone(),
        });
    }
    file.dequantize(name)
}

/// Uploads vector `name` of `len` values as f32.
fn vector(ctx: &GpuContext, file: &GgufFile<'_>, name: &str, len: usize) -> Result<Tensor> {
    Tensor::from_f32(ctx, name, &host_vector(file, name, len)?, DType::F32)
}

impl GpuWeights {
    /// Checks that `cfg` describes a model this forward pass implements.
    pub fn check_config(cfg: &ModelConfig) -> Result<()> {
        let unsupported = |reason: &str| GpuError::BadMetadata {
            key: "general.architecture".into(),
            reason: format!("{reason}: not implemented by the Llama forward pass"),
        };
        if cfg.head_dim_v != cfg.head_dim {
            return Err(unsupported("value heads wider or narrower than key heads"));
        }
        Ok(())
    }

    /// Uploads every weight `cfg` needs from `file`.
    pub fn upload(ctx: &GpuContext, file: &GgufFile<'_>, cfg: &ModelConfig) -> Result<Self> {
        Self::check_config(cfg)?;
        let rope_freqs = if file.header.has_tensor("rope_freqs.weight") {
            Some(vector(ctx, file, "rope_freqs.weight", cfg.rope_dim / 2)?)
        } else {
            None
        };
        let e = cfg.n_embd;
        let mut layers = Vec::with_capacity(cfg.n_layers);
        for l in 0..cfg.n_layers {
            let n = |s: &str| format!("blk.{l}.{s}");
            let bias = if cfg.qkv_bias {
                Some([
                    host_vector(file, &n("attn_q.bias"), cfg.q_dim())?,
                    host_vector(file, &n("attn_k.bias"), cfg.k_dim())?,
                    host_vector(file, &n("attn_v.bias"), cfg.v_dim())?,
                ])
            } else {
                None
            };
            let opt = |cond: bool, s: &str, len: usize| -> Result<Option<Tensor>> {
                cond.then(|| vector(ctx, file, &n(s), len)).transpose()
            };
            let qk_norm = if cfg.qk_norm {
                Some([
                    vector(ctx, file, &n("attn_q_norm.weight"), cfg.head_dim)?,
                    vector(ctx, file, &n("attn_k_norm.weight"), cfg.head_dim)?,
                ])
            } else {
                None
            };
            layers.push(GpuLayer {
                attn_norm: vector(ctx, file, &n("attn_norm.weight"), e)?,
                wq: matrix(ctx, file, &n("attn_q.weight"), e, cfg.q_dim())?,
                wk: matrix(ctx, file, &n("attn_k.weight"), e, cfg.k_dim())?,
                wv: matrix(ctx, file, &n("attn_v.weight"), e, cfg.v_dim())?,
                bias,
                qk_norm,
                wo: matrix(ctx, file, &n("attn_output.weight"), cfg.q_dim(), e)?,
                attn_post_norm: opt(cfg.post_norms, "post_attention_norm.weight", e)?,
                ffn_norm: vector(ctx, file, &n("ffn_norm.weight"), e)?,
                w_gate: matrix(ctx, file, &n("ffn_gate.weight"), e, cfg.n_ff)?,
                w_up: matrix(ctx, file, &n("ffn_up.weight"), e, cfg.n_ff)?,
                w_down: matrix(ctx, file, &n("ffn_down.weight"), cfg.n_ff, e)?,
                ffn_post_norm: opt(cfg.post_norms, "post_ffw_norm.weight", e)?,
            });
        }
        Ok(Self {
            token_embd: matrix(ctx, file, "token_embd.weight", e, cfg.vocab_size)?,
            layers,
            output_norm: vector(ctx, file, "output_norm.weight", e)?,
            rope_freqs,
            output: if cfg.tied_embeddings {
                None
            } else {
                Some(matrix(ctx, file, "output.weight", e, cfg.vocab_size)?)
            },
        })
    }

    /// The output head (tied or not).
    pub fn head(&self) -> &QWeight {
        self.output.as_ref().unwrap_or(&self.token_embd)
    }

    /// Bytes of matrices one decoded token reads: every layer matrix and the output head
    /// (the embedding lookup reads one row, which is negligible).
    pub fn bytes_per_token(&self) -> u64 {
        let layers: u64 = self
            .layers
            .iter()
            .map(|l| {
                [&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down]
                    .iter()
                    .map(|w| w.bytes())
                    .sum::<u64>()
            })
            .sum();
        layers + self.head().bytes()
    }
}
