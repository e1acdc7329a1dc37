//! `encode_within` with a stand-in tokenizer (a token per word) that records what it was
//! asked to encode: the work a prompt costs is what these tests bound.
#![allow(clippy::unwrap_used)]

use std::cell::RefCell;

use super::{LengthBound, PIECE_BYTES, PIECE_SLACK, check_length, cut, encode_within};
use crate::serve::api_error::ApiError;

/// A vocabulary whose tokens are at most this many bytes, none dropped.
struct PerToken(usize);

impl LengthBound for PerToken {
    fn least_tokens(&self, text: &str) -> usize {
        text.len().div_ceil(self.0)
    }
    fn max_bytes(&self) -> usize {
        self.0
    }
}

/// Tokens of at most 16 bytes.
static P16: PerToken = PerToken(16);

/// A token per whitespace-separated word, plus one BOS with `add_special`; the lengths of
/// the texts it encoded, in order.
#[derive(Default)]
struct Words {
    calls: RefCell<Vec<usize>>,
}

impl Words {
    fn encode(&self, text: &str, add_special: bool) -> Result<Vec<u32>, ApiError> {
        self.calls.borrow_mut().push(text.len());
        let n = text.split_whitespace().count() + usize::from(add_special);
        Ok(vec![7; n])
    }

    fn run(
        &self,
        text: &str,
        context: usize,
        bound: Option<&dyn LengthBound>,
    ) -> Result<Vec<u32>, ApiError> {
        encode_within(text, true, context, bound, |t, s| self.encode(t, s))
    }

    fn calls(&self) -> Vec<usize> {
        self.calls.borrow().clone()
    }
}

fn code(r: &Result<Vec<u32>, ApiError>) -> Option<&'static str> {
    r.as_ref().err().and_then(|e| e.code)
}

/// Regression: `serve` encoded a 1 MB prompt in full (~380 MB of memory) before seeing it
/// was past the context. By its length alone it cannot fit: refused with no encoding.
#[test]
fn a_prompt_longer_than_the_context_can_hold_is_refused_before_encoding() {
    let words = Words::default();
    let text = "word ".repeat(200_000);
    // 4096 positions of at most 16 bytes: 65,536 bytes at most; 1 MB cannot fit.
    let r = words.run(&text, 4096, Some(&P16));
    assert_eq!(code(&r), Some("context_length_exceeded"));
    assert!(words.calls().is_empty(), "encoded {:?}", words.calls());
    let msg = r.unwrap_err().message;
    assert!(
        msg.contains("1000000 bytes") && msg.contains("4096 positions"),
        "{msg}"
    );

    // The bound is exact at its edge: 4095 tokens of 16 bytes may fit, 4096 may not.
    assert!(check_length(&"x".repeat(4095 * 16), 4096, Some(&P16)).is_ok());
    assert!(check_length(&"x".repeat(4095 * 16 + 1), 4096, Some(&P16)).is_err());
    // Without a bound (a vocabulary that can drop or fuse text), nothing is refused by length.
    assert!(check_length(&text, 4096, None).is_ok());
}

/// Where the length proves nothing (long tokens, a large context), a long prompt is counted
/// in pieces and refused once they pass the context: no encode sees more than a piece, and
/// a prompt far past the context costs one piece, not the whole text.
#[test]
fn a_long_prompt_is_encoded_in_pieces_and_stops_past_the_context() {
    let words = Words::default();
    let text = "word ".repeat(200_000);
    let r = words.run(&text, 4096, None);
    assert_eq!(code(&r), Some("context_length_exceeded"));
    let calls = words.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(calls[0] <= PIECE_BYTES, "{calls:?}");

    // A larger context: pieces until the count passes PIECE_SLACK contexts, then stop.
    let words = Words::default();
    let context = 20_000;
    let r = words.run(&text, context, None);
    assert_eq!(code(&r), Some("context_length_exceeded"));
    let calls = words.calls();
    let encoded: usize = calls.iter().sum();
    assert!(calls.iter().all(|&n| n <= PIECE_BYTES), "{calls:?}");
    // 5 bytes a word: the count passes 40,000 words within 200,000 bytes (plus a piece).
    assert!(
        encoded <= PIECE_SLACK * context * 5 + PIECE_BYTES && encoded < text.len() / 2,
        "encoded {encoded} of {} bytes: {calls:?}",
        text.len()
    );
}

/// A prompt near the context is never refused by the piecewise count: it gets its exact
/// encoding, and the exact count decides.
#[test]
fn a_prompt_that_fits_is_encoded_whole_and_exactly() {
    let words = Words::default();
    // 30,000 words in 150 KB: over a piece, under PIECE_SLACK contexts of 20,000.
    let text = "word ".repeat(30_000);
    let ids = words.run(&text, 40_000, None).unwrap();
    assert_eq!(ids.len(), 30_001, "the words and BOS");
    assert_eq!(
        words.calls().last(),
        Some(&text.len()),
        "then encoded whole"
    );

    // 1.5 contexts by the pieces: not refused by them, refused by the exact count.
    let words = Words::default();
    let r = words.run(&text, 20_000, None);
    assert_eq!(code(&r), Some("context_length_exceeded"));
    assert_eq!(words.calls().last(), Some(&text.len()));
    assert!(r.unwrap_err().message.contains("30001 tokens"));

    // Short prompts: one encode, no pieces.
    let words = Words::default();
    assert_eq!(
        words.run("Name a color.", 256, Some(&P16)).unwrap().len(),
        4
    );
    assert_eq!(words.calls(), vec![13]);
    assert_eq!(
        code(&words.run("", 256, Some(&P16))),
        None,
        "an empty chat text still has its BOS"
    );
    let r = encode_within("   ", false, 256, Some(&P16), |t, s| {
        Words::default().encode(t, s)
    });
    assert!(r.unwrap_err().message.contains("no tokens"));
}

#[test]
fn pieces_end_after_whitespace_or_at_a_character_boundary() {
    assert_eq!(cut("short", 64), 5);
    assert_eq!(
        cut("ab cd ef", 7),
        6,
        "after the last space within the limit"
    );
    // No whitespace: at the last character boundary within the limit (é is 2 bytes).
    let text = "é".repeat(10);
    assert_eq!(cut(&text, 5), 4);
    // A limit under the first character still makes progress.
    assert_eq!(cut("€uro", 1), 3);
    // Whitespace further back than the search window is not used.
    let text = format!(" {}", "x".repeat(4000));
    assert_eq!(cut(&text, 3000), 3000);
}
