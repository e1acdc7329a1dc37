//! `cap_chars`: the one way this crate shortens text it shows (error messages, excerpts,
//! header values).

/// The first `max` characters of `s`, with `…` appended when something was cut.
///
/// Cuts with `str::get` rather than indexing: the index cannot miss a character boundary
/// (it comes from `char_indices`), and indexing would link `str`'s slice-error panic, whose
/// message formats a `char` with `Debug` and so pulls Unicode escaping tables into the
/// real-user meter's wasm.
pub fn cap_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((cut, _)) => {
            let mut out = String::with_capacity(cut + '…'.len_utf8());
            out.push_str(s.get(..cut).unwrap_or_default());
            out.push('…');
            out
        }
        None => s.to_owned(),
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
pub fn cap_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let cut = (0..=max)
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0);
    s.get(..cut).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::{cap_bytes, cap_chars};

    #[test]
    fn byte_caps_keep_whole_characters() {
        assert_eq!(cap_bytes("héllo", 2), "h");
        assert_eq!(cap_bytes("héllo", 3), "hé");
        assert_eq!(cap_bytes("abc", 9), "abc");
        assert_eq!(cap_bytes("abc", 0), "");
    }

    #[test]
    fn cuts_on_a_character_boundary_and_marks_the_cut() {
        assert_eq!(cap_chars("short", 10), "short");
        assert_eq!(cap_chars("exact", 5), "exact");
        assert_eq!(cap_chars("abcdef", 3), "abc…");
        assert_eq!(cap_chars("ééééé", 2), "éé…");
        assert_eq!(cap_chars("日本語テキスト", 0), "…");
        assert_eq!(cap_chars("", 0), "");
    }
}
