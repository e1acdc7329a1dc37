//! [`Tokenizer`]: encoding through `tokenizers`, decoding through a per-token byte table.

use super::admit::{MAX_VOCAB, admit};
use super::build::{SPM_SPACE, build_gpt2, build_spm};
use super::byte_level::ByteDecoder;
use super::spec::{TokenType, TokenizerSpec, VocabKind};
use super::vet::Pipeline;
use crate::{ModelError, Result};

/// Largest `tokenizer.json` accepted: the largest real ones, 256k vocabularies (Gemma's),
/// are ~35 MB. The CLI refuses a bigger file before reading it, the browser stops reading.
pub const MAX_TOKENIZER_JSON_BYTES: usize = 128 << 20;

/// Texts of control tokens that end a turn in the chat formats of the field. llama.cpp keeps
/// a similar list because GGUF files often name only one of them as EOS.
const END_OF_GENERATION_TEXTS: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<|eom_id|>",
    "<EOT>",
    "<|return|>",
];

/// The ids with a role in generation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpecialTokens {
    pub bos: Option<u32>,
    pub eos: Option<u32>,
    pub eot: Option<u32>,
    pub unk: Option<u32>,
    pub pad: Option<u32>,
    /// Every id that ends generation: EOS, EOT, EOM and control tokens known to end a turn.
    pub end_of_generation: Vec<u32>,
}

/// What one token id stands for when decoded.
#[derive(Debug, Clone)]
struct Piece {
    bytes: Box<[u8]>,
    /// Control and unknown tokens are markup: shown only when asked for.
    markup: bool,
}

/// A tokenizer ready to encode prompts and decode generated ids.
#[derive(Debug, Clone)]
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    kind: VocabKind,
    pieces: Vec<Piece>,
    specials: SpecialTokens,
    add_bos: bool,
    add_eos: bool,
    /// SentencePiece's dummy prefix: encoding adds a space before the text, decoding a
    /// sequence from its start removes it.
    space_prefix: bool,
    chat_template: Option<String>,
}

impl Tokenizer {
    /// Builds the tokenizer a GGUF file's metadata describes.
    pub fn from_spec(spec: &TokenizerSpec) -> Result<Self> {
        if spec.tokens.len() > MAX_VOCAB {
            return Err(ModelError::FileLimit {
                what: "vocabulary size".to_owned(),
                value: spec.tokens.len() as u64,
                limit: MAX_VOCAB as u64,
            });
        }
        if let Some(types) = &spec.token_types
            && types.len() != spec.tokens.len()
        {
            return Err(ModelError::BadMetadata {
                key: "tokenizer.ggml.token_type".to_owned(),
                reason: format!("{} types for {} tokens", types.len(), spec.tokens.len()),
            });
        }
        let vocab = spec.tokens.len();
        for (name, id) in [
            ("bos", spec.bos),
            ("eos", spec.eos),
            ("eot", spec.eot),
            ("eom", spec.eom),
            ("unknown", spec.unk),
            ("padding", spec.pad),
        ] {
            if let Some(id) = id
                && id as usize >= vocab
            {
                return Err(ModelError::BadMetadata {
                    key: format!("tokenizer.ggml.{name}_token_id"),
                    reason: format!("id {id} is outside the vocabulary of {vocab}"),
                });
            }
        }
        let (inner, space_prefix, add_bos) = match spec.model {
            VocabKind::Gpt2 => (build_gpt2(spec)?, false, spec.add_bos.unwrap_or(false)),
            VocabKind::Llama => {
                // SentencePiece models add the dummy prefix and BOS unless told otherwise.
                let prefix = spec.add_space_prefix.unwrap_or(true);
                (
                    build_spm(spec, prefix)?,
                    prefix,
                    spec.add_bos.unwrap_or(true),
                )
            }
        };
        let pieces = pieces_of(spec);
        let mut end_of_generation: Vec<u32> = [spec.eos, spec.eot, spec.eom]
            .into_iter()
            .flatten()
            .collect();
        for (id, text) in spec.tokens.iter().enumerate() {
            let is_control = matches!(spec.token_type(id), TokenType::Control);
            if is_control && END_OF_GENERATION_TEXTS.contains(&text.as_str()) {
                end_of_generation.push(id as u32);
            }
        }
        end_of_generation.sort_unstable();
        end_of_generation.dedup();
        Ok(Self {
            inner,
            kind: spec.model,
            pieces,
            specials: SpecialTokens {
                bos: spec.bos,
                eos: spec.eos,
                eot: spec.eot,
                unk: spec.unk,
                pad: spec.pad,
                end_of_generation,
            },
            add_bos: add_bos && spec.bos.is_some(),
            add_eos: spec.add_eos.unwrap_or(false) && spec.eos.is_some(),
            space_prefix,
            chat_template: spec.chat_template.clone(),
        })
    }

