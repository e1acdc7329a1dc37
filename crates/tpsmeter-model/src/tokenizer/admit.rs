//! What a `tokenizer.json` may hold, checked before `tokenizers` builds any of it.
//!
//! [`super::vet`] vets the regexes; this checks the rest of what makes loading the file or
//! counting a text cost time out of all proportion to either:
//! - **The model type.** Only the two that text-generating models use: `BPE` (byte-level BPE:
//!   GPT-2, Llama 3, Qwen, SmolLM, DeepSeek, Phi; SentencePiece BPE with byte fallback:
//!   Llama 2, Mistral, Gemma) and `Unigram` (SentencePiece unigram: T5, mT5, XLM-R). BPE
//!   merges a word in `O(n log n)` of its length (64 KiB of one letter, no pre-tokenizer, in
//!   ~100 ms). `WordPiece` and `WordLevel` are the vocabularies of encoders (BERT) that
//!   generate no text for a benchmark to count, and WordPiece's longest-match search on a word
//!   costs about `L^2.75` of its length when no pre-tokenizer splits it (a 12,000-character
//!   answer took 39 s): both are refused, not limited.
//! - **A Unigram piece's length.** Each position of a word tries every piece that starts
//!   there, and the time grows with the square of the longest piece: pieces `a` … `a`×64 cost
//!   ~1 s per 64 KiB of `a`, pieces to `a`×4000 over four minutes for 12,000 characters.
//!   SentencePiece trains with a limit of 16 characters; [`MAX_UNIGRAM_PIECE_CHARS`] is four
//!   times that.
//! - **`added_tokens`.** `tokenizers` builds one matcher over all of them, in a time that
//!   grows faster than their number (60,000 in 1.5 s, 300,000 in 60 s) and with their length:
//!   [`MAX_ADDED_TOKENS`] of at most [`MAX_ADDED_TOKEN_BYTES`], [`MAX_ADDED_TOTAL_BYTES`] in
//!   all. A GGUF vocabulary's control and user-defined tokens become the same added tokens, so
//!   [`check_added`] holds them to the same limits.
//! - **The vocabulary's size** ([`MAX_VOCAB`]), counted here rather than after the build.
//!
//! Nothing is kept while checking: every string is read for its length only, so this costs
//! one pass over the file and no memory that grows with it.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::{ModelError, Result};

/// Largest vocabulary accepted (Gemma 3 has 262,144 entries; a few million is already absurd).
pub const MAX_VOCAB: usize = 4_000_000;

/// Most added tokens: real models have up to a few thousand (Llama 3 256, Mistral's Tekken
/// 1,000, Gemma 3 ~6,400), models with image tokens in the vocabulary tens of thousands.
pub const MAX_ADDED_TOKENS: usize = 65_536;

/// Longest added token, in bytes (the longest real ones are runs of spaces, under 100).
pub const MAX_ADDED_TOKEN_BYTES: usize = 1024;

/// All added tokens together, in bytes: the matcher's build time grows with their number
/// times this (65,536 tokens of 16 bytes, the most this allows at the most tokens, load in
/// about 2 s).
pub const MAX_ADDED_TOTAL_BYTES: usize = 1 << 20;

/// Longest Unigram piece, in characters (see the module docs).
pub const MAX_UNIGRAM_PIECE_CHARS: usize = 64;

/// The model types accepted, as `tokenizer.json` names them.
pub const ACCEPTED_MODELS: [&str; 2] = ["BPE", "Unigram"];

/// Checks `json` as the module docs say, before it is built.
pub(super) fn admit(json: &[u8]) -> Result<()> {
    let outline: Outline = serde_json::from_slice(json).map_err(|e| ModelError::Tokenizer {
        reason: format!("tokenizer.json: {e}"),
    })?;
    check_added(&outline.added_tokens, "tokenizer.json added_tokens")?;
    let kind = outline
        .model
        .kind
        .as_deref()
        .ok_or_else(|| ModelError::Tokenizer {
            reason: format!(
                "tokenizer.json: the model has no \"type\"; one of {} is needed",
                ACCEPTED_MODELS.join(", ")
            ),
        })?;
    if !ACCEPTED_MODELS.contains(&kind) {
        return Err(ModelError::UnsupportedTokenizerJson {
            model: quote(kind),
            accepted: ACCEPTED_MODELS.join(", "),
        });
    }
    let vocab = &outline.model.vocab;
    if vocab.count > MAX_VOCAB {
        return Err(ModelError::LimitExceeded {
            what: "tokenizer.json vocabulary size".to_owned(),
            value: vocab.count as u64,
            limit: MAX_VOCAB as u64,
        });
    }
    if kind == "Unigram" && vocab.longest.chars > MAX_UNIGRAM_PIECE_CHARS {
        return Err(ModelError::LimitExceeded {
            what: format!(
                "tokenizer.json Unigram piece {}'s length (characters)",
                vocab.longest_at
            ),
            value: vocab.longest.chars as u64,
            limit: MAX_UNIGRAM_PIECE_CHARS as u64,
        });
    }
    Ok(())
}

