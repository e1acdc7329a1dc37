//! Builds a `tokenizers::Tokenizer` pipeline from a [`TokenizerSpec`].
//!
//! Two recipes, the two that GGUF files describe:
//! - byte-level BPE (`gpt2`): pre-tokenizer regexes per `tokenizer.ggml.pre`, then GPT-2's byte
//!   mapping, then ranked merges;
//! - SentencePiece BPE (`llama`): spaces become `▁` (plus a leading one when the model adds a
//!   space prefix), merges ordered by the merged piece's score, unknown characters fall back to
//!   `<0xXX>` byte tokens.
//!
//! Control, unknown and user-defined tokens are added tokens, matched in the raw text before
//! anything else, as llama.cpp partitions the text on them.

use tokenizers::decoders::DecoderWrapper;
use tokenizers::decoders::byte_fallback::ByteFallback;
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::decoders::fuse::Fuse;
use tokenizers::decoders::sequence::Sequence as DecoderSequence;
use tokenizers::decoders::strip::Strip;
use tokenizers::models::bpe::{BPE, Merges, Vocab};
use tokenizers::normalizers::{NormalizerWrapper, Prepend, Replace, Sequence as NormSequence};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence as PreSequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{AddedToken, SplitDelimiterBehavior};

use super::admit::{Len, Tally, check_added};
use super::pre::PreTokenizerRecipe;
use super::spec::{TokenType, TokenizerSpec};
use crate::{ModelError, Result};

/// SentencePiece's visible space.
pub(crate) const SPM_SPACE: char = '\u{2581}';

/// Most merges a vocabulary may list: Llama 3 has 280k, Gemma 3 ~515k; beyond a few million a
/// file is hostile or broken, and each merge costs two heap strings.
const MAX_MERGES: usize = 4_000_000;

fn tk_err(context: &str, e: impl std::fmt::Display) -> ModelError {
    ModelError::Tokenizer {
        reason: format!("{context}: {e}"),
    }
}

/// Token string → id. Where a string appears twice the last id wins, as in llama.cpp's
/// `token_to_id`.
fn vocab_of(spec: &TokenizerSpec) -> Result<Vocab> {
    let n = u32::try_from(spec.tokens.len()).map_err(|_| ModelError::BadMetadata {
        key: "tokenizer.ggml.tokens".to_owned(),
        reason: format!("{} tokens do not fit a u32 id", spec.tokens.len()),
    })?;
    Ok(spec.tokens.iter().cloned().zip(0..n).collect())
}

/// The tokens matched before the model sees the text.
fn added_tokens(spec: &TokenizerSpec) -> (Vec<AddedToken>, Vec<AddedToken>) {
    let mut special = Vec::new();
    let mut plain = Vec::new();
    for (id, text) in spec.tokens.iter().enumerate() {
        if text.is_empty() {
            continue;
        }
        match spec.token_type(id) {
            TokenType::Control | TokenType::Unknown => {
                special.push(AddedToken::from(text.clone(), true).normalized(false));
            }
            TokenType::UserDefined => {
                plain.push(AddedToken::from(text.clone(), false).normalized(false));
            }
            _ => {}
        }
    }
    (special, plain)
}

/// Adds the spec's control, unknown and user-defined tokens, once they are within
/// `admit.rs`'s limits: their matcher takes time out of proportion to their number.
fn finish(mut tok: tokenizers::Tokenizer, spec: &TokenizerSpec) -> Result<tokenizers::Tokenizer> {
    let (special, plain) = added_tokens(spec);
    let mut added = Tally::default();
    for t in special.iter().chain(&plain) {
        added.add(Len::of(&t.content));
    }
    check_added(&added, "GGUF control and user-defined tokens")?;
    tok.add_special_tokens(&special);
    tok.add_tokens(&plain);
    Ok(tok)
}

/// Byte-level BPE (`tokenizer.ggml.model = gpt2`).
pub(crate) fn build_gpt2(spec: &TokenizerSpec) -> Result<tokenizers::Tokenizer> {
    let recipe = PreTokenizerRecipe::for_pre(&spec.pre)?;
    if spec.merges.len() > MAX_MERGES {
        return Err(ModelError::FileLimit {
            what: "tokenizer.ggml.merges count".to_owned(),
            value: spec.merges.len() as u64,
            limit: MAX_MERGES as u64,
        });
    }
    let merges: Merges = spec
        .merges
        .iter()
        .map(|m| {
            m.split_once(' ')
                .map(|(a, b)| (a.to_owned(), b.to_owned()))
                .ok_or_else(|| ModelError::BadMetadata {
                    key: "tokenizer.ggml.merges".to_owned(),
                    reason: format!("merge {m:?} is not two pieces separated by a space"),
                })
        })
        .collect::<Result<_>>()?;
    let bpe = BPE::builder()
        .vocab_and_merges(vocab_of(spec)?, merges)
        .ignore_merges(recipe.ignore_merges)
        .build()
        .map_err(|e| tk_err("byte-level BPE", e))?;

    let mut steps: Vec<PreTokenizerWrapper> = Vec::with_capacity(recipe.regexes.len() + 1);
    for re in &recipe.regexes {
        let split = Split::new(
            SplitPattern::Regex((*re).to_owned()),
            SplitDelimiterBehavior::Isolated,
            false,
        )
        .map_err(|e| tk_err("pre-tokenizer regex", e))?;
        steps.push(split.into());
    }
    // Only the byte mapping here: the splitting was done by the regexes above.
    steps.push(ByteLevel::new(false, false, false).into());

    let mut tok = tokenizers::Tokenizer::new(bpe);
    tok.with_pre_tokenizer(Some(PreSequence::new(steps)));
    tok.with_decoder(Some(ByteLevelDecoder::default()));
    finish(tok, spec)
}

