//! Cuts a byte stream fed in arbitrary chunks into complete, validated lines.
//!
//! Shared by the SSE and NDJSON decoders. It owns the three things that make incremental
//! decoding subtle: a line split across chunks (kept in a buffer, capped), a CR ending one
//! chunk whose LF starts the next (remembered, so CRLF is one terminator and not a CR line
//! end followed by an empty LF line), and a byte-order mark split across the first chunks.

use memchr::{memchr, memchr2};

use crate::decode::utf8::line_str;
use crate::error::{CoreError, Result};

/// UTF-8 byte-order mark; WHATWG SSE strips one at the start of the stream.
const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// Incremental line splitter. Lines are handed to a callback as `&str`, terminator removed.
#[derive(Debug)]
pub(crate) struct LineSplitter {
    max_line_bytes: usize,
    /// SSE: a lone CR ends a line. NDJSON: only LF does (a CR before it is stripped).
    cr_ends_line: bool,
    /// Bytes of the current, not yet terminated line.
    partial: Vec<u8>,
    /// Stream offset of the first byte of the current line (for UTF-8 error offsets).
    line_start: u64,
    /// Stream offset of the next byte to be processed.
    pos: u64,
    /// The previous chunk ended in CR: an LF at the start of the next one belongs to it.
    pending_cr: bool,
    /// How many bytes of a leading BOM have been swallowed while undecided.
    bom_matched: usize,
    /// Whether the start of the stream has been checked for a BOM.
    bom_done: bool,
}

impl LineSplitter {
    pub(crate) fn new(max_line_bytes: usize, cr_ends_line: bool) -> Self {
        LineSplitter {
            max_line_bytes,
            cr_ends_line,
            partial: Vec::new(),
            line_start: 0,
            pos: 0,
            pending_cr: false,
            bom_matched: 0,
            bom_done: false,
        }
    }

    /// Feeds the next chunk; calls `on_line` for every line it completes.
    pub(crate) fn feed<F>(&mut self, chunk: &[u8], on_line: &mut F) -> Result<()>
    where
        F: FnMut(&str) -> Result<()>,
    {
        let mut chunk = chunk;
        if !self.bom_done {
            // The BOM may itself arrive split; swallow matching bytes until decided.
            while let Some(&b) = chunk.first() {
                if b == BOM[self.bom_matched] {
                    self.bom_matched += 1;
                    chunk = &chunk[1..];
                    if self.bom_matched == BOM.len() {
                        self.bom_done = true;
                        self.pos = BOM.len() as u64;
                        self.line_start = self.pos;
                        break;
                    }
                } else {
                    self.replay_partial_bom(on_line)?;
                    break;
                }
            }
        }
        self.process(chunk, on_line)
    }

    /// The body ended: hands over a trailing line that had no terminator.
    pub(crate) fn finish<F>(&mut self, on_line: &mut F) -> Result<()>
    where
        F: FnMut(&str) -> Result<()>,
    {
        if !self.bom_done {
            self.replay_partial_bom(on_line)?;
        }
        if !self.partial.is_empty() {
            let partial = std::mem::take(&mut self.partial);
            let result = self.emit(&partial, on_line);
            self.partial = partial;
            self.partial.clear();
            result?;
        }
        Ok(())
    }

    /// The stream did not start with a (whole) BOM: the bytes swallowed so far are content.
    fn replay_partial_bom<F>(&mut self, on_line: &mut F) -> Result<()>
    where
        F: FnMut(&str) -> Result<()>,
    {
        self.bom_done = true;
        let k = std::mem::take(&mut self.bom_matched);
        self.process(&BOM[..k], on_line)
    }

