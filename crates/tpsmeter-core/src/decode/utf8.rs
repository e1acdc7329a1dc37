//! Streaming UTF-8: how the decoders turn bytes that arrive in arbitrary chunks into text.
//!
//! A network chunk may end in the middle of a multi-byte character, so decoding each chunk
//! on its own (a common bug in peers) either fails or inserts U+FFFD. Our decoders never
//! decode a chunk: they first cut the byte stream into lines on ASCII terminators (`\n`,
//! `\r`), which can never occur inside a multi-byte UTF-8 sequence (every byte of such a
//! sequence is ≥ 0x80). A complete line therefore always holds complete characters, however
//! the stream was split, and is validated once, as a whole. An unterminated line is only
//! validated when the body ends, so a character split across chunks is never judged early.
//!
//! Invalid UTF-8 is an error carrying the stream offset of the first bad byte, never a
//! panic and never a silent replacement: a measurement must not count mangled text.

use crate::error::{CoreError, Result};

/// Validates one complete line whose first byte sits at stream offset `line_start`.
pub(crate) fn line_str(bytes: &[u8], line_start: u64) -> Result<&str> {
    std::str::from_utf8(bytes).map_err(|e| CoreError::InvalidUtf8 {
        offset: line_start + e.valid_up_to() as u64,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn error_offset_points_at_the_first_bad_byte_of_the_stream() {
        let err = line_str(b"ab\xffcd", 100).unwrap_err();
        assert_eq!(err, CoreError::InvalidUtf8 { offset: 102 });
    }

    #[test]
    fn a_truncated_multibyte_character_is_invalid() {
        // "é" is C3 A9; a line holding only C3 was cut inside the character.
        let err = line_str(b"x\xc3", 0).unwrap_err();
        assert_eq!(err, CoreError::InvalidUtf8 { offset: 1 });
    }

    #[test]
    fn valid_multibyte_text_passes_through_unchanged() {
        assert_eq!(line_str("héllo €".as_bytes(), 0).unwrap(), "héllo €");
    }
}
