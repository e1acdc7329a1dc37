//! A prompt's token ids within bounded work, or its refusal as too long for the context.
//!
//! Encoding takes memory 100 to 400 times the text's (`tokenizers` keeps offsets,
//! alignments and a string per token; on SmolLM2, 16 megabyte prompts of `word ` at once
//! took the server's peak up 1.6 GB, and issue 35 measured ~380 MB for one), and a body may
//! hold 1 MiB of prompt on each of 256 connections. So, in order:
//! 1. **By length, before any encoding**: a token stands for at most `max_bytes` of text
//!    (the vocabulary's longest entry, `tpsmeter_model::tokenizer::TokenSpan`), so a prompt of
//!    `B` bytes is at least `ceil(B / max_bytes)` tokens (bytes the vocabulary drops left
//!    out); when that already fills the context the prompt is refused at once.
//! 2. **In pieces, stopping past the context**: a prompt over [`PIECE_BYTES`] is first
//!    counted piece by piece (cut after whitespace where there is some), and refused as
//!    soon as the pieces hold [`PIECE_SLACK`] times the context: each encode then holds one
//!    piece's worth of memory, and a prompt far past the context costs one or two pieces.
//!    Counting in pieces is not exact (a cut can split what the whole text would merge), so
//!    it only refuses far past the limit, never near it.
//! 3. **Whole**: what is left may fit; its exact ids are checked against the context.
//!
//! The server runs at most one encode per core at once (`Shared::encodes`), so the memory
//! all encodes hold together is bounded too.

use hyper::StatusCode;
use tpsmeter_model::tokenizer::TokenSpan;

use super::api_error::ApiError;

/// What a vocabulary says of a text's token count before encoding it.
pub trait LengthBound {
    /// The fewest tokens `text` can encode to.
    fn least_tokens(&self, text: &str) -> usize;
    /// The most bytes one token stands for (to explain a refusal).
    fn max_bytes(&self) -> usize;
}

impl LengthBound for TokenSpan {
    fn least_tokens(&self, text: &str) -> usize {
        TokenSpan::least_tokens(self, text)
    }
    fn max_bytes(&self) -> usize {
        self.max_bytes
    }
}

/// Most bytes of text encoded at once while counting a long prompt in pieces: a piece costs
/// 6 to 25 MB of encoding memory (see above), one per core at most.
pub const PIECE_BYTES: usize = 64 << 10;

/// How far past the context the piecewise count must go before the prompt is refused
/// without its exact count: a cut (after whitespace, where the pre-tokenizers split anyway)
/// changes the tokens next to it, a few in practice, and this leaves a whole context's
/// worth of room for that.
pub const PIECE_SLACK: usize = 2;

/// How far back from a piece's end a cut looks for whitespace (where the pre-tokenizers
/// split anyway) before it cuts inside a word.
const CUT_SEARCH_BYTES: usize = 1 << 10;

/// The prompt's ids, or its refusal: empty, or not leaving a position for one generated
/// token in `context` (OpenAI's `context_length_exceeded`). `encode(text, add_special)` is
/// the tokenizer; the whole prompt is encoded with `add_special`, pieces without.
pub fn encode_within(
    text: &str,
    add_special: bool,
    context: usize,
    bound: Option<&dyn LengthBound>,
    mut encode: impl FnMut(&str, bool) -> Result<Vec<u32>, ApiError>,
) -> Result<Vec<u32>, ApiError> {
    check_length(text, context, bound)?;
    if text.len() > PIECE_BYTES {
        let mut counted = 0usize;
        let mut rest = text;
        while !rest.is_empty() {
            let piece = &rest[..cut(rest, PIECE_BYTES)];
            rest = &rest[piece.len()..];
            counted += encode(piece, false)?.len();
            if counted >= PIECE_SLACK.saturating_mul(context) {
                let read = text.len() - rest.len();
                return Err(too_long(
                    format!(
                        "its first {read} of {} bytes are already about {counted} tokens",
                        text.len()
                    ),
                    context,
                ));
            }
        }
    }
    let ids = encode(text, add_special)?;
    if ids.is_empty() {
        return Err(ApiError::invalid("the prompt encodes to no tokens"));
    }
    if ids.len() >= context {
        return Err(too_long(format!("it is {} tokens", ids.len()), context));
    }
    Ok(ids)
}

/// Refuses a text whose length alone proves it cannot fit (see the module's step 1).
pub fn check_length(
    text: &str,
    context: usize,
    bound: Option<&dyn LengthBound>,
) -> Result<(), ApiError> {
    let Some(bound) = bound else {
        return Ok(());
    };
    let least = bound.least_tokens(text);
    let per_token = bound.max_bytes();
    if least >= context {
        return Err(too_long(
            format!(
                "it is {} bytes, and no token of this model stands for more than {per_token}, so \
             it is at least {least} tokens",
                text.len()
            ),
            context,
        ));
    }
    Ok(())
}

fn too_long(why: String, context: usize) -> ApiError {
    ApiError::status(
        StatusCode::BAD_REQUEST,
        "context_length_exceeded",
        format!(
            "the prompt does not fit: {why}; this server runs at most {context} positions per \
             request, so at most {} prompt tokens fit (shorten the prompt, or restart the \
             server with a larger --context)",
            context.saturating_sub(1)
        ),
    )
}

/// Where to end a piece of `text` of at most `max` bytes (all of it when shorter): after the
/// last whitespace in the piece's final [`CUT_SEARCH_BYTES`], else at a character boundary.
/// Never 0 for a non-empty text.
fn cut(text: &str, max: usize) -> usize {
    if text.len() <= max {
        return text.len();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let from = end.saturating_sub(CUT_SEARCH_BYTES);
    match text.as_bytes()[from..end]
        .iter()
        .rposition(u8::is_ascii_whitespace)
    {
        Some(i) => from + i + 1,
        _ if end > 0 => end,
        // `max` is shorter than the first character: take that character whole.
        _ => text.chars().next().map_or(text.len(), char::len_utf8),
    }
}

#[cfg(test)]
#[path = "encode_tests.rs"]
mod tests;
