//! Model hyper-parameters read from GGUF metadata (`{arch}.block_count`, ...), for the
//! architectures this crate runs: Llama (SmolLM2, TinyLlama, Llama 3.x), Qwen2 (Llama plus
//! q/k/v biases) and Gemma 3 (GELU-tanh, QK-norm, pre/post norms, sliding-window layers with
//! their own RoPE base, scaled embeddings).
//!
//! Values are validated here (non-zero, dividing evenly, within sane caps) so the forward
//! passes can index without further checks.

use crate::error::{ModelError, Result};
use crate::gguf::GgufHeader;

/// Upper bound on layers, heads and widths accepted from metadata: far above real models,
/// low enough that products of them cannot overflow or demand absurd allocations.
const MAX_DIM: u32 = 1 << 20;

/// A model architecture this crate implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Architecture {
    /// `llama`: SmolLM2, TinyLlama, Llama 2/3.x.
    Llama,
    /// `qwen2`: Llama with biases on q, k and v.
    Qwen2,
    /// `gemma3`.
    Gemma3,
}

impl Architecture {
    /// Names accepted in `general.architecture`, for error messages.
    pub const SUPPORTED: &'static str = "llama, qwen2, gemma3";

    /// Parses `general.architecture`.
    pub fn from_name(name: &str) -> Result<Self> {
        match name {
            "llama" => Ok(Self::Llama),
            "qwen2" => Ok(Self::Qwen2),
            "gemma3" => Ok(Self::Gemma3),
            other => Err(ModelError::UnsupportedArchitecture {
                arch: other.to_owned(),
                supported: Self::SUPPORTED,
            }),
        }
    }

    /// The metadata key prefix (`llama`, `qwen2`, `gemma3`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Llama => "llama",
            Self::Qwen2 => "qwen2",
            Self::Gemma3 => "gemma3",
        }
    }
}

/// How RoPE pairs the dimensions of a head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeLayout {
    /// Adjacent pairs (2i, 2i+1): llama.cpp's `LLAMA_ROPE_TYPE_NORM`, used for `llama`
    /// because convert_hf_to_gguf permutes the q/k rows of HF Llama checkpoints into it.
    Interleaved,
    /// Halves (i, i + d/2): `LLAMA_ROPE_TYPE_NEOX`, used for qwen2 and gemma3.
    Neox,
}

/// Activation of the gated feed-forward network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// SwiGLU: silu(gate) * up.
    Silu,
    /// GeGLU with the tanh approximation of GELU: gelu_tanh(gate) * up.
    GeluTanh,
}

/// Hyper-parameters of a decoder-only transformer.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    pub arch: Architecture,
    /// Transformer blocks.
    pub n_layers: usize,
    /// Width of the residual stream.
    pub n_embd: usize,
    /// Hidden width of the feed-forward network.
    pub n_ff: usize,
    /// Query heads.
    pub n_head: usize,
    /// Key/value heads (grouped-query attention when fewer than `n_head`).
    pub n_head_kv: usize,
    /// Width of one query/key head (`attention.key_length`, else n_embd / n_head).
    pub head_dim: usize,
    /// Width of one value head (`attention.value_length`, else `head_dim`).
    pub head_dim_v: usize,
    /// Vocabulary size (rows of `token_embd.weight`).
    pub vocab_size: usize,
    /// Context length the model was trained for.
    pub context_length: usize,
    /// RMSNorm epsilon.
    pub rms_eps: f32,
    /// RoPE base of full-attention layers.
    pub rope_freq_base: f32,
    /// Leading dimensions of each head that RoPE rotates (`rope.dimension_count`).
    pub rope_dim: usize,
    /// Linear RoPE scaling factor (positions are divided by it); 1 when absent.
    pub rope_scale: f32,
    pub rope_layout: RopeLayout,
    /// No `output.weight`: the output projection reuses `token_embd.weight`.
    pub tied_embeddings: bool,
    /// Biases on the q, k and v projections (Qwen2).
    pub qkv_bias: bool,
    pub activation: Activation,
    /// Multiply token embeddings by this (Gemma: sqrt(n_embd)).
    pub embedding_scale: Option<f32>,
    /// Scale of attention scores (1/sqrt(head_dim) unless the architecture says otherwise).
    pub attention_scale: f32,
    /// RMSNorm on each query and key head before RoPE (Gemma 3).
    pub qk_norm: bool,
    /// RMSNorm on the attention and FFN outputs before the residual add (Gemma 2/3).
    pub post_norms: bool,
    /// Sliding-window attention: window length and which layers use it.
    pub sliding_window: Option<SlidingWindow>,
}

/// Sliding-window attention (Gemma 3: 5 local layers per global one).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlidingWindow {
    /// Tokens a local layer attends to (the current one included).
    pub window: usize,
    /// Every `pattern`-th layer (index % pattern == pattern - 1) is global.
    pub pattern: usize,
    /// RoPE base of the local layers.
    pub rope_freq_base_local: f32,
}

/// The name used before it was generalised; the struct covers every supported architecture.
pub type LlamaConfig = ModelConfig;

