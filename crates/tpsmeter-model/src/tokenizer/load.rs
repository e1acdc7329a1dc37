//! A tokenizer from the bytes of a file the user names: a GGUF (its embedded vocabulary) or
//! a Hugging Face `tokenizer.json`, told apart by the GGUF magic.

use crate::error::{ModelError, Result};
use crate::gguf::GgufHeader;
use crate::gguf::header::GGUF_MAGIC;

use super::{SpecialTokens, Tokenizer, TokenizerSpec};

/// Most text one [`Tokenizer::count`] reads. The longest texts a run counts are a
/// synthesised prompt's shared prefix (2,000,000 common words at most, ~12 MB) and an answer
/// (4 MiB at most); with vetted patterns (`tokenizer/vet.rs`) counting costs about a
/// microsecond per byte, so this bounds one count to seconds. A size, not a time: counts
/// stay the same on a slow machine and a fast one, and this crate has no clock of its own.
pub const MAX_COUNT_BYTES: usize = 16 << 20;

/// Longest text encoded at once by [`Tokenizer::count`]: `tokenizers` keeps ~400 bytes of
/// offsets, alignments and token strings per byte of text while it encodes (a 4 MiB answer
/// took 1.78 GB), so a longer text is counted in pieces of this size (~30 MB each).
pub const COUNT_PIECE_BYTES: usize = 64 << 10;

/// A count's time budget, fixed part: see [`count_budget_ms`].
pub const COUNT_BUDGET_BASE_MS: f64 = 2000.0;

/// A count's time budget per MiB of text: see [`count_budget_ms`].
pub const COUNT_BUDGET_MS_PER_MIB: f64 = 4000.0;

/// How long counting `bytes` of text may take before [`Tokenizer::count_within`] gives up:
/// 2 s plus 4 s per MiB. Real tokenizers count ~3 MB/s on one core of a 2-core laptop (a
/// 4 KiB answer in ~1 ms, a 12 MB prompt prefix in ~4 s), so this is over ten times what a
/// real text takes; a tokenizer that needs more is one the limits of `admit.rs` did not
/// foresee, and its count becomes a clear error instead of a stalled run.
pub fn count_budget_ms(bytes: usize) -> f64 {
    COUNT_BUDGET_BASE_MS + bytes as f64 / f64::from(1u32 << 20) * COUNT_BUDGET_MS_PER_MIB
}

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
        Err(ModelError::Tokenizer {
            reason: "the file is neither a GGUF model nor a tokenizer.json".into(),
        })
    }

    /// Tokens in `text`, without special tokens: exact up to [`COUNT_PIECE_BYTES`], then
    /// counted a piece at a time (cut before a space, see `pieces` below); over
    /// [`MAX_COUNT_BYTES`] an error. No time budget: see [`Tokenizer::count_within`].
    pub fn count(&self, text: &str) -> Result<u32> {
        self.count_within(text, f64::INFINITY, &mut || 0.0)
    }

    /// [`Tokenizer::count`] that fails with [`ModelError::CountTooSlow`] once it has taken
    /// more than `budget_ms` ([`count_budget_ms`] is the one callers use) by `now_ms`, the
    /// caller's clock (this crate has none: `std`'s panics on the web). The clock is read
    /// between pieces, which `admit.rs`'s limits keep short; a count over its budget is an
    /// error even when its last piece finished, since the next one would be as slow.
    pub fn count_within(
        &self,
        text: &str,
        budget_ms: f64,
        now_ms: &mut dyn FnMut() -> f64,
    ) -> Result<u32> {
        if text.len() > MAX_COUNT_BYTES {
            return Err(ModelError::LimitExceeded {
                what: "text to count (bytes)".to_owned(),
                value: text.len() as u64,
                limit: MAX_COUNT_BYTES as u64,
            });
        }
        let start = now_ms();
        let (mut total, mut done) = (0usize, 0usize);
        for piece in pieces(text, COUNT_PIECE_BYTES) {
            total += self.encode(piece, false)?.len();
            done += piece.len();
            let elapsed = now_ms() - start;
            if elapsed > budget_ms {
                return Err(ModelError::CountTooSlow {
                    bytes: text.len() as u64,
                    done: done as u64,
                    elapsed_ms: elapsed as u64,
                    budget_ms: budget_ms as u64,
                });
            }
        }
        Ok(u32::try_from(total).unwrap_or(u32::MAX))
    }
}

