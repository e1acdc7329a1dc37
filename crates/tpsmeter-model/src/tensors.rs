//! The GGUF names of a model's tensors: one table for the families [`crate::config`] reads
//! (Llama, and the Qwen and Gemma variants its switches describe), as llama.cpp names them.
//! Every loader (the GPU's, the CPU's, the f32 reference) and the synthetic writer take their
//! names from here, and [`LayerTensor::present`] says which a configuration has, so a
//! tensor a family adds is one row here, not four spellings.

use crate::config::ModelConfig;

/// The token embedding (also the output head where embeddings are tied).
pub const TOKEN_EMBD: &str = "token_embd.weight";
/// The last norm, before the output head.
pub const OUTPUT_NORM: &str = "output_norm.weight";
/// The output head, where it is not the embedding.
pub const OUTPUT: &str = "output.weight";
/// Llama 3's RoPE frequency factors, where the file has them.
pub const ROPE_FREQS: &str = "rope_freqs.weight";

/// A tensor of every layer, `blk.N.<suffix>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerTensor {
    AttnNorm,
    AttnQ,
    AttnK,
    AttnV,
    AttnQBias,
    AttnKBias,
    AttnVBias,
    AttnQNorm,
    AttnKNorm,
    AttnOutput,
    PostAttentionNorm,
    FfnNorm,
    FfnGate,
    FfnUp,
    FfnDown,
    PostFfwNorm,
}

/// The projections fused into one matrix at load, in row order.
pub const QKV: [LayerTensor; 3] = [LayerTensor::AttnQ, LayerTensor::AttnK, LayerTensor::AttnV];
/// The gate and up projections, fused where both are there.
pub const GATE_UP: [LayerTensor; 2] = [LayerTensor::FfnGate, LayerTensor::FfnUp];

impl LayerTensor {
    /// Every layer tensor, in the order a file usually holds them.
    pub const ALL: [LayerTensor; 16] = [
        LayerTensor::AttnNorm,
        LayerTensor::AttnQ,
        LayerTensor::AttnK,
        LayerTensor::AttnV,
        LayerTensor::AttnQBias,
        LayerTensor::AttnKBias,
        LayerTensor::AttnVBias,
        LayerTensor::AttnQNorm,
        LayerTensor::AttnKNorm,
        LayerTensor::AttnOutput,
        LayerTensor::PostAttentionNorm,
        LayerTensor::FfnNorm,
        LayerTensor::FfnGate,
        LayerTensor::FfnUp,
        LayerTensor::FfnDown,
        LayerTensor::PostFfwNorm,
    ];

    /// The name after `blk.N.`.
    pub const fn suffix(self) -> &'static str {
        match self {
            LayerTensor::AttnNorm => "attn_norm.weight",
            LayerTensor::AttnQ => "attn_q.weight",
            LayerTensor::AttnK => "attn_k.weight",
            LayerTensor::AttnV => "attn_v.weight",
            LayerTensor::AttnQBias => "attn_q.bias",
            LayerTensor::AttnKBias => "attn_k.bias",
            LayerTensor::AttnVBias => "attn_v.bias",
            LayerTensor::AttnQNorm => "attn_q_norm.weight",
            LayerTensor::AttnKNorm => "attn_k_norm.weight",
            LayerTensor::AttnOutput => "attn_output.weight",
            LayerTensor::PostAttentionNorm => "post_attention_norm.weight",
            LayerTensor::FfnNorm => "ffn_norm.weight",
            LayerTensor::FfnGate => "ffn_gate.weight",
            LayerTensor::FfnUp => "ffn_up.weight",
            LayerTensor::FfnDown => "ffn_down.weight",
            LayerTensor::PostFfwNorm => "post_ffw_norm.weight",
        }
    }

    /// Its name in layer `layer`.
    pub fn name(self, layer: usize) -> String {
        format!("blk.{layer}.{}", self.suffix())
    }

    /// Whether a model of `cfg` has it (biases, Q/K norms and post-norms are a family's
    /// switches; the rest every family has).
    pub fn present(self, cfg: &ModelConfig) -> bool {
        match self {
            LayerTensor::AttnQBias | LayerTensor::AttnKBias | LayerTensor::AttnVBias => {
                cfg.qkv_bias
            }
            LayerTensor::AttnQNorm | LayerTensor::AttnKNorm => cfg.qk_norm,
            LayerTensor::PostAttentionNorm | LayerTensor::PostFfwNorm => cfg.post_norms,
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_layer_tensor_has_its_own_name() {
        let names: std::collections::BTreeSet<_> =
            LayerTensor::ALL.iter().map(|t| t.suffix()).collect();
        assert_eq!(names.len(), LayerTensor::ALL.len());
        assert_eq!(LayerTensor::FfnDown.name(3), "blk.3.ffn_down.weight");
        let whole = [TOKEN_EMBD, OUTPUT_NORM, OUTPUT, ROPE_FREQS];
        assert!(whole.iter().all(|w| !names.contains(w)));
    }
}
