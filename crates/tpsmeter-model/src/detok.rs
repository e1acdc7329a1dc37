//! Streaming detokenization: text out token by token, never half a UTF-8 character.
//!
//! A byte-level or byte-fallback token may carry only the first bytes of a character (an
//! emoji is often three tokens). The detokenizer appends each token's raw bytes to a small
//! buffer and releases the longest prefix that is complete UTF-8; bytes that can never become
//! valid turn into U+FFFD, by the same rule as `String::from_utf8_lossy`, so the concatenated
//! stream always equals [`Tokenizer::decode`] of the same ids.
//!
//! Unlike re-decoding a window of tokens each step (candle's `TokenOutputStream`), each token
//! costs time proportional to its own length.

use crate::Result;
use crate::tokenizer::Tokenizer;

/// Turns a stream of token ids into a stream of complete text pieces.
#[derive(Debug, Clone)]
pub struct Detokenizer<'t> {
    tokenizer: &'t Tokenizer,
    /// Bytes of a character still incomplete (at most 3).
    pending: Vec<u8>,
    render_markup: bool,
    /// Drop one leading space from the first text released (SentencePiece's dummy prefix),
    /// used when the ids start a sequence rather than continue a prompt.
    strip_leading_space: bool,
}

impl<'t> Detokenizer<'t> {
    /// A detokenizer for ids that continue a prompt (generated text): nothing is stripped and
    /// control tokens are not shown.
    pub fn new(tokenizer: &'t Tokenizer) -> Self {
        Self {
            tokenizer,
            pending: Vec::new(),
            render_markup: false,
            strip_leading_space: false,
        }
    }

    /// A detokenizer that renders ids as [`Tokenizer::decode`] renders a whole sequence.
    pub fn for_sequence(tokenizer: &'t Tokenizer, render_markup: bool) -> Self {
        Self {
            tokenizer,
            pending: Vec::new(),
            render_markup,
            strip_leading_space: tokenizer.strips_leading_space(),
        }
    }

    /// Shows control tokens (`<|im_start|>`) as their text instead of nothing.
    pub fn render_markup(mut self, yes: bool) -> Self {
        self.render_markup = yes;
        self
    }

    /// Feeds one id; returns the text that became complete (often empty mid-character).
    pub fn push(&mut self, id: u32) -> Result<String> {
        if let Some(bytes) = self.tokenizer.piece_bytes(id, self.render_markup)? {
            self.pending.extend_from_slice(bytes);
        }
        Ok(self.release(false))
    }

    /// Ends the stream: bytes of an unfinished character become U+FFFD.
    pub fn finish(&mut self) -> String {
        self.release(true)
    }

    /// Whether bytes are held back waiting for the rest of a character.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    fn release(&mut self, at_end: bool) -> String {
        let mut out = String::new();
        let mut rest: &[u8] = &self.pending;
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    out.push_str(s);
                    rest = &[];
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    // `valid_up_to` guarantees this prefix is UTF-8.
                    out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match e.error_len() {
                        // Bytes that no continuation can repair.
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            rest = &after[bad..];
                        }
                        // A character cut short at the end: wait for its other bytes.
                        None if !at_end => {
                            rest = after;
                            break;
                        }
                        None => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            rest = &[];
                            break;
                        }
                    }
                }
            }
        }
        let keep = rest.len();
        let start = self.pending.len() - keep;
        self.pending.drain(..start);
        if self.strip_leading_space && !out.is_empty() {
            self.strip_leading_space = false;
            if let Some(stripped) = out.strip_prefix(' ') {
                return stripped.to_owned();
            }
        }
        out
    }
}
