//! Streaming detokenization never emits part of a UTF-8 character, and the pieces always add
//! up to the whole decode.
#![allow(clippy::unwrap_used)]

mod tokenizer_support;

use proptest::prelude::*;
use tokenizer_support::{model_path, tiny_byte_level, tokenizer_from_gguf};
use tpsmeter_model::detok::Detokenizer;
use tpsmeter_model::tokenizer::Tokenizer;

/// Streams `ids` and checks each piece; returns the concatenation.
fn stream(tok: &Tokenizer, ids: &[u32]) -> String {
    let mut detok = Detokenizer::for_sequence(tok, true);
    let mut all = String::new();
    for &id in ids {
        // A `String` is valid UTF-8 by construction; what matters is that no piece ends in a
        // replacement character that a later byte would have completed, which the equality
        // with the whole decode below catches.
        all.push_str(&detok.push(id).unwrap());
    }
    all.push_str(&detok.finish());
    all
}

#[test]
fn an_emoji_split_over_tokens_comes_out_whole_once_complete() {
    let tok = tiny_byte_level();
    // 😀 = F0 9F 98 80: token 260 holds F0 9F, then the two single bytes.
    let mut detok = Detokenizer::new(&tok);
    assert_eq!(detok.push(260).unwrap(), "");
    assert!(detok.has_pending());
    assert_eq!(detok.push(0x98).unwrap(), "");
    assert_eq!(detok.push(0x80).unwrap(), "😀");
    assert!(!detok.has_pending());
    // 中 = E4 B8 AD after plain text: the text goes out at once, the character when whole.
    assert_eq!(detok.push(256).unwrap(), "he");
    assert_eq!(detok.push(259).unwrap(), "");
    assert_eq!(detok.push(0xAD).unwrap(), "中");
}

#[test]
fn bytes_that_cannot_be_completed_become_one_replacement_each_run() {
    let tok = tiny_byte_level();
    let mut detok = Detokenizer::new(&tok);
    // A lone continuation byte is invalid at once.
    assert_eq!(detok.push(0x80).unwrap(), "\u{FFFD}");
    // A lead byte followed by ASCII: the lead byte is given up, the ASCII shown.
    assert_eq!(detok.push(0xE4).unwrap(), "");
    assert_eq!(detok.push(b'a' as u32).unwrap(), "\u{FFFD}a");
    // An unfinished character at the end of the stream.
    assert_eq!(detok.push(260).unwrap(), "");
    assert_eq!(detok.finish(), "\u{FFFD}");
}

#[test]
fn markup_is_hidden_in_generated_text_unless_asked_for() {
    let tok = tiny_byte_level();
    let mut plain = Detokenizer::new(&tok);
    assert_eq!(plain.push(264).unwrap(), "");
    let mut shown = Detokenizer::new(&tok).render_markup(true);
    assert_eq!(shown.push(264).unwrap(), "<|im_start|>");
    assert!(
        Detokenizer::new(&tok).push(100_000).is_err(),
        "ids past the vocabulary are errors"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Random ids over the asset-free vocabulary, heavy in lone bytes and partial characters.
    #[test]
    fn stream_equals_whole_decode_tiny(ids in prop::collection::vec(0u32..266, 0..64)) {
        let tok = tiny_byte_level();
        prop_assert_eq!(stream(&tok, &ids), tok.decode(&ids, true).unwrap());
    }

    /// Valid text encoded and streamed back comes out unchanged, whatever the split.
    #[test]
    fn valid_text_streams_back_unchanged(text in "\\PC{0,40}") {
        let tok = tiny_byte_level();
        let ids = tok.encode(&text, false).unwrap();
        let mut detok = Detokenizer::new(&tok);
        let mut pieces = Vec::new();
        for id in ids {
            pieces.push(detok.push(id).unwrap());
        }
        pieces.push(detok.finish());
        // No piece holds a replacement character: nothing was cut mid-character.
        let clean = pieces.iter().all(|p| !p.contains(char::REPLACEMENT_CHARACTER));
        prop_assert!(clean || text.contains(char::REPLACEMENT_CHARACTER), "pieces {:?}", pieces);
        prop_assert_eq!(pieces.concat(), text);
    }
}

#[test]
fn stream_equals_whole_decode_on_smollm2_random_ids() {
    let Some(model) = model_path() else { return };
    let tok = tokenizer_from_gguf(&model);
    let vocab = tok.vocab_size() as u32;
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(256));
    runner
        .run(&prop::collection::vec(0..vocab, 0..48), |ids| {
            prop_assert_eq!(stream(&tok, &ids), tok.decode(&ids, true).unwrap());
            Ok(())
        })
        .unwrap();
    // Real text with multi-token characters streams back exactly.
    let text = "Emoji 😀👍🏽👨‍👩‍👧 and 中文 and e\u{301}";
    let ids = tok.encode(text, false).unwrap();
    assert!(ids.len() > 10);
    let mut detok = Detokenizer::new(&tok);
    let pieces: Vec<String> = ids.iter().map(|&id| detok.push(id).unwrap()).collect();
    assert!(pieces.iter().all(|p| !p.contains('\u{FFFD}')), "{pieces:?}");
    assert!(
        pieces.iter().any(String::is_empty),
        "some token should hold a partial character"
    );
    assert_eq!(pieces.concat() + &detok.finish(), text);
}
