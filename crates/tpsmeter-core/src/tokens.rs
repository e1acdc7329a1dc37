//! [`TokenCounter`]: how the core asks a tokenizer for a count, without depending on one.
//!
//! The core synthesises prompts of an exact token length and re-counts answers whose server
//! sent no usage, but a tokenizer is a large dependency with files to load: the CLI backs
//! this with the `tokenizers` crate (through `tpsmeter-gpu`), the browser with the same
//! code compiled to wasm and called through JavaScript. Tests use a whitespace counter.

use crate::error::Result;

/// Counts the tokens a model's tokenizer makes of a text, without special tokens (no BOS,
/// no chat template).
pub trait TokenCounter {
    fn count(&self, text: &str) -> Result<u32>;

    /// What the report calls this tokenizer (a file name, a model id).
    fn name(&self) -> &str;
}

impl std::fmt::Debug for dyn TokenCounter + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TokenCounter({})", self.name())
    }
}

/// A tokenizer shared between threads (the CLI counts answers off its driver's task).
impl<T: TokenCounter + ?Sized> TokenCounter for std::sync::Arc<T> {
    fn count(&self, text: &str) -> Result<u32> {
        (**self).count(text)
    }

    fn name(&self) -> &str {
        (**self).name()
    }
}

/// One token per whitespace-separated word: a stand-in for tests and documentation, not a
/// real tokenizer.
#[derive(Debug, Clone, Default)]
pub struct WordCounter;

impl TokenCounter for WordCounter {
    fn count(&self, text: &str) -> Result<u32> {
        Ok(u32::try_from(text.split_whitespace().count()).unwrap_or(u32::MAX))
    }

    fn name(&self) -> &str {
        "words"
    }
}
