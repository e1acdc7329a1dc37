//! Incremental newline-delimited JSON decoder (Ollama's native streaming format).
//!
//! Lines end in LF; a CR before the LF is tolerated and stripped; blank (whitespace-only)
//! lines are skipped. The decoder only frames lines: the protocol adapter parses the JSON.
//! A trailing line without a final LF is handed over when the body ends.

use crate::decode::limits::Limits;
use crate::decode::lines::LineSplitter;
use crate::error::Result;

/// Incremental NDJSON line framer.
#[derive(Debug)]
pub struct NdjsonDecoder {
    lines: LineSplitter,
}

impl NdjsonDecoder {
    pub fn new(limits: Limits) -> Self {
        NdjsonDecoder {
            lines: LineSplitter::new(limits.max_line_bytes, false),
        }
    }

    /// Feeds the next chunk; calls `on_line` for every non-blank line it completes.
    pub fn feed<F>(&mut self, chunk: &[u8], on_line: &mut F) -> Result<()>
    where
        F: FnMut(&str) -> Result<()>,
    {
        self.lines.feed(chunk, &mut skip_blank(on_line))
    }

    /// The body ended: hands over a trailing line that had no final LF.
    pub fn finish<F>(&mut self, on_line: &mut F) -> Result<()>
    where
        F: FnMut(&str) -> Result<()>,
    {
        self.lines.finish(&mut skip_blank(on_line))
    }
}

fn skip_blank<F>(on_line: &mut F) -> impl FnMut(&str) -> Result<()> + '_
where
    F: FnMut(&str) -> Result<()>,
{
    move |line: &str| {
        if line.trim_ascii().is_empty() {
            Ok(())
        } else {
            on_line(line)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn decode(chunks: &[&[u8]]) -> Vec<String> {
        let mut d = NdjsonDecoder::new(Limits::default());
        let mut out = Vec::new();
        let mut push = |l: &str| {
            out.push(l.to_owned());
            Ok(())
        };
        for c in chunks {
            d.feed(c, &mut push).unwrap();
        }
        d.finish(&mut push).unwrap();
        out
    }

    #[test]
    fn blank_lines_are_skipped_and_crlf_tolerated() {
        assert_eq!(
            decode(&[b"{\"a\":1}\r\n\r\n  \n{\"b\":2}\n"]),
            ["{\"a\":1}", "{\"b\":2}"]
        );
    }

    #[test]
    fn trailing_line_without_lf_is_flushed() {
        assert_eq!(decode(&[b"{\"a\":", b"1}"]), ["{\"a\":1}"]);
    }

    #[test]
    fn crlf_split_across_chunks_is_one_terminator() {
        assert_eq!(decode(&[b"{}\r", b"\n{}\n"]), ["{}", "{}"]);
    }
}
