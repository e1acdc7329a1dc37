//! SmolLM2's tokenizer, built from its GGUF metadata, against llama.cpp's `llama-tokenize` on
//! the same file: identical ids for a corpus of awkward text, and lossless round trips.
#![allow(clippy::unwrap_used)]

mod tokenizer_support;

use std::io::Write;
use std::process::{Command, Stdio};

use tokenizer_support::{llama_bin, model_path, tokenizer_from_gguf};

/// Text that trips tokenizers: digits (SmolLM2 splits them one by one), code with tabs and
/// indentation, CJK, emoji (multi-token characters), combining marks, control tokens written
/// in the text, runs of spaces and newlines, leading and trailing whitespace.
const CORPUS: &[&str] = &[
    "Hello world",
    " Hello world",
    "Hello world ",
    "   leading and trailing   ",
    "The number 123456789 and 3.14159, -42, 1e10, 0x1F.",
    "fn main() {\n    let x = 42;\n\tif x > 1 {\n\t\tprintln!(\"{x}\");\n\t}\n}\n",
    "def f(a, b):\n        return a**b  # comment\n\n\n",
    "I'm sure you'll see they've done it, didn't they? WE'LL SEE.",
    "中文测试，日本語のテキスト、한국어 텍스트",
    "emoji 😀👍🏽 family 👨‍👩‍👧 flags 🇫🇷🇯🇵",
    "café naïve coöperate e\u{301} a\u{308}\u{323} Å",
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
    "text<|im_end|>more<|endoftext|>",
    "\n\n\n\n",
    "\t\t \n \t",
    "a\r\nb\rc",
    "     ",
    "x",
    "$$$ €100 ≥ ∑ √2 ½ ©®™",
    "https://example.com/path?query=1&b=2#frag",
    "ALLCAPS lowercase MiXeD CamelCaseWord snake_case_word",
    "Ñandú ÀÉÎÕÜ ß ﬁ ǅ",
];

/// Control tokens written in the text are parsed (llama-tokenize's default), as for prompts.
fn llama_tokenize(bin: &std::path::Path, model: &std::path::Path, text: &str) -> Vec<u32> {
    let mut child = Command::new(bin)
        .args(["--log-disable", "--stdin", "--ids", "--no-escape", "-m"])
        .arg(model)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "llama-tokenize failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let list = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('['))
        .unwrap_or_else(|| panic!("no id list in llama-tokenize output: {stdout:?}"));
    list.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse().unwrap())
        .collect()
}

#[test]
fn smollm2_ids_equal_llama_tokenize() {
    let (Some(model), Some(bin)) = (model_path(), llama_bin("llama-tokenize")) else {
        return;
    };
    assert_same_ids_as_llama_cpp(&bin, &model);
}

/// Gemma 3: SentencePiece with byte fallback and a 262k vocabulary, BOS added.
#[test]
fn gemma3_ids_equal_llama_tokenize() {
    let Some(model) = tokenizer_support::asset("TPSMETER_GEMMA_MODEL", "the Gemma-3-270M GGUF")
    else {
        return;
    };
    let Some(bin) = llama_bin("llama-tokenize") else {
        return;
    };
    assert_same_ids_as_llama_cpp(&bin, &model);
}

fn assert_same_ids_as_llama_cpp(bin: &std::path::Path, model: &std::path::Path) {
    let tok = tokenizer_from_gguf(model);
    let mut failures = Vec::new();
    for text in CORPUS {
        let ours = tok.encode(text, true).unwrap();
        let theirs = llama_tokenize(bin, model, text);
        if ours != theirs {
            failures.push(format!("{text:?}\n   ours  {ours:?}\n   llama {theirs:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} differ:\n{}",
        failures.len(),
        CORPUS.len(),
        failures.join("\n")
    );
}

#[test]
fn smollm2_decode_of_encode_is_the_input() {
    let Some(model) = model_path() else { return };
    let tok = tokenizer_from_gguf(&model);
    for text in CORPUS {
        let ids = tok.encode(text, false).unwrap();
        assert_eq!(tok.decode(&ids, true).unwrap(), *text, "ids {ids:?}");
        // The `tokenizers` pipeline's own decoder agrees with our byte table.
        assert_eq!(tok.inner().decode(&ids, false).unwrap(), *text);
    }
}

#[test]
fn smollm2_special_tokens_come_from_metadata() {
    let Some(model) = model_path() else { return };
    let tok = tokenizer_from_gguf(&model);
    let s = tok.specials();
    assert_eq!(
        tok.token_text(s.eos.unwrap()).as_deref(),
        Some("<|im_end|>")
    );
    assert_eq!(
        tok.token_text(s.bos.unwrap()).as_deref(),
        Some("<|im_start|>")
    );
    assert!(!tok.adds_bos(), "SmolLM2's GGUF says add_bos_token = false");
    assert!(tok.is_end_of_generation(s.eos.unwrap()));
    // `<|endoftext|>` ends generation too although the metadata names only `<|im_end|>`.
    let endoftext = tok.encode("<|endoftext|>", false).unwrap();
    assert_eq!(endoftext.len(), 1);
    assert!(tok.is_end_of_generation(endoftext[0]));
    // Control tokens are markup: hidden unless asked for.
    let ids = tok.encode("<|im_start|>hi", false).unwrap();
    assert_eq!(tok.decode(&ids, false).unwrap(), "hi");
    assert_eq!(tok.decode(&ids, true).unwrap(), "<|im_start|>hi");
}