    /// Wraps a `tokenizer.json`. Its special ids live in `tokenizer_config.json`, which is not
    /// read here: pass them in `specials` (and whether to add BOS).
    pub fn from_tokenizer_json(
        json: &[u8],
        specials: SpecialTokens,
        add_bos: bool,
    ) -> Result<Self> {
        if json.len() > MAX_TOKENIZER_JSON_BYTES {
            return Err(ModelError::LimitExceeded {
                what: "tokenizer.json size (bytes)".to_owned(),
                value: json.len() as u64,
                limit: MAX_TOKENIZER_JSON_BYTES as u64,
            });
        }
        // Before `tokenizers` builds any of it: the model type and sizes, then every regex.
        admit(json)?;
        let pipeline = Pipeline::vetted(json)?;
        let mut inner =
            tokenizers::Tokenizer::from_bytes(json).map_err(|e| ModelError::Tokenizer {
                reason: format!("tokenizer.json: {e}"),
            })?;
        // A count is of the whole text: truncation would cap it at the file's `max_length`,
        // and a fixed padding length (10^12, say) is an allocation of that many tokens.
        inner.with_padding(None);
        inner
            .with_truncation(None)
            .map_err(|e| ModelError::Tokenizer {
                reason: format!("tokenizer.json: {e}"),
            })?;
        let (kind, space_prefix) = decoder_kind(&pipeline.decoder);
        let size = inner.get_vocab_size(true);
        if size > MAX_VOCAB {
            return Err(ModelError::LimitExceeded {
                what: "vocabulary size".to_owned(),
                value: size as u64,
                limit: MAX_VOCAB as u64,
            });
        }
        let mut spec = TokenizerSpec::new(kind, vec![String::new(); size]);
        let mut types = vec![1; size];
        for (text, id) in inner.get_vocab(true) {
            if let Some(slot) = spec.tokens.get_mut(id as usize) {
                *slot = text;
            }
        }
        for (id, added) in inner.get_added_tokens_decoder() {
            if let Some(t) = types.get_mut(id as usize) {
                *t = if added.special { 3 } else { 4 };
            }
        }
        if kind == VocabKind::Llama {
            for (id, text) in spec.tokens.iter().enumerate() {
                if parse_byte_token(text).is_some() && types[id] == 1 {
                    types[id] = 6;
                }
            }
        }
        spec.token_types = Some(types);
        Ok(Self {
            pieces: pieces_of(&spec),
            inner,
            kind,
            add_bos: add_bos && specials.bos.is_some(),
            add_eos: false,
            specials,
            space_prefix,
            chat_template: None,
        })
    }

    /// The `tokenizers` pipeline underneath.
    pub fn inner(&self) -> &tokenizers::Tokenizer {
        &self.inner
    }

    pub fn kind(&self) -> VocabKind {
        self.kind
    }

    pub fn vocab_size(&self) -> usize {
        self.pieces.len()
    }

    pub fn specials(&self) -> &SpecialTokens {
        &self.specials
    }

    /// Whether encoding with `add_special` prepends BOS (`tokenizer.ggml.add_bos_token`).
    pub fn adds_bos(&self) -> bool {
        self.add_bos
    }

    /// The chat template from the model's metadata, if it has one.
    pub fn chat_template(&self) -> Option<&str> {
        self.chat_template.as_deref()
    }

    /// The text of token `id` as stored in the vocabulary (`<|im_start|>`, `Ġthe`).
    pub fn token_text(&self, id: u32) -> Option<String> {
        self.inner.id_to_token(id)
    }

    /// Whether `id` ends generation.
    pub fn is_end_of_generation(&self, id: u32) -> bool {
        self.specials.end_of_generation.binary_search(&id).is_ok()
    }

