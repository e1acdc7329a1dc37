//! [`Redactor`]: takes the API key, in every form a server is likely to echo it, out of text
//! that reaches a record.
//!
//! A server decides what its error bodies, headers and stream error events say, and some
//! quote the credential they were sent: `Invalid API key provided: Bearer sk-…`, a masked
//! `sk-proj-abcd****wxyz`, the key URL-encoded in a quoted request line, or JSON-escaped in a
//! `message` field. Our own messages never hold the key (see `failure`), but these excerpts
//! are the server's words, so every record passes through here before it exists.
//!
//! The rule: any run of [`MIN_SECRET_CHARS`] or more characters that also occurs in the key,
//! or in one of its forms (URL-encoded, JSON-escaped, base64 as basic auth sends
//! `user:key`, each of those URL-encoded and JSON-escaped too; see `secret_forms`), is
//! replaced by [`REDACTED`]. That covers the key itself, `Bearer <key>`, `Basic <base64>`,
//! prefixes and suffixes of eight or more characters, and the encodings, with one linear
//! pass: every window of [`MIN_SECRET_CHARS`] bytes of the text is looked up in the set of
//! the key's own windows, and covered runs are replaced whole. A shorter run is left alone:
//! seven characters of a key do not let anyone use it, and a shorter match would start
//! eating ordinary words.

use std::borrow::Cow;
use std::collections::HashSet;

use super::Secret;
use super::secret_forms::forms;

/// Shortest run of the key that is redacted, and the shortest key that is looked for at all:
/// no provider issues shorter keys, and below this a "key" would match innocent text.
pub const MIN_SECRET_CHARS: usize = 8;

/// What a redacted run becomes.
pub const REDACTED: &str = "REDACTED";

/// Longest key whose windows are indexed: keys are well under 1 KiB (the browser takes at most
/// 8 KiB); past this only the first part is indexed, which still redacts every echo of it.
const MAX_INDEXED_KEY_BYTES: usize = 16 * 1024;

/// Removes one run's secrets from text. The default redacts nothing (a run without a key).
#[derive(Clone, Default)]
pub struct Redactor {
    /// Every window of [`MIN_SECRET_CHARS`] bytes of the key and of its encodings.
    windows: HashSet<[u8; MIN_SECRET_CHARS]>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The windows are the key: never print them.
        f.debug_struct("Redactor")
            .field("windows", &self.windows.len())
            .finish()
    }
}

impl Redactor {
    /// A redactor for `key` (none: redacts nothing).
    pub fn new(key: Option<&Secret>) -> Redactor {
        let mut r = Redactor::default();
        if let Some(key) = key {
            r.add(key.expose());
        }
        r
    }

    /// Also redacts `secret` (another credential of the same run).
    pub fn add(&mut self, secret: &str) {
        let secret = secret.trim();
        if secret.len() < MIN_SECRET_CHARS {
            return;
        }
        let secret = &secret.as_bytes()[..secret.len().min(MAX_INDEXED_KEY_BYTES)];
        for form in &forms(secret) {
            for w in form.windows(MIN_SECRET_CHARS) {
                let mut key = [0u8; MIN_SECRET_CHARS];
                key.copy_from_slice(w);
                self.windows.insert(key);
            }
        }
    }

    /// Whether this redactor has anything to redact.
    pub fn is_empty(&self) -> bool {
        self.windows.is_empty()
    }