impl ModelConfig {
    /// Reads the hyper-parameters of the model in `header`.
    pub fn from_header(header: &GgufHeader) -> Result<Self> {
        let md = &header.metadata;
        let arch = Architecture::from_name(header.architecture()?)?;
        let p = arch.name();
        let key = |k: &str| format!("{p}.{k}");
        let dim = |k: &str| -> Result<usize> {
            let full = key(k);
            let v = md.get_u32(&full)?;
            if v == 0 || v > MAX_DIM {
                return Err(ModelError::BadMetadata {
                    key: full,
                    reason: format!("{v} is outside 1..={MAX_DIM}"),
                });
            }
            Ok(v as usize)
        };
        let opt_dim = |k: &str| -> Result<Option<usize>> {
            if md.contains(&key(k)) {
                dim(k).map(Some)
            } else {
                Ok(None)
            }
        };

        let n_layers = dim("block_count")?;
        let n_embd = dim("embedding_length")?;
        let n_ff = dim("feed_forward_length")?;
        let n_head = dim("attention.head_count")?;
        let n_head_kv = opt_dim("attention.head_count_kv")?.unwrap_or(n_head);
        let context_length = dim("context_length")?;
        let head_dim = match opt_dim("attention.key_length")? {
            Some(d) => d,
            None => {
                if !n_embd.is_multiple_of(n_head) {
                    return Err(bad(
                        key("attention.head_count"),
                        format!("{n_head} heads do not divide n_embd {n_embd}"),
                    ));
                }
                n_embd / n_head
            }
        };
        let head_dim_v = opt_dim("attention.value_length")?.unwrap_or(head_dim);
        if !n_head.is_multiple_of(n_head_kv) {
            return Err(bad(
                key("attention.head_count_kv"),
                format!("{n_head_kv} KV heads do not divide {n_head} query heads"),
            ));
        }
        let rope_dim = opt_dim("rope.dimension_count")?.unwrap_or(head_dim);
        if rope_dim > head_dim || !rope_dim.is_multiple_of(2) {
            return Err(bad(
                key("rope.dimension_count"),
                format!("{rope_dim} must be even and at most the head width {head_dim}"),
            ));
        }
        let rms_eps = md.get_f32(&key("attention.layer_norm_rms_epsilon"))?;
        let default_base = if arch == Architecture::Gemma3 {
            1e6
        } else {
            1e4
        };
        let rope_freq_base = md.opt_f32(&key("rope.freq_base"))?.unwrap_or(default_base);
        let rope_scale = match md.opt_str(&key("rope.scaling.type"))? {
            None | Some("none") => 1.0,
            Some("linear") => md.opt_f32(&key("rope.scaling.factor"))?.unwrap_or(1.0),
            // Llama 3.1+: per-dimension factors ship as the `rope_freqs.weight` tensor.
            Some("llama3") => 1.0,
            Some(other) => {
                return Err(bad(
                    key("rope.scaling.type"),
                    format!("RoPE scaling {other:?} is not implemented"),
                ));
            }
        };
        if !(rope_freq_base > 0.0 && rope_scale > 0.0 && rms_eps >= 0.0) {
            return Err(bad(
                key("rope.freq_base"),
                format!("base {rope_freq_base}, scale {rope_scale}, eps {rms_eps} out of range"),
            ));
        }

        let embd = header.tensor("token_embd.weight")?;
        if embd.dims.len() != 2 || embd.dims[0] != n_embd as u64 {
            return Err(ModelError::WrongTensorShape {
                tensor: embd.name.clone(),
                expected: vec![n_embd as u64, 0],
                found: embd.dims.clone(),
            });
        }
        let vocab_size = usize::try_from(embd.dims[1])
            .ok()
            .filter(|&v| v <= MAX_DIM as usize * 4)
            .ok_or_else(|| bad("token_embd.weight".into(), "vocabulary too large".into()))?;
        let tied_embeddings = !header.has_tensor("output.weight");
        let qkv_bias = header.has_tensor("blk.0.attn_q.bias");

        let mut cfg = Self {
            arch,
            n_layers,
            n_embd,
            n_ff,
            n_head,
            n_head_kv,
            head_dim,
            head_dim_v,
            vocab_size,
            context_length,
            rms_eps,
            rope_freq_base,
            rope_dim,
            rope_scale,
            rope_layout: RopeLayout::Interleaved,
            tied_embeddings,
            qkv_bias,
            activation: Activation::Silu,
            embedding_scale: None,
            attention_scale: 1.0 / (head_dim as f32).sqrt(),
            qk_norm: false,
            post_norms: false,
            sliding_window: None,
        };
        match arch {
            Architecture::Llama => {}
            Architecture::Qwen2 => cfg.rope_layout = RopeLayout::Neox,
            Architecture::Gemma3 => {
                cfg.rope_layout = RopeLayout::Neox;
                cfg.activation = Activation::GeluTanh;
                cfg.embedding_scale = Some((n_embd as f32).sqrt());
                cfg.qk_norm = true;
                cfg.post_norms = true;
                // llama.cpp: every 6th layer is global; local layers use RoPE base 10000.
                if let Some(window) = opt_dim("attention.sliding_window")? {
                    cfg.sliding_window = Some(SlidingWindow {
                        window,
                        pattern: 6,
                        rope_freq_base_local: 10_000.0,
                    });
                }
            }
        }
        Ok(cfg)
    }

    /// Width of all query heads together.
    pub fn q_dim(&self) -> usize {
        self.n_head * self.head_dim
    }

    /// Width of all key heads together.
    pub fn k_dim(&self) -> usize {
        self.n_head_kv * self.head_dim
    }

    /// Width of all value heads together.
    pub fn v_dim(&self) -> usize {
        self.n_head_kv * self.head_dim_v
    }

    /// Whether layer `layer` attends only within the sliding window.
    pub fn is_local_layer(&self, layer: usize) -> bool {
        self.sliding_window
            .is_some_and(|sw| layer % sw.pattern != sw.pattern - 1)
    }

    /// RoPE base used by layer `layer`.
    pub fn rope_base_for_layer(&self, layer: usize) -> f32 {
        match self.sliding_window {
            Some(sw) if self.is_local_layer(layer) => sw.rope_freq_base_local,
            _ => self.rope_freq_base,
        }
    }
}

fn bad(key: String, reason: String) -> ModelError {
    ModelError::BadMetadata { key, reason }
}
