//! Tokenizers built from GGUF metadata or a `tokenizer.json`, on Hugging Face's `tokenizers`.
//!
//! What it does: builds the encoding pipeline a GGUF file describes (byte-level BPE with the
//! pre-tokenizer `tokenizer.ggml.pre` names, or SentencePiece BPE with byte fallback), knows
//! the special tokens (BOS, EOS, end of turn, control tokens), and maps every token id to the
//! raw bytes it stands for, which streaming detokenization ([`crate::detok`]) needs.
//!
//! What it does not do: read GGUF files itself (see [`TokenizerSpec::from_gguf`]) or render
//! chat templates ([`crate::chat`]).

mod build;
mod byte_level;
mod gguf;
mod load;
mod pre;
mod spec;
mod text;

pub use load::is_gguf;
pub use pre::PreTokenizerRecipe;
pub use spec::{TokenType, TokenizerSpec, VocabKind};
pub use text::{SpecialTokens, Tokenizer};