/// Holds added tokens (their count, longest and total length) to the limits above; `what`
/// names where they come from, for the error.
pub(super) fn check_added(added: &Tally, what: &str) -> Result<()> {
    let over = |part: String, value: usize, limit: usize| ModelError::LimitExceeded {
        what: format!("{what} {part}"),
        value: value as u64,
        limit: limit as u64,
    };
    if added.count > MAX_ADDED_TOKENS {
        return Err(over("count".into(), added.count, MAX_ADDED_TOKENS));
    }
    if added.longest.bytes > MAX_ADDED_TOKEN_BYTES {
        return Err(over(
            format!("#{}'s length (bytes)", added.longest_at),
            added.longest.bytes,
            MAX_ADDED_TOKEN_BYTES,
        ));
    }
    if added.bytes > MAX_ADDED_TOTAL_BYTES {
        return Err(over(
            "total length (bytes)".into(),
            added.bytes,
            MAX_ADDED_TOTAL_BYTES,
        ));
    }
    Ok(())
}

/// A name from the file, cut short for an error message.
fn quote(text: &str) -> String {
    let mut q: String = text.chars().take(40).collect();
    if q.len() < text.len() {
        q.push('…');
    }
    q
}

/// The parts of a `tokenizer.json` checked here; serde skips the rest.
#[derive(Deserialize)]
struct Outline {
    #[serde(default)]
    added_tokens: Tally,
    model: ModelOutline,
}

#[derive(Deserialize)]
struct ModelOutline {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    /// A map of piece to id (BPE), or a list of `[piece, score]` (Unigram).
    #[serde(default)]
    vocab: Tally,
}

/// A string's length in bytes and in characters; the string itself is not kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Len {
    pub bytes: usize,
    pub chars: usize,
}

impl Len {
    pub fn of(s: &str) -> Len {
        Len {
            bytes: s.len(),
            chars: s.chars().count(),
        }
    }
}

impl<'de> Deserialize<'de> for Len {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Len, D::Error> {
        struct Str;
        impl Visitor<'_> for Str {
            type Value = Len;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> std::result::Result<Len, E> {
                Ok(Len::of(s))
            }
        }
        d.deserialize_str(Str)
    }
}

/// How many strings a list or map holds, their total length and the longest (by
/// characters) with its index.
#[derive(Debug, Clone, Default)]
pub(super) struct Tally {
    pub count: usize,
    pub bytes: usize,
    pub longest: Len,
    pub longest_at: usize,
}

impl Tally {
    pub fn add(&mut self, len: Len) {
        if len.chars > self.longest.chars || len.bytes > self.longest.bytes {
            self.longest = Len {
                bytes: len.bytes.max(self.longest.bytes),
                chars: len.chars.max(self.longest.chars),
            };
            self.longest_at = self.count;
        }
        self.count += 1;
        self.bytes = self.bytes.saturating_add(len.bytes);
    }
}

/// An added token: its `content` (the other fields are flags).
#[derive(Deserialize)]
struct AddedOutline {
    content: Len,
}

impl<'de> Deserialize<'de> for Tally {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Tally, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = Tally;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of tokens or a map of token to id")
            }
            fn visit_unit<E: de::Error>(self) -> std::result::Result<Tally, E> {
                Ok(Tally::default())
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Tally, A::Error> {
                let mut tally = Tally::default();
                while let Some(key) = map.next_key::<Len>()? {
                    map.next_value::<IgnoredAny>()?;
                    tally.add(key);
                }
                Ok(tally)
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Tally, A::Error> {
                let mut tally = Tally::default();
                while let Some(entry) = seq.next_element::<Entry>()? {
                    tally.add(entry.0);
                }
                Ok(tally)
            }
        }
        d.deserialize_any(Entries)
    }
}

/// One entry of a list: `[piece, score]` (a Unigram vocabulary) or `{"content": …}` (an
/// added token).
struct Entry(Len);

