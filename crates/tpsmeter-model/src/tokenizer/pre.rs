//! Pre-tokenizer regexes chosen by `tokenizer.ggml.pre`, as llama.cpp (`llama-vocab.cpp`)
//! maps them.
//!
//! llama.cpp applies a list of regexes one after another: each splits every piece the previous
//! one left into matches and the text between them. `tokenizers`' `Split` with `Isolated`
//! behaviour does exactly that, so each list becomes a `Sequence` of `Split`s.

use crate::{ModelError, Result};

/// GPT-2's regex. The trailing `\s+` of Hugging Face's version is left out as in llama.cpp:
/// the text between matches becomes a piece of its own either way.
const GPT2: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)";

/// Llama 3's regex with the case-insensitive group written out (llama.cpp does the same;
/// both engines then agree on which characters fold).
const LLAMA3: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Qwen2: Llama 3's regex with single digits.
const QWEN2: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// How a BPE vocabulary is pre-tokenized and merged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreTokenizerRecipe {
    /// Regexes applied in order.
    pub regexes: Vec<&'static str>,
    /// A word that is itself a vocabulary entry becomes that token without merging
    /// (Llama 3's `ignore_merges`).
    pub ignore_merges: bool,
}

impl PreTokenizerRecipe {
    /// The recipe for a `tokenizer.ggml.pre` value; unknown names are an error rather than a
    /// silent fallback, since a wrong split gives plausible but wrong token ids.
    pub fn for_pre(pre: &str) -> Result<Self> {
        let (regexes, ignore_merges): (Vec<&'static str>, bool) = match pre {
            "" | "default" => (
                vec![r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", "[0-9][0-9][0-9]"],
                false,
            ),
            "llama3" | "llama-v3" | "llama-bpe" | "falcon3" | "pixtral" | "dbrx" | "smaug-bpe" => {
                (vec![LLAMA3], true)
            }
            "qwen2" | "deepseek-r1-qwen" | "megrez" | "stablelm2" => (vec![QWEN2], false),
            "smollm" | "starcoder" | "refact" | "command-r" | "codeshell" | "exaone"
            | "minerva-7b" => (vec![r"\p{N}", GPT2], false),
            "gpt-2" | "phi-2" | "mpt" | "olmo" | "jais" | "exaone4" | "roberta-bpe" => {
                (vec![GPT2], false)
            }
            "falcon" => (
                vec![r"[\p{P}\$\+<=>\^~\|`]+", GPT2, "[0-9][0-9][0-9]"],
                false,
            ),
            other => {
                return Err(ModelError::UnsupportedTokenizer {
                    model: "gpt2".to_owned(),
                    pre: other.to_owned(),
                });
            }
        };
        Ok(Self {
            regexes,
            ignore_merges,
        })
    }
}
