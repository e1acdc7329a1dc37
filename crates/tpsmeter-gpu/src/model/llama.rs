//! The weights of a Llama-family model (Llama, SmolLM2, TinyLlama, Qwen2, Gemma 3) on the GPU.
//!
//! Matrices are uploaded quantized as the file stores them (repacked by
//! [`QWeight::upload`], split by rows where one binding would exceed the adapter's
//! `maxStorageBufferBindingSize`); small vectors (norms, biases) are expanded to f32, which
//! costs a few hundred KiB. Shapes are checked against the configuration so the forward pass
//! can wire dispatches without further checks.

use crate::error::{GpuError, Result};
use std::collections::HashMap;

use crate::gguf::{GgmlType, GgufFile, TensorInfo};
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

/// Tensors as they arrive, in any order, before [`GpuWeights::assemble`] wires them up:
/// matrices uploaded at once (so a streamed download never holds the whole file), vectors
/// (norms, biases, RoPE factors: a few hundred KiB) kept on the host as f32 until their
/// role is known. Whole files and downloads take this one path.
#[derive(Debug, Default)]
pub struct StagedWeights {
    matrices: HashMap<String, (QWeight, Vec<u64>)>,
    vectors: HashMap<String, (Vec<f32>, Vec<u64>)>,
}

impl StagedWeights {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one tensor: a vector (one dimension above 1 at most) is dequantized on the host;
    /// a matrix is uploaded quantized as stored. Tensors of more dimensions are not used by
    /// this forward pass and are dropped here (assembly names any it needed).
    pub fn accept(&mut self, ctx: &GpuContext, info: &TensorInfo, bytes: &[u8]) -> Result<()> {
        let name = &info.name;
        let mut dims = info.dims.clone();
        while dims.len() > 2 && dims.last() == Some(&1) {
            dims.pop();
        }
        let first = dims.first().copied().unwrap_or(1);
        if info.n_elements == first {
            let n = usize::try_from(info.n_elements).map_err(|_| GpuError::LimitExceeded {
                what: format!("elements of tensor {name:?} on this platform"),
                value: info.n_elements,
                limit: usize::MAX as u64,
            })?;
            let values = crate::quant::dequantize_to_vec(info.ty, bytes, n)?;
            self.vectors
                .insert(name.clone(), (values, info.dims.clone()));
        } else if let [cols, rows] = dims[..] {
            let too_big = |v: u64| GpuError::LimitExceeded {
                what: format!("dimension of tensor {name:?} on this platform"),
                value: v,
                limit: usize::MAX as u64,
            };
            let cols = usize::try_from(cols).map_err(|_| too_big(cols))?;
            let rows = usize::try_from(rows).map_err(|_| too_big(rows))?;
            let format = weight_format(info.ty, name)?;
            let weight = QWeight::upload(ctx, name, format, rows, cols, bytes)?;
            self.matrices
                .insert(name.clone(), (weight, info.dims.clone()));
        }
        Ok(())
    }

    fn has(&self, name: &str) -> bool {
        self.matrices.contains_key(name) || self.vectors.contains_key(name)
    }

    fn missing(name: &str) -> GpuError {
        GpuError::MissingTensor { name: name.into() }
    }

    /// Matrix `name`, which must be `rows x cols` (ggml dims `[cols, rows]`).
    fn matrix(&mut self, name: &str, cols: usize, rows: usize) -> Result<QWeight> {
        let (weight, dims) = self
            .matrices
            .remove(name)
            .ok_or_else(|| Self::missing(name))?;
        if weight.rows != rows || weight.cols != cols {
            return Err(GpuError::WrongTensorShape {
                tensor: name.into(),
                expected: vec![cols as u64, rows as u64],
                found: dims,
            });
        }
        Ok(weight)
    }

    /// Vector `name` of `len` values, on the host.
    fn host_vector(&mut self, name: &str, len: usize) -> Result<Vec<f32>> {
        let (values, dims) = self
            .vectors
            .remove(name)
            .ok_or_else(|| Self::missing(name))?;
        if values.len() != len {
            return Err(GpuError::WrongTensorShape {
                tensor: name.into(),
                expected: vec![len as u64],
                found: dims,
            });
        }
        Ok(values)
    }