impl<'de> Deserialize<'de> for Entry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Entry, D::Error> {
        struct One;
        impl<'de> Visitor<'de> for One {
            type Value = Entry;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("[piece, score] or an added token")
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Entry, A::Error> {
                let piece: Len = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(0, &self))?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Entry(piece))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<Entry, A::Error> {
                let added = AddedOutline::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Entry(added.content))
            }
        }
        d.deserialize_any(One)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn file(model: serde_json::Value, added: serde_json::Value) -> Vec<u8> {
        json!({"version": "1.0", "added_tokens": added, "model": model})
            .to_string()
            .into_bytes()
    }

    fn bpe(vocab: serde_json::Value) -> serde_json::Value {
        json!({"type": "BPE", "vocab": vocab, "merges": []})
    }

    #[test]
    fn the_outline_counts_vocabularies_and_added_tokens() {
        let added = json!([{"id": 0, "content": "<s>", "special": true},
                           {"id": 1, "content": "ébène", "special": false}]);
        let o: Outline =
            serde_json::from_slice(&file(bpe(json!({"a": 0, "bb": 1, "ccc": 2})), added)).unwrap();
        assert_eq!((o.model.vocab.count, o.model.vocab.longest.chars), (3, 3));
        assert_eq!(o.model.vocab.longest_at, 2);
        assert_eq!(o.added_tokens.count, 2);
        assert_eq!(o.added_tokens.bytes, 3 + "ébène".len());
        assert_eq!(o.added_tokens.longest, Len { bytes: 7, chars: 5 });
        let unigram = json!({"type": "Unigram", "unk_id": 0,
                             "vocab": [["<unk>", 0.0], ["▁a", -1.5], ["abcd", -2.0]]});
        let o: Outline = serde_json::from_slice(&file(unigram, json!([]))).unwrap();
        assert_eq!((o.model.vocab.count, o.model.vocab.longest.chars), (3, 5));
        assert_eq!(o.model.kind.as_deref(), Some("Unigram"));
    }

    #[test]
    fn only_bpe_and_unigram_are_accepted() {
        admit(&file(bpe(json!({"a": 0})), json!([]))).unwrap();
        for kind in ["WordPiece", "WordLevel", "Mystery"] {
            let model = json!({"type": kind, "vocab": {"a": 0}, "unk_token": "a"});
            match admit(&file(model, json!([]))) {
                Err(ModelError::UnsupportedTokenizerJson { model, accepted }) => {
                    assert_eq!(model, kind);
                    assert_eq!(accepted, "BPE, Unigram");
                }
                other => panic!("{kind}: {other:?}"),
            }
        }
        let untyped = json!({"vocab": {"a": 0}, "merges": []});
        let e = admit(&file(untyped, json!([]))).unwrap_err().to_string();
        assert!(e.contains("no \"type\""), "{e}");
    }

    #[test]
    fn a_long_unigram_piece_is_refused_and_one_at_the_limit_is_not() {
        let with = |n: usize| {
            let piece = "é".repeat(n);
            file(
                json!({"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], [piece, -1.0]]}),
                json!([]),
            )
        };
        admit(&with(MAX_UNIGRAM_PIECE_CHARS)).unwrap();
        match admit(&with(MAX_UNIGRAM_PIECE_CHARS + 1)) {
            Err(ModelError::LimitExceeded { what, value, limit }) => {
                assert!(what.contains("piece 1"), "{what}");
                assert_eq!(value, MAX_UNIGRAM_PIECE_CHARS as u64 + 1);
                assert_eq!(limit, MAX_UNIGRAM_PIECE_CHARS as u64);
            }
            other => panic!("{other:?}"),
        }
        // BPE pieces may be long: merging costs no more for them.
        let mut long = serde_json::Map::new();
        long.insert("a".repeat(5000), json!(0));
        admit(&file(bpe(serde_json::Value::Object(long)), json!([]))).unwrap();
    }

    #[test]
    fn added_tokens_over_a_limit_are_refused_before_the_build() {
        let added = |n: usize, len: usize| {
            let tokens: Vec<_> = (0..n)
                .map(|i| json!({"id": i, "content": format!("{i:0len$}"), "special": true}))
                .collect();
            file(bpe(json!({"a": 0})), json!(tokens))
        };
        let refused = |bytes: &[u8], part: &str, value: usize, limit: usize| match admit(bytes) {
            Err(ModelError::LimitExceeded {
                what,
                value: v,
                limit: l,
            }) => {
                assert!(what.contains(part), "{what}");
                assert_eq!((v, l), (value as u64, limit as u64));
            }
            other => panic!("{part}: {other:?}"),
        };
        admit(&added(MAX_ADDED_TOKENS, 6)).unwrap();
        refused(
            &added(MAX_ADDED_TOKENS + 1, 6),
            "count",
            MAX_ADDED_TOKENS + 1,
            MAX_ADDED_TOKENS,
        );
        refused(
            &added(2, MAX_ADDED_TOKEN_BYTES + 1),
            "#0's length",
            MAX_ADDED_TOKEN_BYTES + 1,
            MAX_ADDED_TOKEN_BYTES,
        );
        let total = 2000 * 1000;
        refused(
            &added(2000, 1000),
            "total length",
            total,
            MAX_ADDED_TOTAL_BYTES,
        );
    }

    #[test]
    fn a_file_that_is_not_a_tokenizer_is_a_parse_error() {
        for bad in [
            &b"{"[..],
            b"[]",
            br#"{"model": 3}"#,
            br#"{"added_tokens": [{"id": 1}], "model": {}}"#,
        ] {
            assert!(
                matches!(admit(bad), Err(ModelError::Tokenizer { .. })),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
