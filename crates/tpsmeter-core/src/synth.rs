//! Synthetic prompt text of an exact token length, when a tokenizer counts
//! ([`TokenCounter`]), and request lengths drawn around a mean (`--input-tokens 1000:100`).
//!
//! The text is the same pseudo-random walk over common English words as
//! [`prompt::synthesize`], keeping only the words the tokenizer makes exactly one token of
//! (with their leading space; the first word without one). Tokenizers split text at spaces
//! before merging (byte-level BPE's pre-tokenizer, SentencePiece's whitespace split), so a
//! text of N such words is N tokens, and a request's text is cut to its length by words: a
//! prefix of one long text, so every request's cut costs no tokenizer call. What does cost
//! one per request is the mark (`[run 3f9a1c2b #17]`, see the `prompts` module): its
//! digits tokenise differently from one vocabulary to the next, so it is counted, and the
//! words after it fill the rest.
//!
//! Measured exact on SmolLM2's and Gemma 3's tokenizers (see the CLI's `tokenizer` tests);
//! a tokenizer that merged across spaces would be off by the merges, which the report's
//! `input_tokens` from the server's usage would show.

use crate::error::{CoreError, Result};
use crate::prompt::{self, WORDS};
use crate::seed::mix;
use crate::tokens::TokenCounter;

/// The word before a text whose tokens are counted in context (see
/// [`Vocabulary::counted`], [`spaced_cost`]).
pub const ANCHOR: &str = "the";

/// Tokens `text` adds after a space in running text: its count after [`ANCHOR`], less the
/// anchor's.
pub fn spaced_cost(counter: &dyn TokenCounter, text: &str) -> Result<u32> {
    let with = counter.count(&format!("{ANCHOR} {text}"))?;
    Ok(with.saturating_sub(counter.count(ANCHOR)?))
}

/// Fewest one-token words a tokenizer must leave for exact synthesis: with fewer the walk
/// would repeat in short cycles, which tokenizers could merge.
pub const MIN_WORDS: usize = 16;

/// The words a tokenizer makes one token each.
#[derive(Debug, Clone, PartialEq)]
pub struct Vocabulary {
    /// One token with a leading space.
    spaced: [bool; WORDS.len()],
    /// One token at the start of a text.
    first: [bool; WORDS.len()],
}

impl Vocabulary {
    /// Every word, assumed one token (the estimate without a tokenizer).
    pub fn estimate() -> Vocabulary {
        Vocabulary {
            spaced: [true; WORDS.len()],
            first: [true; WORDS.len()],
        }
    }

    /// The words `counter` makes one token of.
    pub fn counted(counter: &dyn TokenCounter) -> Result<Vocabulary> {
        let mut v = Vocabulary {
            spaced: [false; WORDS.len()],
            first: [false; WORDS.len()],
        };
        // A word's cost after a space is measured in context, after an anchor word: counted
        // alone, " house" would get SentencePiece's dummy prefix on top of its own space.
        let anchor = counter.count(ANCHOR)?;
        for (i, w) in WORDS.iter().enumerate() {
            v.spaced[i] = counter.count(&format!("{ANCHOR} {w}"))?.checked_sub(anchor) == Some(1);
            v.first[i] = counter.count(w)? == 1;
        }
        let usable = v.spaced.iter().filter(|&&b| b).count();
        let can_start = v.first.iter().zip(&v.spaced).any(|(&f, &s)| f && s);
        if usable < MIN_WORDS || !can_start {
            return Err(CoreError::InvalidSpec {
                what: "tokenizer",
                input: counter.name().chars().take(80).collect(),
                reason: format!(
                    "makes only {usable} of {} common English words one token each (needs \
                     {MIN_WORDS}): it cannot synthesise prompts of exact lengths",
                    WORDS.len()
                ),
            });
        }
        Ok(v)
    }

    /// `n` words of the walk, one space between them: `n` tokens under the tokenizer this
    /// vocabulary was counted with. The first word is one that is one token at the start of
    /// a text when `at_start`.
    pub fn words(&self, n: u32, at_start: bool) -> Words {
        let mut text = String::with_capacity(n as usize * 7);
        let mut ends = Vec::with_capacity(n as usize);
        let mut walk = prompt::Walk::new();
        while ends.len() < n as usize {
            let i = walk.next_index();
            // The first word may also follow a mark: it must be one token either way.
            let ok = self.spaced[i] && (!ends.is_empty() || !at_start || self.first[i]);
            if !ok {
                continue;
            }
            if !ends.is_empty() {
                text.push(' ');
            }
            text.push_str(WORDS[i]);
            ends.push(text.len());
        }
        Words { text, ends }
    }
}

/// A synthesised text and where each of its words ends.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Words {
    text: String,
    ends: Vec<usize>,
}

impl Words {
    /// The first `n` words (all of them when there are fewer).
    pub fn first(&self, n: u32) -> &str {
        match n as usize {
            0 => "",
            n => &self.text[..self.ends[n.min(self.ends.len()) - 1]],
        }
    }

    pub fn len(&self) -> u32 {
        self.ends.len() as u32
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Words `from..to` (0-based, clipped to the words there are), without the spaces
    /// around them.
    pub fn between(&self, from: u32, to: u32) -> &str {
        let (from, to) = (from as usize, (to as usize).min(self.ends.len()));
        if from >= to {
            return "";
        }
        let start = if from == 0 {
            0
        } else {
            self.ends[from - 1] + 1
        };
        &self.text[start..self.ends[to - 1]]
    }
}

/// How many input tokens each request asks for: a mean, and a standard deviation to draw
/// around it (`--input-tokens 1000:100`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lengths {
    pub mean: u32,
    pub stdev: u32,
}

