//! The key redactor on any key and any text: it never panics, never leaves eight bytes of
//! the key in its output, and changes nothing in a text that holds no eight bytes of it.
//!
//! Input: byte 0 is the key's length (mod 64), byte 1 how the key is planted in the text
//! (mod 5: not at all, verbatim, as `Bearer <key>`, its first half, URL-encoded) and byte 2
//! where (a fraction of the text's length); then the key's bytes, then the text. Both are
//! read as lossy UTF-8, as the redactor only ever sees strings.

use tpsmeter_core::request::{MIN_SECRET_CHARS, REDACTED, Redactor, Secret};

/// One input: see the module's docs.
pub fn run(data: &[u8]) {
    let [len, plant, at, rest @ ..] = data else {
        return;
    };
    let len = usize::from(*len % 64).min(rest.len());
    let (key, text) = rest.split_at(len);
    let key = String::from_utf8_lossy(key).into_owned();
    let mut text = String::from_utf8_lossy(text).into_owned();
    let planted = match plant % 5 {
        1 => key.clone(),
        2 => format!("Bearer {key}"),
        3 => key.chars().take(key.chars().count() / 2).collect(),
        4 => key
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() {
                    char::from(b).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect(),
        _ => String::new(),
    };
    let mut cut = text.len() * usize::from(*at) / 255;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.insert_str(cut, &planted);

    let redactor = Redactor::new(Some(&Secret::new(key.clone())));
    let out = redactor.redact(&text);
    let secret = key.trim().as_bytes();
    let windows = |s: &[u8]| -> Vec<[u8; MIN_SECRET_CHARS]> {
        s.windows(MIN_SECRET_CHARS)
            .map(|w| {
                let mut a = [0u8; MIN_SECRET_CHARS];
                a.copy_from_slice(w);
                a
            })
            .collect()
    };
    if secret.len() < MIN_SECRET_CHARS {
        assert_eq!(
            out, text,
            "a key under {MIN_SECRET_CHARS} bytes is not looked for"
        );
        return;
    }
    let key_windows = windows(secret);
    // The marker itself (or its neighbours) could spell part of a key made of its letters;
    // for every other key, no window of the key survives.
    if !secret.iter().any(|b| REDACTED.as_bytes().contains(b)) {
        for w in windows(out.as_bytes()) {
            assert!(
                !key_windows.contains(&w),
                "{:?} survived in {out:?}",
                String::from_utf8_lossy(&w)
            );
        }
    }
    // An alphanumeric key's encodings are the key itself: a text that holds no window of it
    // comes back untouched.
    if secret.iter().all(u8::is_ascii_alphanumeric)
        && !windows(text.as_bytes())
            .iter()
            .any(|w| key_windows.contains(w))
    {
        assert_eq!(out, text);
    }
}