    /// Encodes `text`. Control tokens written in the text (`<|im_start|>`) become their ids,
    /// as llama.cpp does for prompts; `add_special` adds BOS/EOS where the model wants them.
    pub fn encode(&self, text: &str, add_special: bool) -> Result<Vec<u32>> {
        let enc = self
            .inner
            .encode(text, false)
            .map_err(|e| ModelError::Tokenizer {
                reason: format!("encoding {} bytes: {e}", text.len()),
            })?;
        let ids = enc.get_ids();
        let mut out = Vec::with_capacity(ids.len() + 2);
        if add_special && self.add_bos {
            out.extend(self.specials.bos);
        }
        out.extend_from_slice(ids);
        if add_special && self.add_eos {
            out.extend(self.specials.eos);
        }
        Ok(out)
    }

    /// The raw bytes token `id` stands for; `None` for markup when `render_markup` is false.
    /// Bytes, not text: a byte-fallback or byte-level token may hold part of a character.
    pub fn piece_bytes(&self, id: u32, render_markup: bool) -> Result<Option<&[u8]>> {
        let piece = self
            .pieces
            .get(id as usize)
            .ok_or(ModelError::TokenOutOfRange {
                token: id,
                vocab: self.pieces.len(),
            })?;
        Ok((!piece.markup || render_markup).then_some(&*piece.bytes))
    }

    /// Whether decoding a sequence from its start drops one leading space (SentencePiece's
    /// dummy prefix).
    pub fn strips_leading_space(&self) -> bool {
        self.space_prefix
    }

    /// Decodes a whole sequence, BOS and other markup included only if `render_markup`.
    /// Invalid UTF-8 becomes U+FFFD, exactly as the streaming [`crate::detok::Detokenizer`]
    /// renders it, so both always agree.
    pub fn decode(&self, ids: &[u32], render_markup: bool) -> Result<String> {
        let mut bytes = Vec::new();
        for &id in ids {
            if let Some(b) = self.piece_bytes(id, render_markup)? {
                bytes.extend_from_slice(b);
            }
        }
        let text = String::from_utf8_lossy(&bytes);
        Ok(match text.strip_prefix(' ') {
            Some(rest) if self.space_prefix => rest.to_owned(),
            _ => text.into_owned(),
        })
    }
}

/// `<0xAB>` → 0xAB.
fn parse_byte_token(text: &str) -> Option<u8> {
    let hex = text.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2 {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

/// The byte table: what each id decodes to, the way llama.cpp's `token_to_piece` renders it.
fn pieces_of(spec: &TokenizerSpec) -> Vec<Piece> {
    let byte_decoder = ByteDecoder::default();
    spec.tokens
        .iter()
        .enumerate()
        .map(|(id, text)| {
            let ty = spec.token_type(id);
            let markup = matches!(ty, TokenType::Control | TokenType::Unknown);
            let bytes: Vec<u8> = match (ty, spec.model) {
                (TokenType::Control | TokenType::Unknown | TokenType::UserDefined, _) => {
                    text.as_bytes().to_vec()
                }
                (TokenType::Byte, _) => parse_byte_token(text)
                    .map(|b| vec![b])
                    .unwrap_or_else(|| text.as_bytes().to_vec()),
                (_, VocabKind::Gpt2) => byte_decoder
                    .decode(text)
                    .unwrap_or_else(|| text.as_bytes().to_vec()),
                (_, VocabKind::Llama) => text.replace(SPM_SPACE, " ").into_bytes(),
            };
            Piece {
                bytes: bytes.into_boxed_slice(),
                markup,
            }
        })
        .collect()
}

/// Reads which decoder a `tokenizer.json` uses: `ByteLevel` means byte-level BPE, `ByteFallback`
/// SentencePiece (with `Strip` when it removes the dummy prefix).
fn decoder_kind(decoder: &serde_json::Value) -> (VocabKind, bool) {
    let decoder = decoder.to_string();
    if decoder.contains("\"ByteFallback\"") || decoder.contains('\u{2581}') {
        (VocabKind::Llama, decoder.contains("\"Strip\""))
    } else {
        (VocabKind::Gpt2, false)
    }
}
