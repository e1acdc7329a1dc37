//! Tokenizers built to make loading or counting cost time out of all proportion (issue 52's
//! review reproduced each): a WordPiece `tokenizer.json` whose one-word answers cost
//! ~L^2.75, Unigram pieces `a` … `a`×4000, 300,000 added tokens, and in a GGUF vocabulary
//! 100,000 control tokens or one 100,000-character SentencePiece piece. Each is refused
//! with a typed error that names the limit, before the expensive build; the same files at
//! the limits load and count. And a `tokenizer.json`'s padding and truncation never reach a
//! count (a fixed padding of 10^12 tokens would be an allocation that size).
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use tpsmeter_model::ModelError;
use tpsmeter_model::tokenizer::{
    MAX_ADDED_TOKENS, MAX_UNIGRAM_PIECE_CHARS, TokenizerSpec, VocabKind,
};
use tpsmeter_model::tokenizer::{SpecialTokens, Tokenizer};

fn json_file(model: Value, added: Value, extra: &[(&str, Value)]) -> Vec<u8> {
    let mut file = json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": added,
        "normalizer": null, "pre_tokenizer": null, "post_processor": null, "decoder": null,
        "model": model,
    });
    for (k, v) in extra {
        file[*k] = v.clone();
    }
    file.to_string().into_bytes()
}

fn from_json(bytes: &[u8]) -> Result<Tokenizer, ModelError> {
    Tokenizer::from_tokenizer_json(bytes, SpecialTokens::default(), false)
}

/// Every printable ASCII character, for vocabularies that cover any answer.
fn printable() -> Vec<String> {
    (0x21u8..0x7f).map(|b| char::from(b).to_string()).collect()
}

