//! The forms a credential takes when a server quotes it back: as sent, URL-encoded,
//! JSON-escaped, and base64-encoded as HTTP basic auth sends it (`http://user:key@host` goes
//! out as `Authorization: Basic base64(user:key)`). The [`super::Redactor`] indexes the
//! windows of every form.
//!
//! A base64 text changes with where the secret starts in what was encoded: its first
//! 4-character group mixes in the byte(s) before it. So besides the encoding of the secret
//! alone (padded, as a basic-auth header carries `user:pass`, and after `Basic `), the
//! encodings of the secret less its first one and two bytes are indexed, cut to whole
//! 3-byte groups: together these are every run of base64 that the secret alone decides,
//! wherever it sits in an encoded text (`base64(user:key)` holds the key at some offset).

/// The secret's forms, each to be indexed window by window.
pub(super) fn forms(secret: &[u8]) -> Vec<Vec<u8>> {
    let mut plain = vec![secret.to_vec()];
    let whole = base64(secret);
    let mut basic = b"Basic ".to_vec();
    basic.extend_from_slice(&whole);
    plain.push(basic);
    plain.push(whole);
    for skip in 1..3 {
        let rest = secret.get(skip..).unwrap_or_default();
        plain.push(base64(&rest[..rest.len() / 3 * 3]));
    }
    let mut out = Vec::with_capacity(plain.len() * 4);
    for form in plain {
        out.push(percent_encoded(&form, b"0123456789ABCDEF"));
        out.push(percent_encoded(&form, b"0123456789abcdef"));
        out.push(json_escaped(&form));
        out.push(form);
    }
    out
}

/// `s` as a URL query value would carry it: unreserved characters kept, every other byte
/// `%XX` with the given hex digits.
fn percent_encoded(s: &[u8], hex: &[u8; 16]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() * 3);
    for &b in s {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b);
        } else {
            out.extend([b'%', hex[usize::from(b >> 4)], hex[usize::from(b & 15)]]);
        }
    }
    out
}

/// `s` inside a JSON string as a server would write it: `"` and `\` escaped, `/` as `\/`
/// (PHP's and some Java encoders' habit), control characters as `\u00XX`.
fn json_escaped(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 8);
    for &b in s {
        match b {
            b'"' | b'\\' | b'/' => out.extend([b'\\', b]),
            0..=0x1f => out.extend(format!("\\u{b:04x}").bytes()),
            _ => out.push(b),
        }
    }
    out
}

/// Standard base64 (RFC 4648 §4, with `=` padding), as HTTP basic auth uses it. Written
/// here rather than taken from a crate: the core keeps its dependencies (and the wasm) small.
pub(super) fn base64(s: &[u8]) -> Vec<u8> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::with_capacity(s.len().div_ceil(3) * 4);
    for group in s.chunks(3) {
        let b = [
            group[0],
            *group.get(1).unwrap_or(&0),
            *group.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= group.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]);
            } else {
                out.push(b'=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded.as_bytes(), "{plain}");
        }
        assert_eq!(base64(&[0xfb, 0xff]), b"+/8=");
    }

    /// Wherever the secret sits in an encoded text, some form holds the base64 run that the
    /// secret alone decides (all but the group it starts in and the group it ends in).
    #[test]
    fn every_offset_of_the_secret_in_a_base64_text_is_covered() {
        let secret = b"sk-Ab3/dE+fG9=hIjK";
        let forms = forms(secret);
        for before in ["", "u", "us", "user:", "longer-user:"] {
            for after in ["", "x", "xy"] {
                let mut text = before.as_bytes().to_vec();
                text.extend_from_slice(secret);
                text.extend_from_slice(after.as_bytes());
                let encoded = base64(&text);
                // The base64 characters that depend on the secret's bytes only.
                let first = before.len().div_ceil(3) * 4;
                let last = (before.len() + secret.len()) / 3 * 4;
                let inner = &encoded[first..last];
                assert!(
                    forms
                        .iter()
                        .any(|f| f.windows(inner.len()).any(|w| w == inner)),
                    "{before:?} + secret + {after:?}: {}",
                    String::from_utf8_lossy(inner)
                );
            }
        }
    }
}
