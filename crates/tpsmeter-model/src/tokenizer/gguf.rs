//! [`TokenizerSpec`] from GGUF metadata (`tokenizer.*` keys, as llama.cpp's converter writes
//! them).

use super::spec::{TokenizerSpec, VocabKind};
use crate::gguf::Metadata;
use crate::{ModelError, Result};

impl TokenizerSpec {
    /// Reads the tokenizer a GGUF file describes.
    pub fn from_gguf(meta: &Metadata) -> Result<Self> {
        let model_name = meta.get_str("tokenizer.ggml.model")?;
        let pre = meta.opt_str("tokenizer.ggml.pre")?.unwrap_or_default();
        let model = VocabKind::from_ggml_name(model_name).ok_or_else(|| {
            ModelError::UnsupportedTokenizer {
                model: model_name.to_owned(),
                pre: pre.to_owned(),
            }
        })?;
        let mut spec = Self::new(model, meta.get_str_array("tokenizer.ggml.tokens")?.to_vec());
        spec.pre = pre.to_owned();
        if meta.contains("tokenizer.ggml.merges") {
            spec.merges = meta.get_str_array("tokenizer.ggml.merges")?.to_vec();
        }
        if meta.contains("tokenizer.ggml.scores") {
            spec.scores = Some(meta.get_f32_array("tokenizer.ggml.scores")?.to_vec());
        }
        if meta.contains("tokenizer.ggml.token_type") {
            let key = "tokenizer.ggml.token_type";
            let types = meta
                .get_int_array(key)?
                .into_iter()
                .map(|t| {
                    i32::try_from(t).map_err(|_| ModelError::BadMetadata {
                        key: key.to_owned(),
                        reason: format!("token type {t} is not a llama.cpp token type"),
                    })
                })
                .collect::<Result<Vec<i32>>>()?;
            spec.token_types = Some(types);
        }
        spec.bos = meta.opt_u32("tokenizer.ggml.bos_token_id")?;
        spec.eos = meta.opt_u32("tokenizer.ggml.eos_token_id")?;
        spec.eot = meta.opt_u32("tokenizer.ggml.eot_token_id")?;
        spec.eom = meta.opt_u32("tokenizer.ggml.eom_token_id")?;
        spec.unk = meta.opt_u32("tokenizer.ggml.unknown_token_id")?;
        spec.pad = meta.opt_u32("tokenizer.ggml.padding_token_id")?;
        spec.add_bos = meta.opt_bool("tokenizer.ggml.add_bos_token")?;
        spec.add_eos = meta.opt_bool("tokenizer.ggml.add_eos_token")?;
        spec.add_space_prefix = meta.opt_bool("tokenizer.ggml.add_space_prefix")?;
        spec.chat_template = meta.opt_str("tokenizer.chat_template")?.map(str::to_owned);
        Ok(spec)
    }
}