    fn process<F>(&mut self, bytes: &[u8], on_line: &mut F) -> Result<()>
    where
        F: FnMut(&str) -> Result<()>,
    {
        let mut rest = bytes;
        if self.pending_cr && !rest.is_empty() {
            self.pending_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
                self.pos += 1;
                self.line_start = self.pos;
            }
        }
        loop {
            let found = if self.cr_ends_line {
                memchr2(b'\n', b'\r', rest)
            } else {
                memchr(b'\n', rest)
            };
            let Some(i) = found else {
                if self.partial.len() + rest.len() > self.max_line_bytes {
                    return Err(CoreError::LineTooLong {
                        limit: self.max_line_bytes,
                    });
                }
                self.partial.extend_from_slice(rest);
                self.pos += rest.len() as u64;
                return Ok(());
            };
            if self.partial.len() + i > self.max_line_bytes {
                return Err(CoreError::LineTooLong {
                    limit: self.max_line_bytes,
                });
            }
            let terminator = rest[i];
            if self.partial.is_empty() {
                // Fast path: the whole line is inside this chunk; no copy.
                self.emit(&rest[..i], on_line)?;
            } else {
                let mut partial = std::mem::take(&mut self.partial);
                partial.extend_from_slice(&rest[..i]);
                let result = self.emit(&partial, on_line);
                partial.clear();
                self.partial = partial;
                result?;
            }
            self.pos += i as u64 + 1;
            rest = &rest[i + 1..];
            if terminator == b'\r' {
                match rest.first() {
                    None => self.pending_cr = true,
                    Some(b'\n') => {
                        rest = &rest[1..];
                        self.pos += 1;
                    }
                    Some(_) => {}
                }
            }
            self.line_start = self.pos;
        }
    }

    fn emit<F>(&self, line: &[u8], on_line: &mut F) -> Result<()>
    where
        F: FnMut(&str) -> Result<()>,
    {
        let line = match line {
            // NDJSON tolerates CRLF: the CR is part of the terminator, not of the line.
            [head @ .., b'\r'] if !self.cr_ends_line => head,
            _ => line,
        };
        on_line(line_str(line, self.line_start)?)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn split(input: &[&[u8]], cr: bool) -> Result<Vec<String>> {
        let mut s = LineSplitter::new(64, cr);
        let mut out = Vec::new();
        let mut push = |l: &str| {
            out.push(l.to_owned());
            Ok(())
        };
        for c in input {
            s.feed(c, &mut push)?;
        }
        s.finish(&mut push)?;
        Ok(out)
    }

    #[test]
    fn crlf_split_between_chunks_is_one_terminator() {
        // Regression: a CR ending one chunk and its LF starting the next must not produce
        // an extra empty line (which SSE would read as a dispatch).
        let lines = split(&[b"a\r", b"\nb\r\n"], true).unwrap();
        assert_eq!(lines, ["a", "b"]);
    }

    #[test]
    fn lone_cr_lf_and_crlf_all_end_lines_in_sse_mode() {
        let lines = split(&[b"a\rb\nc\r\n\rd"], true).unwrap();
        assert_eq!(lines, ["a", "b", "c", "", "d"]);
    }

    #[test]
    fn ndjson_mode_strips_cr_before_lf_only() {
        let lines = split(&[b"{}\r\n{\"a\":1}\n"], false).unwrap();
        assert_eq!(lines, ["{}", "{\"a\":1}"]);
    }

    #[test]
    fn bom_split_across_chunks_is_stripped() {
        let lines = split(&[b"\xEF", b"\xBB", b"\xBFhi\n"], true).unwrap();
        assert_eq!(lines, ["hi"]);
    }

    #[test]
    fn partial_bom_is_content_and_fails_utf8_at_offset_zero() {
        let err = split(&[b"\xEF\xBB", b"x\n"], true).unwrap_err();
        assert_eq!(err, CoreError::InvalidUtf8 { offset: 0 });
    }

    #[test]
    fn utf8_offset_counts_the_bom_and_earlier_lines() {
        let err = split(&[b"\xEF\xBB\xBFok\nx\xff\n"], true).unwrap_err();
        assert_eq!(err, CoreError::InvalidUtf8 { offset: 7 });
    }

    #[test]
    fn line_over_the_cap_fails_even_without_terminator() {
        let long = [b'a'; 65];
        let err = split(&[&long[..30], &long[30..]], true).unwrap_err();
        assert_eq!(err, CoreError::LineTooLong { limit: 64 });
        assert!(split(&[&long[..64], b"\n"], true).is_ok());
    }

    #[test]
    fn multibyte_character_split_across_chunks_is_reassembled() {
        let text = "x€y\n".as_bytes();
        let lines = split(&[&text[..2], &text[2..3], &text[3..]], true).unwrap();
        assert_eq!(lines, ["x€y"]);
    }
}
