//! [`KeptAnswer`]: the answer text a request keeps for a later step, bounded by what the
//! request asked for, and [`count_answer`], the run tokenizer's count of it.
//!
//! A request keeps its answer only when something after it needs the text: the next turn of
//! a multi-turn conversation sends it back, and a run with a tokenizer counts it when the
//! server reports no output usage. What it keeps is capped relative to the request's own
//! output cap ([`answer_cap`]), so a server that ignores `max_tokens` and streams megabytes
//! makes the client hold (and count, and resend) at most a few hundred KiB per request.

use crate::error::Result;
use crate::exchange::Outcome;
use crate::tokens::TokenCounter;

/// Bytes kept per token of the request's output cap. A token of a BPE or SentencePiece
/// vocabulary is ~4 bytes of English and rarely over 16 (the longest common tokens are runs
/// of spaces, dashes or code indentation, up to ~32 bytes; a CJK character is 3 bytes and
/// at most one token). 32 bytes a token is 8× the typical token: an answer that stays within
/// its `max_tokens` is never cut, whatever its text.
pub const KEPT_BYTES_PER_TOKEN: usize = 32;

/// The least kept, whatever the output cap: a server that counts tokens differently (or
/// adds a few after the cap, as some do with stop sequences) still gets its whole answer
/// kept when the cap is small. 64 KiB is ~16k tokens of English.
pub const MIN_KEPT_ANSWER_BYTES: usize = 64 << 10;

/// The most kept, whatever the output cap: the memory a hostile stream can make one request
/// hold, the text a tokenizer is asked to count, and with JSON's escapes (up to 6×) the most
/// one answer adds to a later turn's body. 512 KiB is ~130k tokens of English, more than
/// any model's output limit. Measured with SmolLM2's tokenizer, whose worst case is one
/// repeated digit (a token a byte): 512 KiB counts in 0.8 s with ~160 MB, 64 KiB (the
/// default 256-token cap's) in 0.09 s with ~15 MB, where the whole 4 MiB a hostile server
/// sent took 10 s and 1.6 GB. English text counts at ~3 MB/s.
pub const MAX_KEPT_ANSWER_BYTES: usize = 512 << 10;

/// How many bytes of answer a request with output cap `max_tokens` keeps:
/// `max_tokens × 32`, within 64 KiB to 512 KiB (see the constants for why).
pub fn answer_cap(max_tokens: u32) -> usize {
    usize::try_from(max_tokens)
        .unwrap_or(usize::MAX)
        .saturating_mul(KEPT_BYTES_PER_TOKEN)
        .clamp(MIN_KEPT_ANSWER_BYTES, MAX_KEPT_ANSWER_BYTES)
}

/// The first bytes of an answer, up to a cap, and the answer's whole length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptAnswer {
    text: String,
    cap: usize,
    /// Bytes of answer text received, kept or not.
    bytes: u64,
}

impl KeptAnswer {
    /// An empty answer that will keep at most `cap` bytes (and never more than
    /// [`MAX_KEPT_ANSWER_BYTES`]).
    pub fn new(cap: usize) -> KeptAnswer {
        KeptAnswer {
            text: String::new(),
            cap: cap.min(MAX_KEPT_ANSWER_BYTES),
            bytes: 0,
        }
    }

    /// Appends `text` as far as the cap allows (whole characters only; once something was
    /// left out, nothing after it is kept).
    pub fn push(&mut self, text: &str) {
        if !self.is_cut() {
            let room = self.cap.saturating_sub(self.text.len());
            self.text.push_str(crate::cap::cap_bytes(text, room));
        }
        self.bytes = self.bytes.saturating_add(text.len() as u64);
    }

    /// The text kept: the whole answer unless [`KeptAnswer::is_cut`].
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The whole answer's length in bytes, kept or not.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Whether the answer ran past the cap (the server sent more than was asked for).
    pub fn is_cut(&self) -> bool {
        self.bytes > self.text.len() as u64
    }
}

/// The answer a tokenizer must count for `outcome`'s record: its kept answer, when the
/// server reported no output usage (else usage, or the chunk count, stands).
pub fn answer_to_count(outcome: &Outcome) -> Option<&KeptAnswer> {
    let usage = outcome.timeline.usage().and_then(|u| u.output_tokens);
    outcome.answer.as_ref().filter(|_| usage.is_none())
}