    /// Vector `name` of `len` values, uploaded as f32.
    fn vector(&mut self, ctx: &GpuContext, name: &str, len: usize) -> Result<Tensor> {
        Tensor::from_f32(ctx, name, &self.host_vector(name, len)?, DType::F32)
    }
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

    /// Uploads every weight `cfg` needs from `file`, tensor by tensor in file order (the
    /// order a download delivers them), then assembles them.
    pub fn upload(ctx: &GpuContext, file: &GgufFile<'_>, cfg: &ModelConfig) -> Result<Self> {
        Self::check_config(cfg)?;
        let mut staged = StagedWeights::new();
        let mut infos: Vec<&TensorInfo> = file.header.tensors.iter().collect();
        infos.sort_by_key(|i| i.offset);
        for info in infos {
            staged.accept(ctx, info, file.bytes_of(info)?)?;
        }
        Self::assemble(ctx, staged, cfg)
    }

    /// Wires staged tensors into the weights `cfg` needs, checking every shape. A tensor the
    /// model needs and `staged` lacks is [`GpuError::MissingTensor`].
    pub fn assemble(
        ctx: &GpuContext,
        mut staged: StagedWeights,
        cfg: &ModelConfig,
    ) -> Result<Self> {
        Self::check_config(cfg)?;
        let st = &mut staged;
        let rope_freqs = if st.has("rope_freqs.weight") {
            Some(st.vector(ctx, "rope_freqs.weight", cfg.rope_dim / 2)?)
        } else {
            None
        };
        let e = cfg.n_embd;
        let mut layers = Vec::with_capacity(cfg.n_layers);
        for l in 0..cfg.n_layers {
            let n = |s: &str| format!("blk.{l}.{s}");
            let bias = if cfg.qkv_bias {
                Some([
                    st.host_vector(&n("attn_q.bias"), cfg.q_dim())?,
                    st.host_vector(&n("attn_k.bias"), cfg.k_dim())?,
                    st.host_vector(&n("attn_v.bias"), cfg.v_dim())?,
                ])
            } else {
                None
            };
            let qk_norm = if cfg.qk_norm {
                Some([
                    st.vector(ctx, &n("attn_q_norm.weight"), cfg.head_dim)?,
                    st.vector(ctx, &n("attn_k_norm.weight"), cfg.head_dim)?,
                ])
            } else {
                None
            };
            let attn_post_norm = if cfg.post_norms {
                Some(st.vector(ctx, &n("post_attention_norm.weight"), e)?)
            } else {
                None
            };
            let ffn_post_norm = if cfg.post_norms {
                Some(st.vector(ctx, &n("post_ffw_norm.weight"), e)?)
            } else {
                None
            };
            layers.push(GpuLayer {
                attn_norm: st.vector(ctx, &n("attn_norm.weight"), e)?,
                wq: st.matrix(&n("attn_q.weight"), e, cfg.q_dim())?,
                wk: st.matrix(&n("attn_k.weight"), e, cfg.k_dim())?,
                wv: st.matrix(&n("attn_v.weight"), e, cfg.v_dim())?,
                bias,
                qk_norm,
                wo: st.matrix(&n("attn_output.weight"), cfg.q_dim(), e)?,
                attn_post_norm,
                ffn_norm: st.vector(ctx, &n("ffn_norm.weight"), e)?,
                w_gate: st.matrix(&n("ffn_gate.weight"), e, cfg.n_ff)?,
                w_up: st.matrix(&n("ffn_up.weight"), e, cfg.n_ff)?,
                w_down: st.matrix(&n("ffn_down.weight"), cfg.n_ff, e)?,
                ffn_post_norm,
            });
        }
        Ok(Self {
            token_embd: st.matrix("token_embd.weight", e, cfg.vocab_size)?,
            layers,
            output_norm: st.vector(ctx, "output_norm.weight", e)?,
            rope_freqs,
            output: if cfg.tied_embeddings {
                None
            } else {
                Some(st.matrix("output.weight", e, cfg.vocab_size)?)
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
