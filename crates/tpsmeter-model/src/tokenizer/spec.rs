//! The plain description of a tokenizer as GGUF metadata states it, before anything is built.
//!
//! Keeping this a plain struct (filled from a GGUF file, or by hand in tests) separates reading
//! metadata from building the `tokenizers` pipeline.

/// Which family of vocabulary `tokenizer.ggml.model` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VocabKind {
    /// `gpt2`: byte-level BPE with ranked merges (SmolLM2, Llama 3, Qwen2, GPT-2).
    Gpt2,
    /// `llama`: SentencePiece BPE with per-token scores and `<0xXX>` byte-fallback tokens
    /// (TinyLlama, Llama 2, Gemma).
    Llama,
}

impl VocabKind {
    /// Maps the `tokenizer.ggml.model` string; `None` for kinds this crate does not build.
    pub fn from_ggml_name(name: &str) -> Option<Self> {
        match name {
            "gpt2" => Some(Self::Gpt2),
            "llama" => Some(Self::Llama),
            _ => None,
        }
    }
}

/// The role of one vocabulary entry, as `tokenizer.ggml.token_type` numbers it (llama.cpp's
/// `llama_token_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenType {
    Normal,
    Unknown,
    /// Markup the model emits or reads but never shows as text (`<|im_start|>`, `<s>`).
    Control,
    /// Added pieces that are matched before pre-tokenizing and shown as text.
    UserDefined,
    Unused,
    /// `<0xXX>`: one raw byte (SentencePiece byte fallback).
    Byte,
}

impl TokenType {
    /// llama.cpp's numbering; 0 (undefined) and unknown numbers count as normal, as there.
    pub fn from_ggml(value: i32) -> Self {
        match value {
            2 => Self::Unknown,
            3 => Self::Control,
            4 => Self::UserDefined,
            5 => Self::Unused,
            6 => Self::Byte,
            _ => Self::Normal,
        }
    }
}

/// Everything needed to build a [`crate::tokenizer::Tokenizer`], as stored in GGUF metadata.
#[derive(Debug, Clone)]
pub struct TokenizerSpec {
    /// `tokenizer.ggml.model`.
    pub model: VocabKind,
    /// `tokenizer.ggml.pre`: names the pre-tokenizer regexes (BPE only); empty means default.
    pub pre: String,
    /// `tokenizer.ggml.tokens`, indexed by token id.
    pub tokens: Vec<String>,
    /// `tokenizer.ggml.merges`: `"left right"`, highest priority first (BPE only).
    pub merges: Vec<String>,
    /// `tokenizer.ggml.scores` (SentencePiece: a higher score merges first).
    pub scores: Option<Vec<f32>>,
    /// `tokenizer.ggml.token_type`, llama.cpp's numbering.
    pub token_types: Option<Vec<i32>>,
    pub bos: Option<u32>,
    pub eos: Option<u32>,
    /// End of turn (`<|eot_id|>`, `<end_of_turn>`) where the model has one apart from EOS.
    pub eot: Option<u32>,
    /// End of message (Llama 3.1 tool calls).
    pub eom: Option<u32>,
    pub unk: Option<u32>,
    pub pad: Option<u32>,
    /// `tokenizer.ggml.add_bos_token`; `None` uses the model family's default.
    pub add_bos: Option<bool>,
    pub add_eos: Option<bool>,
    /// `tokenizer.ggml.add_space_prefix` (SentencePiece's dummy prefix); `None` = family default.
    pub add_space_prefix: Option<bool>,
    /// `tokenizer.chat_template`, Jinja source.
    pub chat_template: Option<String>,
}

impl TokenizerSpec {
    /// A spec with only the vocabulary set; every optional field empty.
    pub fn new(model: VocabKind, tokens: Vec<String>) -> Self {
        Self {
            model,
            pre: String::new(),
            tokens,
            merges: Vec::new(),
            scores: None,
            token_types: None,
            bos: None,
            eos: None,
            eot: None,
            eom: None,
            unk: None,
            pad: None,
            add_bos: None,
            add_eos: None,
            add_space_prefix: None,
            chat_template: None,
        }
    }

    /// The type of token `id` (normal where the metadata has no types).
    pub fn token_type(&self, id: usize) -> TokenType {
        self.token_types
            .as_ref()
            .and_then(|t| t.get(id))
            .map_or(TokenType::Normal, |&t| TokenType::from_ggml(t))
    }
}