/// `text` cut into pieces of at most `limit` bytes (one piece when it fits), each cut made
/// just before a space that follows a non-space, as late in the piece as there is one in
/// its second half, else at a character boundary. Byte-level BPE pre-tokenizers (GPT-2's,
/// Llama 3's, Qwen's) split there anyway, so their count is unchanged; a SentencePiece
/// tokenizer may count one token more per cut (its dummy prefix): one in ~16,000 tokens.
fn pieces(text: &str, limit: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        if rest.len() <= limit {
            return Some(std::mem::take(&mut rest));
        }
        let mut end = limit;
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        if end == 0 {
            // A limit shorter than the first character: that character alone.
            end = rest.chars().next().map_or(rest.len(), char::len_utf8);
        }
        let bytes = rest.as_bytes();
        let cut = (limit / 2..end)
            .rev()
            .find(|&i| i > 0 && bytes[i] == b' ' && !bytes[i - 1].is_ascii_whitespace())
            .unwrap_or(end);
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn pieces_cover_the_text_and_cut_before_a_space_after_a_word() {
        let text = "alpha beta  gamma delta épsilon zeta eta theta";
        for limit in [1, 2, 3, 7, 10, 16, 1000] {
            let parts: Vec<&str> = pieces(text, limit).collect();
            assert_eq!(parts.concat(), text, "limit {limit}");
            assert!(parts.iter().all(|p| !p.is_empty()), "limit {limit}");
            for p in &parts {
                // Over the limit only where a single character is longer.
                assert!(p.len() <= limit.max(2), "limit {limit}: {p:?}");
            }
        }
        let parts: Vec<&str> = pieces(text, 16).collect();
        assert_eq!(parts[0], "alpha beta");
        assert!(parts[1..].iter().all(|p| p.starts_with(' ')), "{parts:?}");
        assert_eq!(pieces("", 4).count(), 0);
        assert_eq!(pieces("short", 64).collect::<Vec<_>>(), ["short"]);
    }

    /// One token per word or run of punctuation.
    fn word_tokenizer() -> Tokenizer {
        let json = serde_json::json!({
            "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
            "normalizer": null, "pre_tokenizer": {"type": "Whitespace"},
            "post_processor": null, "decoder": null,
            "model": {"type": "BPE", "vocab": {"[UNK]": 0}, "merges": [],
                      "unk_token": "[UNK]", "fuse_unk": true},
        });
        Tokenizer::from_file_bytes(json.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn a_long_text_is_counted_in_pieces_to_the_same_total() {
        let tok = word_tokenizer();
        let text = "alpha beta, gamma. ".repeat(COUNT_PIECE_BYTES / 4);
        assert!(text.len() > 4 * COUNT_PIECE_BYTES);
        assert!(pieces(&text, COUNT_PIECE_BYTES).count() > 4);
        let whole = tok.encode(&text, false).unwrap().len();
        assert_eq!(whole, 5 * COUNT_PIECE_BYTES / 4);
        assert_eq!(tok.count(&text).unwrap() as usize, whole);
    }

    #[test]
    fn a_count_over_its_budget_is_an_error_and_one_within_it_is_not() {
        let tok = word_tokenizer();
        let text = "alpha beta, gamma. ".repeat(COUNT_PIECE_BYTES / 4);
        let pieces = pieces(&text, COUNT_PIECE_BYTES).count() as f64;
        // A clock that advances 1 s a reading: a count reads it once, then once a piece.
        let mut t = 0.0;
        let mut tick = || {
            t += 1000.0;
            t
        };
        let within = tok.count_within(&text, pieces * 1000.0, &mut tick).unwrap();
        assert_eq!(within, tok.count(&text).unwrap());
        let mut t = 0.0;
        let mut tick = || {
            t += 1000.0;
            t
        };
        match tok.count_within(&text, 2500.0, &mut tick) {
            Err(ModelError::CountTooSlow {
                bytes,
                done,
                elapsed_ms,
                budget_ms,
            }) => {
                assert_eq!(bytes, text.len() as u64);
                assert!(done > 0 && done < bytes, "{done} of {bytes}");
                assert_eq!((elapsed_ms, budget_ms), (3000, 2500));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(count_budget_ms(0), COUNT_BUDGET_BASE_MS);
        assert_eq!(
            count_budget_ms(1 << 20),
            COUNT_BUDGET_BASE_MS + COUNT_BUDGET_MS_PER_MIB
        );
    }

    #[test]
    fn a_text_over_the_count_limit_is_refused() {
        let tok = word_tokenizer();
        let text = "a".repeat(MAX_COUNT_BYTES + 1);
        match tok.count(&text) {
            Err(ModelError::LimitExceeded { value, limit, .. }) => {
                assert_eq!((value, limit), (text.len() as u64, MAX_COUNT_BYTES as u64));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(tok.count(&text[1..]).unwrap(), 256);
    }
}
