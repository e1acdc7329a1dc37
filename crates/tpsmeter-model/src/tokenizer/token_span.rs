//! [`TokenSpan`]: how much text one token of an engine's vocabulary can stand for, so that
//! a text's length gives a lower bound on its token count before it is encoded.
//!
//! Encoding takes memory 100 to 400 times the text's; a server can refuse a prompt that
//! cannot fit its context from its length alone (`tpsmeter serve`).

use crate::tokenizer::{Tokenizer, VocabKind};

/// Bytes that never occur in UTF-8 text, so a vocabulary needs no token for them.
fn in_utf8(b: u8) -> bool {
    !matches!(b, 0xC0 | 0xC1 | 0xF5..=0xFF)
}

/// The most bytes of text one token stands for, and the bytes that encode to no token at
/// all, for a tokenizer built from a GGUF file (`tokenizer/build.rs`).
///
/// Why the bound holds for those pipelines: no step removes or shortens text
/// (SentencePiece's normaliser only turns a space into the 3-byte `▁` and prepends one), and
/// every token covers at most the bytes its byte-table entry decodes to (a byte-fallback
/// token one byte, an added token its text). The two ways text can escape the bound are
/// checked here: BPE drops a character it has no token for when the vocabulary has no
/// unknown token (SmolLM2's byte-level vocabulary lacks a few control characters), so
/// those bytes count for nothing; and SentencePiece without all 256 `<0xXX>` fallback
/// tokens fuses a run of unknown characters into one `<unk>` of any length, so such a
/// vocabulary has no bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenSpan {
    /// The longest a token's text can be, in bytes (at least 1).
    pub max_bytes: usize,
    /// Bytes that become no token (each stands for one character of its own).
    silent: [bool; 256],
}

impl TokenSpan {
    /// The span of a GGUF-built tokenizer's vocabulary; `None` when it has no bound.
    pub fn of(t: &Tokenizer) -> Option<Self> {
        let has = |text: &str| t.inner().token_to_id(text).is_some();
        let mut silent = [false; 256];
        match t.kind() {
            VocabKind::Gpt2 => {
                // Byte-level BPE sees each byte as one character of GPT-2's alphabet.
                for b in 0..=255u8 {
                    if in_utf8(b) && !has(&byte_level_char(b).to_string()) {
                        silent[usize::from(b)] = true;
                    }
                }
            }
            VocabKind::Llama => {
                if !(0..=255u8).all(|b| !in_utf8(b) || has(&format!("<0x{b:02X}>"))) {
                    return None;
                }
            }
        }
        let max_bytes = (0..u32::try_from(t.vocab_size()).ok()?)
            .filter_map(|id| t.piece_bytes(id, true).ok().flatten())
            .map(<[u8]>::len)
            .max()?
            .max(1);
        Some(Self { max_bytes, silent })
    }

    /// The fewest tokens `text` can encode to.
    pub fn least_tokens(&self, text: &str) -> usize {
        let counted = text
            .bytes()
            .filter(|&b| !self.silent[usize::from(b)])
            .count();
        counted.div_ceil(self.max_bytes)
    }
}

/// GPT-2's byte-to-character map: printable Latin-1 bytes stand for themselves, the others
/// for U+0100 onwards in byte order (`bytes_to_unicode` in GPT-2's `encoder.py`).
fn byte_level_char(b: u8) -> char {
    let printable = |b: u8| matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    if printable(b) {
        return char::from(b);
    }
    let n = (0..b).filter(|&x| !printable(x)).count() as u32;
    char::from_u32(0x100 + n).unwrap_or(char::REPLACEMENT_CHARACTER)
}

#[cfg(test)]
mod tests {
    use super::{byte_level_char, in_utf8};

    #[test]
    fn byte_level_chars_follow_gpt2() {
        assert_eq!(byte_level_char(b'a'), 'a');
        assert_eq!(byte_level_char(b' '), 'Ġ');
        assert_eq!(byte_level_char(b'\n'), 'Ċ');
        assert_eq!(byte_level_char(0), '\u{100}');
        assert_eq!(byte_level_char(0x7F), '\u{121}');
        assert_eq!(byte_level_char(0xAD), '\u{143}');
        // A bijection onto 256 characters.
        let mut all: Vec<char> = (0..=255u8).map(byte_level_char).collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 256);
    }

    #[test]
    fn only_lead_bytes_that_utf8_forbids_are_left_out() {
        assert!(in_utf8(b'a') && in_utf8(0x80) && in_utf8(0xC2) && in_utf8(0xF4));
        assert!(!in_utf8(0xC0) && !in_utf8(0xC1) && !in_utf8(0xF5) && !in_utf8(0xFF));
    }
}
