//! `Quoted`: a string shown in an error message in double quotes, control characters escaped.

use std::fmt;

/// Displays its text between double quotes with `"`, `\` and control characters escaped,
/// so a message can name untrusted input without it breaking the line or the quotes.
///
/// Written out rather than `{:?}` because `str`'s `Debug` escapes through Unicode tables
/// (printable and grapheme-extend ranges, ~10 KB of wasm) that nothing else in the
/// real-user meter's lazy parser needs; non-ASCII text is shown as it is.
#[derive(Debug, Clone, Copy)]
pub struct Quoted<'a>(pub &'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use fmt::Write;
        f.write_char('"')?;
        // Runs of plain characters are written whole; `str::get` rather than indexing (see
        // `cap_chars` for why), with boundaries from `char_indices`.
        let mut plain_from = 0;
        for (i, c) in self.0.char_indices() {
            if !(c == '"' || c == '\\' || c.is_control()) {
                continue;
            }
            f.write_str(self.0.get(plain_from..i).unwrap_or_default())?;
            plain_from = i + c.len_utf8();
            match c {
                '"' => f.write_str("\\\"")?,
                '\\' => f.write_str("\\\\")?,
                '\n' => f.write_str("\\n")?,
                '\r' => f.write_str("\\r")?,
                '\t' => f.write_str("\\t")?,
                '\0' => f.write_str("\\0")?,
                c => write!(f, "\\u{{{:x}}}", u32::from(c))?,
            }
        }
        f.write_str(self.0.get(plain_from..).unwrap_or_default())?;
        f.write_char('"')
    }
}

#[cfg(test)]
mod tests {
    use super::Quoted;

    #[test]
    fn quotes_and_escapes_like_debug_for_ascii() {
        for s in [
            "",
            "plain",
            "a\"b",
            "back\\slash",
            "line\nbreak\r\t",
            "\u{0}\u{1b}[31m",
        ] {
            assert_eq!(Quoted(s).to_string(), format!("{s:?}"), "{s:?}");
        }
    }

    #[test]
    fn keeps_non_ascii_text() {
        assert_eq!(Quoted("héllo — 日本").to_string(), "\"héllo — 日本\"");
        // C1 controls are escaped too.
        assert_eq!(Quoted("a\u{85}b").to_string(), "\"a\\u{85}b\"");
    }
}