    /// `text` with every run of the key (or its encodings) of [`MIN_SECRET_CHARS`] or more
    /// characters replaced by [`REDACTED`]. Borrows when nothing matched.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.windows.is_empty() || text.len() < MIN_SECRET_CHARS {
            return Cow::Borrowed(text);
        }
        let bytes = text.as_bytes();
        // Covered byte ranges, merged as they are found (windows come in order).
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for (i, w) in bytes.windows(MIN_SECRET_CHARS).enumerate() {
            let mut key = [0u8; MIN_SECRET_CHARS];
            key.copy_from_slice(w);
            if !self.windows.contains(&key) {
                continue;
            }
            let end = i + MIN_SECRET_CHARS;
            match runs.last_mut() {
                Some(last) if i <= last.1 => last.1 = last.1.max(end),
                _ => runs.push((i, end)),
            }
        }
        if runs.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (start, end) in runs {
            // A key with non-ASCII characters can match part of one: widen to whole ones.
            let start = floor_char_boundary(text, start).max(at);
            let end = ceil_char_boundary(text, end);
            if start >= end {
                continue;
            }
            out.push_str(&text[at..start]);
            out.push_str(REDACTED);
            at = end;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }

    /// [`Redactor::redact`] in place.
    pub fn redact_in_place(&self, text: &mut String) {
        if let Cow::Owned(s) = self.redact(text) {
            *text = s;
        }
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const KEY: &str = "sk-proj-Ab3/dE+fG9=hIjK0lMnOpQ";

    fn r() -> Redactor {
        Redactor::new(Some(&Secret::new(KEY)))
    }

    #[test]
    fn every_echo_of_the_key_is_redacted() {
        let prefix = &KEY[..12];
        let suffix = &KEY[KEY.len() - 9..];
        let url = "sk-proj-Ab3%2FdE%2BfG9%3DhIjK0lMnOpQ";
        let url_lower = "sk-proj-Ab3%2fdE%2bfG9%3dhIjK0lMnOpQ";
        let json = r"sk-proj-Ab3\/dE+fG9=hIjK0lMnOpQ";
        for text in [
            format!("Invalid API key provided: Bearer {KEY}"),
            format!("Incorrect API key provided: {prefix}****************"),
            format!("key ending in {suffix}"),
            format!("GET /v1?key={url} HTTP/1.1"),
            format!("GET /v1?key={url_lower}"),
            format!(r#"{{"message":"{json}"}}"#),
            format!("{KEY}{KEY}"),
        ] {
            let out = r().redact(&text).into_owned();
            assert!(out.contains(REDACTED), "{text} -> {out}");
            for w in KEY.as_bytes().windows(MIN_SECRET_CHARS) {
                let w = std::str::from_utf8(w).unwrap();
                assert!(!out.contains(w), "{text} -> {out} still holds {w}");
            }
        }
    }

    /// Regression (issue 35): `http://user:key@host` goes out as `Authorization: Basic
    /// base64(user:key)`, and a server quoting that header put it in every output.
    #[test]
    fn base64_of_the_key_is_redacted_wherever_it_starts() {
        use crate::redact::secret_forms::base64;
        for before in ["", "u:", "alice:", "Basic "] {
            let mut plain = before.as_bytes().to_vec();
            plain.extend_from_slice(KEY.as_bytes());
            let encoded = String::from_utf8(base64(&plain)).unwrap();
            let json = encoded.replace('/', "\\/");
            for text in [
                format!("Invalid credentials: Basic {encoded}"),
                encoded.clone(),
                format!(r#"{{"header":"Basic {json}"}}"#),
                format!(
                    "GET /?auth={}",
                    encoded.replace('+', "%2B").replace('/', "%2F")
                ),
            ] {
                let out = r().redact(&text).into_owned();
                assert!(out.contains(REDACTED), "{text} -> {out}");
                // The first and last group mix in bytes that are not the key's.
                let inner = &encoded[4..encoded.len() - 4];
                for w in inner.as_bytes().windows(MIN_SECRET_CHARS) {
                    let w = std::str::from_utf8(w).unwrap();
                    assert!(!out.contains(w), "{text} -> {out} still holds {w}");
                }
            }
        }
    }

    #[test]
    fn text_without_the_key_is_borrowed_unchanged() {
        let text = "Invalid API key provided: sk-proj (7 chars: Ab3/dE+) and more";
        assert!(matches!(r().redact(text), Cow::Borrowed(t) if t == text));
        assert!(matches!(Redactor::default().redact(KEY), Cow::Borrowed(_)));
    }

    #[test]
    fn keys_shorter_than_the_minimum_are_not_looked_for() {
        let r = Redactor::new(Some(&Secret::new("abc1234")));
        assert!(r.is_empty());
        assert_eq!(r.redact("abc1234 abc1234"), "abc1234 abc1234");
    }

    #[test]
    fn runs_are_widened_to_whole_characters() {
        // 'é' is C3 A9 and 'ĩ' C4 A9: the key's window [A9 '1' .. '7'] starts inside the
        // text's 'ĩ', and a cut there would leave half a character.
        let r = Redactor::new(Some(&Secret::new("é12345678")));
        assert_eq!(r.redact("aĩ12345678z"), format!("a{REDACTED}z"));
        assert_eq!(r.redact("é12345678"), REDACTED);
    }

    #[test]
    fn debug_never_prints_the_key() {
        let s = format!("{:?}", r());
        assert!(!s.contains("sk-proj"), "{s}");
    }
}
