//! Prompts: the default one, and synthesised text of about N tokens (the CLI's
//! `--input-tokens`, the browser's `inputTokens`).
//!
//! Synthesis is an approximation until a tokenizer re-count hooks in: the text is a sequence
//! of short, common English words, each preceded by a space. In the BPE vocabularies of GPT,
//! Llama, Mistral, Qwen and SmolLM every such word (" the", " house", ...) is a single token,
//! so N words come to about N tokens (measured on SmolLM2 within a few percent; the
//! server's `usage.input_tokens` in the report gives the exact figure). The word order is a
//! fixed pseudo-random walk, so the text does not repeat in short cycles (which some
//! tokenizers would merge) and is identical across runs.

use crate::error::{CoreError, Result};

/// Cap on synthesised prompts, in tokens (far beyond any context window served today).
pub const MAX_SYNTH_TOKENS: u32 = 2_000_000;

/// The default prompt when none is given: asks for a long answer so decoding dominates.
pub const DEFAULT_PROMPT: &str =
    "Write a detailed essay about the history of lighthouses and the people who kept them.";

/// Words that are one token each (with their leading space) in common BPE vocabularies.
pub(crate) const WORDS: [&str; 64] = [
    "the", "house", "river", "small", "green", "light", "water", "stone", "world", "night",
    "morning", "city", "people", "road", "tree", "window", "table", "book", "story", "music",
    "field", "sun", "moon", "star", "open", "door", "hand", "face", "voice", "white", "black",
    "blue", "red", "old", "new", "long", "short", "high", "low", "warm", "cold", "quiet", "bright",
    "dark", "early", "late", "friend", "child", "school", "market", "garden", "bridge", "boat",
    "ship", "sea", "island", "mountain", "forest", "winter", "summer", "spring", "north", "south",
    "east",
];

/// The prompt text of a run: `prompt` when given, else about `input_tokens` synthesised
/// tokens, else [`DEFAULT_PROMPT`].
pub fn resolve(prompt: Option<&str>, input_tokens: Option<u32>) -> Result<String> {
    if let Some(p) = prompt {
        return Ok(p.to_string());
    }
    match input_tokens {
        Some(n) if n == 0 || n > MAX_SYNTH_TOKENS => Err(CoreError::InvalidSpec {
            what: "input token count",
            input: n.to_string(),
            reason: format!("must be between 1 and {MAX_SYNTH_TOKENS}"),
        }),
        Some(n) => Ok(synthesize(n)),
        None => Ok(DEFAULT_PROMPT.to_string()),
    }
}

/// About `tokens` tokens of text (see the module docs for the approximation).
pub fn synthesize(tokens: u32) -> String {
    let mut out = String::with_capacity(tokens as usize * 7);
    let mut walk = Walk::new();
    for i in 0..tokens {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(WORDS[walk.next_index()]);
    }
    out
}

/// The pseudo-random walk over [`WORDS`]: a 64-bit LCG (Knuth's MMIX constants),
/// deterministic and dependency-free.
pub(crate) struct Walk(u64);

impl Walk {
    pub(crate) fn new() -> Walk {
        Walk(0x9E37_79B9_7F4A_7C15)
    }

    pub(crate) fn next_index(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 58) as usize
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn synthesised_prompt_has_one_word_per_token() {
        let p = synthesize(1000);
        assert_eq!(p.split(' ').count(), 1000);
        assert_eq!(p, synthesize(1000), "deterministic");
        // Not a short cycle: many distinct consecutive pairs.
        let words: Vec<&str> = p.split(' ').collect();
        let pairs: std::collections::HashSet<_> = words.windows(2).collect();
        assert!(pairs.len() > 500, "{} distinct pairs", pairs.len());
    }

    #[test]
    fn resolve_prefers_text_then_synthesis_then_default() {
        assert_eq!(resolve(Some("hi"), None).unwrap(), "hi");
        assert_eq!(resolve(None, Some(3)).unwrap().split(' ').count(), 3);
        assert_eq!(resolve(None, None).unwrap(), DEFAULT_PROMPT);
        assert!(resolve(None, Some(0)).is_err());
    }
}
