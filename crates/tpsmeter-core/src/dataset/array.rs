//! One JSON array of entries (ShareGPT's file), cut into its elements without parsing the
//! whole: each element is then parsed on its own ([`entry::parse`]), so a fault names the
//! entry and its line, memory holds one entry's JSON tree at a time (the file can be a
//! gigabyte), and an element past [`super::MAX_ENTRY_BYTES`] is refused before it is parsed.
//!
//! The cut only has to find where elements end: a comma or the closing bracket outside any
//! string and nesting. Whatever it lets through between two cuts is checked by serde_json.

use super::{At, Caps, Entry, entry};
use crate::error::Result;

/// Parses the array `text` (its first byte that is not whitespace is `[`), handing each
/// entry (`None`: skipped) to `add`.
pub(super) fn parse(text: &[u8], caps: Caps, add: &mut impl FnMut(Option<Entry>)) -> Result<()> {
    let mut cut = Cutter {
        text,
        i: 0,
        line: 1,
    };
    cut.skip_space();
    // `DatasetFormat::detect` chose this parser because the array opens here.
    cut.i += 1;
    let mut number = 0u64;
    cut.skip_space();
    if cut.peek() == Some(b']') {
        cut.i += 1;
        return cut.end();
    }
    loop {
        number += 1;
        let at = At {
            line: cut.line,
            entry: Some(number),
        };
        if number > caps.entries as u64 {
            return Err(at.err(
                None,
                format!("the array has more than {} entries, the cap", caps.entries),
            ));
        }
        let element = cut.element(at, caps.entry_bytes)?;
        add(entry::parse(element, at)?);
        match cut.peek() {
            Some(b',') => {
                cut.i += 1;
                cut.skip_space();
                if cut.peek() == Some(b']') {
                    return Err(cut.here(Some(number + 1)).err(
                        None,
                        "a comma before the closing `]` (JSON has no trailing commas)",
                    ));
                }
            }
            Some(b']') => {
                cut.i += 1;
                return cut.end();
            }
            _ => {
                return Err(cut
                    .here(Some(number))
                    .err(None, "the array is not closed: the file ends inside it"));
            }
        }
    }
}

struct Cutter<'a> {
    text: &'a [u8],
    i: usize,
    /// The line of byte `i`, from 1.
    line: u64,
}

impl<'a> Cutter<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.i).copied()
    }

    fn here(&self, entry: Option<u64>) -> At {
        At {
            line: self.line,
            entry,
        }
    }

    fn skip_space(&mut self) {
        while let Some(b) = self.peek().filter(u8::is_ascii_whitespace) {
            self.line += u64::from(b == b'\n');
            self.i += 1;
        }
    }

    /// The element starting at `i` (leading space already skipped), up to the comma or
    /// bracket that ends it, which is left at `i`.
    fn element(&mut self, at: At, cap: usize) -> Result<&'a [u8]> {
        let start = self.i;
        let (mut depth, mut in_string, mut escaped) = (0u32, false, false);
        while let Some(b) = self.peek() {
            if in_string {
                if escaped {
                    escaped = false;
                } else if b == b'\\' {
                    escaped = true;
                } else if b == b'"' {
                    in_string = false;
                }
            } else {
                match b {
                    b'"' => in_string = true,
                    b'[' | b'{' => depth += 1,
                    b']' | b'}' if depth == 0 => break,
                    b']' | b'}' => depth -= 1,
                    b',' if depth == 0 => break,
                    _ => {}
                }
            }
            self.line += u64::from(b == b'\n');
            self.i += 1;
            if self.i - start > cap {
                return Err(at.err(None, format!("the entry is over the cap of {cap} bytes")));
            }
        }
        Ok(&self.text[start..self.i])
    }

    /// After the closing bracket: nothing but whitespace.
    fn end(mut self) -> Result<()> {
        self.skip_space();
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self
                .here(None)
                .err(None, "text after the array's closing `]`")),
        }
    }
}
