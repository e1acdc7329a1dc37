//! Tokenizers built from GGUF metadata or a `tokenizer.json`, on Hugging Face's `tokenizers`.
//!
//! What it does: builds the encoding pipeline a GGUF file describes (byte-level BPE with the
//! pre-tokenizer `tokenizer.ggml.pre` names, or SentencePiece BPE with byte fallback), knows
//! the special tokens (BOS, EOS, end of turn, control tokens), and maps every token id to the
//! raw bytes it stands for, which streaming detokenization ([`crate::detok`]) needs.
//!
//! A `tokenizer.json` is untrusted (anyone can publish one): its model type and the sizes
//! that make loading or counting superlinear are checked before it is built (`admit.rs`:
//! BPE and Unigram only, Unigram pieces, added tokens), its regexes are vetted before they
//! are compiled ([`vet_pattern`]), and counting reads at most [`MAX_COUNT_BYTES`], in pieces,
//! within a time budget ([`count_budget_ms`]), so neither a hostile file nor a long text pins
//! the CPU or memory. A GGUF vocabulary's added tokens and SentencePiece pieces are held to
//! limits of the same kind.
//!
//! What it does not do: read GGUF files itself (see [`TokenizerSpec::from_gguf`]) or render
//! chat templates ([`crate::chat`]).

mod admit;
mod build;
mod byte_level;
mod gguf;
mod load;
mod patterns;
mod pre;
mod spec;
mod text;
mod token_span;
mod vet;

pub use admit::{
    ACCEPTED_MODELS, MAX_ADDED_TOKEN_BYTES, MAX_ADDED_TOKENS, MAX_ADDED_TOTAL_BYTES,
    MAX_UNIGRAM_PIECE_CHARS, MAX_VOCAB,
};
pub use load::{
    COUNT_BUDGET_BASE_MS, COUNT_BUDGET_MS_PER_MIB, COUNT_PIECE_BYTES, MAX_COUNT_BYTES,
    count_budget_ms, is_gguf,
};
pub use patterns::KNOWN_PATTERNS;
pub use pre::PreTokenizerRecipe;
pub use spec::{TokenType, TokenizerSpec, VocabKind};
pub use text::{MAX_TOKENIZER_JSON_BYTES, SpecialTokens, Tokenizer};
pub use token_span::TokenSpan;
pub use vet::{MAX_PATTERN_BYTES, MAX_PROGRAM_BYTES, vet_pattern};