#[test]
fn a_wordpiece_tokenizer_is_refused_by_its_type() {
    // The review's file: no pre-tokenizer, so a whole answer is one word, and every
    // character and its `##` form in the vocabulary.
    let mut vocab = serde_json::Map::new();
    vocab.insert("[UNK]".into(), json!(0));
    for c in printable() {
        let n = vocab.len();
        vocab.insert(c.clone(), json!(n));
        vocab.insert(format!("##{c}"), json!(n + 1));
    }
    let model = json!({"type": "WordPiece", "unk_token": "[UNK]",
                       "continuing_subword_prefix": "##",
                       "max_input_chars_per_word": 1_000_000_000_000u64, "vocab": vocab});
    match from_json(&json_file(model, json!([]), &[])) {
        Err(e @ ModelError::UnsupportedTokenizerJson { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains("WordPiece") && text.contains("BPE, Unigram"),
                "{text}"
            );
            assert_eq!(e.kind(), "UnsupportedModel");
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

fn unigram(longest: usize) -> Vec<u8> {
    let mut vocab = vec![json!(["<unk>", 0.0])];
    vocab.extend((1..=longest).map(|n| json!(["a".repeat(n), -(n as f64)])));
    json_file(
        json!({"type": "Unigram", "unk_id": 0, "vocab": vocab, "byte_fallback": false}),
        json!([]),
        &[],
    )
}

#[test]
fn unigram_pieces_past_the_limit_are_refused_and_at_it_count() {
    match from_json(&unigram(4000)) {
        Err(ModelError::LimitExceeded { what, value, limit }) => {
            assert!(what.contains("Unigram piece"), "{what}");
            assert_eq!((value, limit), (4000, MAX_UNIGRAM_PIECE_CHARS as u64));
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    // At the limit the review's worst text, one 12,000-character word of the piece's
    // letter, counts (greedy-longest would give 188 pieces; the scores make the count
    // whatever Viterbi finds, but never zero nor more than a token a character).
    let tok = from_json(&unigram(MAX_UNIGRAM_PIECE_CHARS)).unwrap();
    let n = tok.count(&"a".repeat(12_000)).unwrap();
    assert!((188..=12_000).contains(&n), "{n}");
}

fn bpe_with_added(n: usize) -> Vec<u8> {
    let added: Vec<Value> = (0..n)
        .map(|i| {
            json!({"id": i + 1, "content": format!("<t{i}>"), "single_word": false,
                        "lstrip": false, "rstrip": false, "normalized": false, "special": true})
        })
        .collect();
    let vocab: serde_json::Map<String, Value> = printable()
        .into_iter()
        .enumerate()
        .map(|(i, c)| (c, json!(i)))
        .collect();
    json_file(
        json!({"type": "BPE", "vocab": vocab, "merges": []}),
        json!(added),
        &[],
    )
}

#[test]
fn added_tokens_past_the_limit_are_refused_before_the_build() {
    match from_json(&bpe_with_added(300_000)) {
        Err(ModelError::LimitExceeded { what, value, limit }) => {
            assert!(what.contains("added_tokens count"), "{what}");
            assert_eq!((value, limit), (300_000, MAX_ADDED_TOKENS as u64));
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    // A few thousand, as real models have, load; an added token is one token.
    let tok = from_json(&bpe_with_added(5000)).unwrap();
    assert_eq!(tok.count("ab<t42>c").unwrap(), 4);
}

#[test]
fn padding_and_truncation_never_reach_a_count() {
    let vocab: serde_json::Map<String, Value> = printable()
        .into_iter()
        .enumerate()
        .map(|(i, c)| (c, json!(i)))
        .collect();
    let model = json!({"type": "BPE", "vocab": vocab, "merges": []});
    let padding = json!({"strategy": {"Fixed": 100_000}, "direction": "Right",
                         "pad_to_multiple_of": null, "pad_id": 0, "pad_type_id": 0,
                         "pad_token": "a"});
    let truncation = json!({"direction": "Right", "max_length": 3, "strategy": "LongestFirst",
                            "stride": 0});
    let tok = from_json(&json_file(
        model,
        json!([]),
        &[("padding", padding), ("truncation", truncation)],
    ))
    .unwrap();
    assert_eq!(tok.count("abcdefgh").unwrap(), 8);
}

/// A GGUF vocabulary's tokenizer spec: `kind`, these tokens and types.
fn spec(kind: VocabKind, tokens: Vec<String>, types: Vec<i32>) -> TokenizerSpec {
    let mut spec = TokenizerSpec::new(kind, tokens);
    spec.token_types = Some(types);
    spec
}

#[test]
fn a_gguf_vocabulary_of_100k_control_tokens_is_refused() {
    let mut tokens: Vec<String> = printable();
    let mut types = vec![1; tokens.len()];
    tokens.extend((0..100_000).map(|i| format!("<|ctrl_{i}|>")));
    types.resize(tokens.len(), 3);
    match Tokenizer::from_spec(&spec(VocabKind::Gpt2, tokens.clone(), types.clone())) {
        Err(ModelError::LimitExceeded { what, value, limit }) => {
            assert!(
                what.contains("GGUF control and user-defined tokens count"),
                "{what}"
            );
            assert_eq!((value, limit), (100_000, MAX_ADDED_TOKENS as u64));
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    // Two thousand of them build, and each is one token.
    tokens.truncate(printable().len() + 2000);
    types.truncate(tokens.len());
    let tok = Tokenizer::from_spec(&spec(VocabKind::Gpt2, tokens, types)).unwrap();
    assert_eq!(tok.count("ab<|ctrl_7|>").unwrap(), 3);
}

#[test]
fn a_long_sentencepiece_piece_is_refused() {
    let mut tokens = vec!["<unk>".to_owned(), "a".to_owned()];
    tokens.push("a".repeat(100_000));
    let types = vec![2, 1, 1];
    let mut s = spec(VocabKind::Llama, tokens, types);
    s.scores = Some(vec![0.0, -1.0, -2.0]);
    match Tokenizer::from_spec(&s) {
        Err(ModelError::FileLimit { what, value, .. }) => {
            assert!(what.contains("SentencePiece token 2"), "{what}");
            assert_eq!(value, 100_000);
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    // A control token past that length is matched before the model (no merge is needed to
    // make it), so it is not refused: one of 300 bytes.
    s.tokens[2] = "a".repeat(300);
    s.token_types = Some(vec![2, 1, 3]);
    let tok = Tokenizer::from_spec(&s).unwrap();
    assert_eq!(tok.count(&"a".repeat(300)).unwrap(), 1);
}
