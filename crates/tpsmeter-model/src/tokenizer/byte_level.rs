//! GPT-2's reversible mapping between bytes and printable characters.
//!
//! Byte-level BPE vocabularies store every token as characters of this alphabet (a space is
//! `Ġ`, a newline `Ċ`), so turning a token back into the bytes it stands for needs the inverse.
//! `tokenizers` keeps its copy private; this is the published algorithm.

/// The character byte `b` is written as.
pub fn byte_to_char(b: u8) -> char {
    // Printable Latin-1 bytes stand for themselves; the other 68 take the code points from
    // U+0100 on, in byte order.
    if is_self_mapped(b) {
        return char::from(b);
    }
    let rank = (0..b).filter(|&x| !is_self_mapped(x)).count() as u32;
    char::from_u32(256 + rank).unwrap_or(char::REPLACEMENT_CHARACTER)
}

fn is_self_mapped(b: u8) -> bool {
    matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF)
}

/// The inverse table: for each code point below 324, the byte it stands for.
#[derive(Debug, Clone)]
pub struct ByteDecoder {
    table: [Option<u8>; 324],
}

impl Default for ByteDecoder {
    fn default() -> Self {
        let mut table = [None; 324];
        for b in 0..=255u8 {
            let c = byte_to_char(b) as usize;
            if let Some(slot) = table.get_mut(c) {
                *slot = Some(b);
            }
        }
        Self { table }
    }
}

impl ByteDecoder {
    /// The bytes a byte-level token string stands for, or `None` when it holds a character
    /// outside the alphabet (then it is not byte-level text, e.g. an added token).
    pub fn decode(&self, token: &str) -> Option<Vec<u8>> {
        token
            .chars()
            .map(|c| self.table.get(c as usize).copied().flatten())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_round_trips_and_known_letters_match_gpt2() {
        let dec = ByteDecoder::default();
        for b in 0..=255u8 {
            let s = byte_to_char(b).to_string();
            assert_eq!(dec.decode(&s), Some(vec![b]), "byte {b}");
        }
        // The two characters every GPT-2 vocabulary is full of.
        assert_eq!(byte_to_char(b' '), 'Ġ');
        assert_eq!(byte_to_char(b'\n'), 'Ċ');
    }
}