/// Longest SentencePiece piece, in bytes, whose merges are recovered from scores: each of
/// a piece's cuts hashes both halves, so the work grows with the square of its length (one
/// 100,000-character token took 1 s). SentencePiece trains with pieces of at most 16
/// characters (Gemma's longest, a run of 31 `▁`, is 93 bytes); longer normal ones are
/// refused.
pub const MAX_SPM_PIECE_BYTES: usize = 256;

/// SentencePiece merges recovered from scores, the way Hugging Face's converter does it: every
/// way of splitting a vocabulary piece into two vocabulary pieces is a merge, ranked by the
/// piece's score (higher first), ties in vocabulary order.
fn merges_from_scores(spec: &TokenizerSpec, vocab: &Vocab) -> Result<Merges> {
    let scores = spec
        .scores
        .as_deref()
        .ok_or_else(|| ModelError::MissingMetadata {
            key: "tokenizer.ggml.scores".to_owned(),
        })?;
    if scores.len() != spec.tokens.len() {
        return Err(ModelError::BadMetadata {
            key: "tokenizer.ggml.scores".to_owned(),
            reason: format!("{} scores for {} tokens", scores.len(), spec.tokens.len()),
        });
    }
    let mut ranked: Vec<(f32, usize, u32, u32)> = Vec::new();
    for (id, piece) in spec.tokens.iter().enumerate() {
        if matches!(spec.token_type(id), TokenType::Byte) {
            continue;
        }
        if piece.len() > MAX_SPM_PIECE_BYTES {
            // A long control or user-defined token is matched in the text before the model
            // sees it, so no merge needs to make it; a long normal piece is refused.
            if matches!(
                spec.token_type(id),
                TokenType::Control | TokenType::UserDefined | TokenType::Unknown
            ) {
                continue;
            }
            return Err(ModelError::FileLimit {
                what: format!("SentencePiece token {id}'s length (bytes)"),
                value: piece.len() as u64,
                limit: MAX_SPM_PIECE_BYTES as u64,
            });
        }
        for (cut, _) in piece.char_indices().skip(1) {
            let (l, r) = piece.split_at(cut);
            if let (Some(&li), Some(&ri)) = (vocab.get(l), vocab.get(r)) {
                ranked.push((scores[id], id, li, ri));
            }
        }
        if ranked.len() > MAX_MERGES {
            return Err(ModelError::FileLimit {
                what: "SentencePiece merges derived from scores".to_owned(),
                value: ranked.len() as u64,
                limit: MAX_MERGES as u64,
            });
        }
    }
    // Stable order: score descending, then the merged piece's id, then the parts' ids.
    ranked.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then(a.1.cmp(&b.1))
            .then(a.2.cmp(&b.2))
            .then(a.3.cmp(&b.3))
    });
    Ok(ranked
        .into_iter()
        .map(|(_, _, l, r)| {
            (
                spec.tokens[l as usize].clone(),
                spec.tokens[r as usize].clone(),
            )
        })
        .collect())
}

/// SentencePiece BPE (`tokenizer.ggml.model = llama`).
pub(crate) fn build_spm(
    spec: &TokenizerSpec,
    add_space_prefix: bool,
) -> Result<tokenizers::Tokenizer> {
    let vocab = vocab_of(spec)?;
    let merges = merges_from_scores(spec, &vocab)?;
    let mut builder = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .byte_fallback(true)
        .fuse_unk(true);
    if let Some(unk) = spec.unk.and_then(|id| spec.tokens.get(id as usize)) {
        builder = builder.unk_token(unk.clone());
    }
    let bpe = builder
        .build()
        .map_err(|e| tk_err("SentencePiece BPE", e))?;

    let space = SPM_SPACE.to_string();
    let replace = Replace::new(" ", space.as_str()).map_err(|e| tk_err("normalizer", e))?;
    let normalizer: NormalizerWrapper = if add_space_prefix {
        NormSequence::new(vec![Prepend::new(space.clone()).into(), replace.into()]).into()
    } else {
        replace.into()
    };
    let mut decoders: Vec<DecoderWrapper> = vec![
        DecoderWrapper::Replace(
            Replace::new(space.as_str(), " ").map_err(|e| tk_err("decoder", e))?,
        ),
        ByteFallback::new().into(),
        Fuse::new().into(),
    ];
    if add_space_prefix {
        decoders.push(Strip::new(' ', 1, 0).into());
    }

    let mut tok = tokenizers::Tokenizer::new(bpe);
    tok.with_normalizer(Some(normalizer));
    tok.with_decoder(Some(DecoderSequence::new(decoders)));
    finish(tok, spec)
}