/// The tokenizer's count of `answer`. An answer that ran past its cap is counted on the part
/// kept and scaled by its whole length in bytes: an estimate, but counting what a server
/// sends past the cap is unbounded work.
pub fn count_answer(counter: &dyn TokenCounter, answer: &KeptAnswer) -> Result<u64> {
    let counted = u64::from(counter.count(answer.text())?);
    let kept = answer.text().len() as u64;
    if !answer.is_cut() || kept == 0 {
        return Ok(counted);
    }
    let scaled = u128::from(counted) * u128::from(answer.bytes()) / u128::from(kept);
    Ok(u64::try_from(scaled).unwrap_or(u64::MAX))
}

/// Answers the tokenizer could not count (a count over its time budget): each keeps the
/// stream's own estimate, and the run goes on; the report says how many, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CountFailures {
    count: u64,
    first: Option<String>,
}

impl CountFailures {
    /// Notes one failure; `true` for the first (worth a line on stderr).
    pub fn note(&mut self, error: &str) -> bool {
        self.count += 1;
        let first = self.first.is_none();
        if first {
            self.first = Some(error.to_owned());
        }
        first
    }

    /// The report's `count_failed` warning, if any answer failed.
    pub fn warning(&self) -> Option<crate::report::Warning> {
        let first = self.first.as_deref()?;
        let n = self.count;
        Some(crate::report::Warning {
            code: "count_failed".into(),
            message: format!(
                "{n} answer{} kept the stream's own token estimate, as the tokenizer could not \
                 count {}; the first: {first}",
                if n == 1 { "" } else { "s" },
                if n == 1 { "it" } else { "them" }
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn count_failures_make_one_warning_naming_the_first() {
        let mut f = CountFailures::default();
        assert_eq!(f.warning(), None);
        assert!(f.note("too slow"));
        assert!(!f.note("also slow"));
        let w = f.warning().unwrap();
        assert_eq!(w.code, "count_failed");
        assert!(w.message.starts_with("2 answers kept"), "{}", w.message);
        assert!(w.message.ends_with("the first: too slow"), "{}", w.message);
    }

    #[test]
    fn the_cap_follows_max_tokens_within_its_bounds() {
        assert_eq!(answer_cap(1), MIN_KEPT_ANSWER_BYTES);
        assert_eq!(answer_cap(256), MIN_KEPT_ANSWER_BYTES);
        assert_eq!(answer_cap(4096), 128 << 10);
        assert_eq!(answer_cap(32_768), MAX_KEPT_ANSWER_BYTES);
        assert_eq!(answer_cap(u32::MAX), MAX_KEPT_ANSWER_BYTES);
    }

    #[test]
    fn an_answer_past_its_cap_keeps_whole_characters_and_its_length() {
        let mut a = KeptAnswer::new(5);
        a.push("abc");
        a.push("dé");
        assert_eq!(
            (a.text(), a.is_cut()),
            ("abcd", true),
            "é would cross the cap"
        );
        a.push("more");
        assert_eq!((a.text(), a.bytes()), ("abcd", 10));
        let mut whole = KeptAnswer::new(usize::MAX);
        whole.push("x");
        assert!(!whole.is_cut());
        assert_eq!(whole.cap, MAX_KEPT_ANSWER_BYTES);
    }

    /// An OpenAI chat stream of `pieces` (each in an event of its own), without usage, kept
    /// up to `cap` bytes.
    fn outcome(pieces: &[&str], cap: usize) -> Outcome {
        let mut ex = crate::exchange::Exchange::new(crate::api::Api::OpenaiChat, 0.0);
        ex.keep_answer(cap);
        ex.on_response(200, None);
        for (i, p) in pieces.iter().enumerate() {
            let event = serde_json::json!({"choices": [{"index": 0, "delta": {"content": p}}]});
            ex.on_bytes(i as f64, format!("data: {event}\n\n").as_bytes());
        }
        ex.on_bytes(9.0, b"data: [DONE]\n\n");
        ex.into_outcome()
    }

    #[test]
    fn an_answer_past_its_cap_is_counted_on_the_part_kept_and_scaled() {
        let words = crate::tokens::WordCounter;
        let count = |o: &Outcome| answer_to_count(o).map(|a| count_answer(&words, a).unwrap());
        let whole = outcome(&["one two ", "three four "], 1 << 10);
        assert_eq!(count(&whole), Some(4));
        // 8 of 16 bytes kept: "one two " is 2 words, scaled by 2.
        let cut = outcome(&["one two ", "three fo"], 8);
        assert!(cut.answer.as_ref().unwrap().is_cut());
        assert_eq!(count(&cut), Some(4));
        let mut not_kept = whole.clone();
        not_kept.answer = None;
        assert_eq!(count(&not_kept), None);
    }
}