impl Lengths {
    /// Parses `1000` or `1000:100` (the CLI's spelling).
    pub fn parse(s: &str) -> Result<Lengths> {
        let bad = |reason: &str| CoreError::InvalidSpec {
            what: "input tokens",
            input: s.chars().take(40).collect(),
            reason: reason.into(),
        };
        let (mean, stdev) = match s.split_once(':') {
            Some((m, d)) => (m, Some(d)),
            None => (s, None),
        };
        let mean: u32 = mean
            .trim()
            .parse()
            .map_err(|_| bad("must be a token count, or MEAN:STDEV (1000:100)"))?;
        let stdev: u32 = match stdev {
            Some(d) => d
                .trim()
                .parse()
                .map_err(|_| bad("the standard deviation after ':' must be a token count"))?,
            None => 0,
        };
        Ok(Lengths { mean, stdev })
    }

    /// The longest a request can be: draws are clipped to three deviations each side.
    pub fn max(&self) -> u32 {
        self.mean.saturating_add(self.stdev.saturating_mul(3))
    }

    /// Request `index`'s length, drawn from a normal distribution around the mean (seeded by
    /// `seed` and the index, so the same seed gives the same lengths on any machine),
    /// clipped to mean ± 3 deviations and to at least 1.
    pub fn draw(&self, seed: u64, index: u64) -> u32 {
        if self.stdev == 0 {
            return self.mean;
        }
        // Box–Muller on two uniforms from SplitMix64: no RNG dependency, and the same
        // numbers in wasm and natively (f64 arithmetic is IEEE everywhere).
        let a = mix(seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let b = mix(a);
        let u1 = ((a >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let u2 = (b >> 11) as f64 / (1u64 << 53) as f64;
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        let z = z.clamp(-3.0, 3.0);
        let v = f64::from(self.mean) + z * f64::from(self.stdev);
        (v.round() as i64).clamp(1, i64::from(self.max())) as u32
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::tokens::WordCounter;

    /// Counts words, but says "mountain" and "island" are two tokens.
    struct Picky;
    impl TokenCounter for Picky {
        fn count(&self, text: &str) -> Result<u32> {
            Ok(text
                .split_whitespace()
                .map(|w| {
                    if w == "mountain" || w == "island" {
                        2
                    } else {
                        1
                    }
                })
                .sum())
        }
        fn name(&self) -> &str {
            "picky"
        }
    }

    #[test]
    fn counted_words_leave_out_what_the_tokenizer_splits() {
        let v = Vocabulary::counted(&Picky).unwrap();
        let w = v.words(500, true);
        assert_eq!(Picky.count(w.first(500)).unwrap(), 500);
        assert!(!w.first(500).contains("mountain"));
        assert_eq!(w.first(3).split(' ').count(), 3);
        assert_eq!(
            format!("{} {}", w.first(3), w.between(3, 500)),
            w.first(500)
        );
        assert_eq!(w.between(3, 4), w.first(4).rsplit(' ').next().unwrap());
        assert_eq!(w.between(9, 9), "");
        assert_eq!(
            w.between(499, 900),
            w.first(500).rsplit(' ').next().unwrap()
        );
        // Without a tokenizer the text is the old synthesis, word for word.
        let e = Vocabulary::estimate().words(200, true);
        assert_eq!(e.first(200), prompt::synthesize(200));
        assert_eq!(
            Vocabulary::counted(&WordCounter).unwrap(),
            Vocabulary::estimate()
        );
    }

    #[test]
    fn a_tokenizer_that_splits_everything_is_refused() {
        struct Chars;
        impl TokenCounter for Chars {
            fn count(&self, text: &str) -> Result<u32> {
                Ok(text.trim().chars().count() as u32)
            }
            fn name(&self) -> &str {
                "chars"
            }
        }
        let e = Vocabulary::counted(&Chars).unwrap_err().to_string();
        assert!(e.contains("exact lengths"), "{e}");
    }

    #[test]
    fn lengths_parse_and_draw_around_the_mean() {
        assert_eq!(
            Lengths::parse("1000").unwrap(),
            Lengths {
                mean: 1000,
                stdev: 0
            }
        );
        let l = Lengths::parse("1000:100").unwrap();
        assert_eq!(
            l,
            Lengths {
                mean: 1000,
                stdev: 100
            }
        );
        assert!(Lengths::parse("1000:x").is_err() && Lengths::parse("lots").is_err());
        let draws: Vec<u32> = (0..4000).map(|i| l.draw(7, i)).collect();
        assert_eq!(draws, (0..4000).map(|i| l.draw(7, i)).collect::<Vec<_>>());
        let mean = draws.iter().map(|&d| f64::from(d)).sum::<f64>() / 4000.0;
        let sd = (draws
            .iter()
            .map(|&d| (f64::from(d) - mean).powi(2))
            .sum::<f64>()
            / 4000.0)
            .sqrt();
        assert!((mean - 1000.0).abs() < 10.0, "mean {mean}");
        assert!((sd - 100.0).abs() < 8.0, "sd {sd}");
        assert!(draws.iter().all(|&d| (700..=1300).contains(&d)));
        assert_ne!(l.draw(8, 0), l.draw(7, 0));
        assert_eq!(Lengths { mean: 5, stdev: 0 }.draw(1, 2), 5);
    }
}
