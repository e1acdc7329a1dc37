//! The regexes real tokenizers split and normalize with, accepted in a `tokenizer.json` as
//! they are although they use look-ahead (see [`super::vet`]).
//!
//! Collected from the models' own `tokenizer.json` files and from llama.cpp's
//! `llama-vocab.cpp` (which keeps each model family's regex, often beside "original regex
//! from tokenizer.json"), in both spellings where llama.cpp rewrote the case-insensitive
//! group: a `tokenizer.json` that this crate writes from a GGUF ([`super::pre`]) carries
//! llama.cpp's. The match is on the exact text: one character more and the pattern is
//! judged as unknown.
//!
//! Each runs at ~0.5-2 µs per byte on this engine, whatever the text (measured on runs of
//! digits, spaces, line breaks, capitals, marks, punctuation and CJK). Left out on purpose,
//! as quadratic in the length of a run on the backtracking engine: Jais 2's cascade of
//! `\s{512}(?!\S)|\s{256}(?!\S)|…` (each 512 spaces rescan the rest of the run: 14 µs per
//! byte on 256 KiB of spaces), and the digit-grouping look-aheads of Cohere's Aya and of
//! SuperBPE (`\d{1,3}(?=(?:\d{3})*\b)`, `(?=(\d{3})+(?!\d))`), which rescan the rest of a
//! run of digits from every position.

/// GPT-2's, as Hugging Face's `ByteLevel` pre-tokenizer has it built in; also written out
/// as a `Split` by some models (GPT-J, OLMo, Granite).
const GPT2: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

/// GPT-2's without the final `\s+`, as llama.cpp (and [`super::pre`]) apply it.
const GPT2_LLAMA_CPP: &str =
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)";

/// OpenAI's cl100k: Llama 3 and 3.x, Phi-4, GLM-4, DBRX, SmolLM3.
const LLAMA3: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// [`LLAMA3`] with the case-insensitive group written out, as llama.cpp has it.
const LLAMA3_LLAMA_CPP: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Qwen2 to Qwen3, Grok-2, Hunyuan: [`LLAMA3`] with single digits.
const QWEN2: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// [`QWEN2`] as llama.cpp has it.
const QWEN2_LLAMA_CPP: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Qwen3.5: [`QWEN2`] with combining marks kept in words.
const QWEN35: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// MiniCPM 5: [`LLAMA3`] with runs of digits.
const MINICPM5: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// OpenAI's o200k: GPT-4o, gpt-oss, Llama 4, MiniMax-M2.
const O200K: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Mistral's Tekken (Mistral Nemo, Pixtral, Ministral).
const TEKKEN: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// DeepSeek V3 and R1 (the third of their splits; the file has a real carriage return and
/// line feed in the first class, not `\r\n` escapes).
const DEEPSEEK3: &str = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+";

/// ByteDance's Seed-Coder (real carriage return and line feed, as in its file).
const SEED_CODER: &str = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\r\n]+|\\s*[\r\n]+|\\s+(?!\\S)|\\s+";

/// EXAONE 4.5 MoE.
const EXAONE_MOE: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+";

/// Ling / Bailing MoE (possessive quantifiers).
const BAILING: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+";

/// Each known pattern with the models that use it.
pub const KNOWN_PATTERNS: &[(&str, &str)] = &[
    ("GPT-2 (ByteLevel's built-in regex)", GPT2),
    ("GPT-2 as llama.cpp applies it", GPT2_LLAMA_CPP),
    ("Llama 3 / cl100k", LLAMA3),
    ("Llama 3 as llama.cpp applies it", LLAMA3_LLAMA_CPP),
    ("Qwen2", QWEN2),
    ("Qwen2 as llama.cpp applies it", QWEN2_LLAMA_CPP),
    ("Qwen3.5", QWEN35),
    ("MiniCPM 5", MINICPM5),
    ("GPT-4o / o200k, Llama 4", O200K),
    ("Mistral Tekken", TEKKEN),
    ("DeepSeek V3", DEEPSEEK3),
    ("Seed-Coder", SEED_CODER),
    ("EXAONE MoE", EXAONE_MOE),
    ("Bailing MoE", BAILING),
];

/// Whether `pattern` is exactly one of [`KNOWN_PATTERNS`].
pub fn is_known(pattern: &str) -> bool {
    KNOWN_PATTERNS.iter().any(|(_, p)| *p == pattern)
}
