//! A tokenizer from the bytes of a file the user names: a GGUF (its embedded vocabulary) or
//! a Hugging Face `tokenizer.json`, told apart by the GGUF magic.

use crate::error::{GpuError, Result};
use crate::gguf::GgufHeader;
use crate::gguf::header::GGUF_MAGIC;

use super::{SpecialTokens, Tokenizer, TokenizerSpec};

/// Whether `bytes` start like a GGUF file.
pub fn is_gguf(bytes: &[u8]) -> bool {
    bytes.starts_with(&GGUF_MAGIC)
}

impl Tokenizer {
    /// The tokenizer of a GGUF file's header (`bytes` may stop anywhere after the header:
    /// tensors are not needed) or of a `tokenizer.json`. A `tokenizer.json` comes without its
    /// `tokenizer_config.json`, so no special ids are known: fine for counting text, which
    /// adds none.
    pub fn from_file_bytes(bytes: &[u8]) -> Result<Tokenizer> {
        if is_gguf(bytes) {
            let header = GgufHeader::parse(bytes)?;
            return Tokenizer::from_spec(&TokenizerSpec::from_gguf(&header.metadata)?);
        }
        if bytes.first().is_some_and(|b| *b == b'{') || bytes.is_empty() {
            return Tokenizer::from_tokenizer_json(bytes, SpecialTokens::default(), false);
        }
        Err(GpuError::Tokenizer {
            reason: "the file is neither a GGUF model nor a tokenizer.json".into(),
        })
    }

    /// Tokens in `text`, without special tokens.
    pub fn count(&self, text: &str) -> Result<u32> {
        Ok(u32::try_from(self.encode(text, false)?.len()).unwrap_or(u32::MAX))
    }
}
