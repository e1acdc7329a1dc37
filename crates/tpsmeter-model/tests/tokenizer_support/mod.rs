//! Shared by the tokenizer, chat, detok and generate tests: finding assets, loading
//! tokenizers from GGUF files, and a small asset-free byte-level tokenizer.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use tpsmeter_model::gguf::GgufHeader;
use tpsmeter_model::tokenizer::{Tokenizer, TokenizerSpec, VocabKind};

/// The path in env var `var` if it exists. Absent: panics when `TPSMETER_REQUIRE_ASSETS=1`
/// (CI), otherwise prints why the test is skipped and returns `None`.
pub fn asset(var: &str, what: &str) -> Option<PathBuf> {
    let found = std::env::var_os(var)
        .map(PathBuf::from)
        .filter(|p| p.exists());
    if found.is_none() {
        let required = std::env::var("TPSMETER_REQUIRE_ASSETS").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "{what} is required ({var} unset or missing) and TPSMETER_REQUIRE_ASSETS=1"
        );
        eprintln!("skipped: {what} not found ({var} unset or missing)");
    }
    found
}

/// The SmolLM2 GGUF (`TPSMETER_MODEL`).
pub fn model_path() -> Option<PathBuf> {
    asset("TPSMETER_MODEL", "the SmolLM2 GGUF model")
}

/// llama.cpp's source tree: `TPSMETER_LLAMA_SRC` (CI sets it, so these tests run before
/// llama.cpp is built), else found from its `build/bin` directory (`TPSMETER_LLAMA_BIN`).
pub fn llama_cpp_root() -> Option<PathBuf> {
    if let Some(src) = std::env::var_os("TPSMETER_LLAMA_SRC") {
        return asset("TPSMETER_LLAMA_SRC", "llama.cpp's source tree")
            .filter(|root| root.join("models").is_dir())
            .or_else(|| {
                asset(
                    "TPSMETER_LLAMA_SRC_MISSING",
                    &format!("llama.cpp's models/ in {}", PathBuf::from(src).display()),
                )
            });
    }
    let bin = asset("TPSMETER_LLAMA_BIN", "llama.cpp's bin directory")?;
    let root = bin.join("../..");
    if root.join("models").is_dir() {
        Some(root)
    } else {
        asset(
            "TPSMETER_LLAMA_SRC_MISSING",
            "llama.cpp's source tree (models/) beside its build",
        )
    }
}

/// A llama.cpp binary (`llama-tokenize`, ...) from `TPSMETER_LLAMA_BIN`.
pub fn llama_bin(name: &str) -> Option<PathBuf> {
    let bin = asset("TPSMETER_LLAMA_BIN", "llama.cpp's bin directory")?;
    let path = bin.join(name);
    if path.is_file() {
        Some(path)
    } else {
        asset("TPSMETER_LLAMA_BIN_MISSING", name)
    }
}

/// Reads a GGUF file's tokenizer description.
pub fn spec_from_gguf(path: &Path) -> TokenizerSpec {
    let bytes = std::fs::read(path).unwrap();
    let header = GgufHeader::parse(&bytes).unwrap();
    TokenizerSpec::from_gguf(&header.metadata).unwrap()
}

pub fn tokenizer_from_gguf(path: &Path) -> Tokenizer {
    Tokenizer::from_spec(&spec_from_gguf(path)).unwrap()
}

/// GPT-2's byte-to-character table, written out independently of the crate's.
fn gpt2_char(b: u8) -> char {
    let printable = |x: u8| matches!(x, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    if printable(b) {
        char::from(b)
    } else {
        let rank = (0..b).filter(|&x| !printable(x)).count() as u32;
        char::from_u32(256 + rank).unwrap()
    }
}

/// An asset-free byte-level tokenizer: ids 0..=255 are the single bytes, then a few merged
/// pieces (whole and partial UTF-8 characters), then the control tokens `<|im_start|>` (id
/// 264) and `<|im_end|>` (id 265, EOS).
pub fn tiny_byte_level() -> Tokenizer {
    let mut tokens: Vec<String> = (0..=255u8).map(|b| gpt2_char(b).to_string()).collect();
    let mut merges = Vec::new();
    let mut add = |left: &[u8], right: &[u8], tokens: &mut Vec<String>| {
        let l: String = left.iter().map(|&b| gpt2_char(b)).collect();
        let r: String = right.iter().map(|&b| gpt2_char(b)).collect();
        merges.push(format!("{l} {r}"));
        tokens.push(format!("{l}{r}"));
    };
    add(b"h", b"e", &mut tokens); // 256 "he"
    add(b"he", b"l", &mut tokens); // 257 "hel"
    add(b" ", b"w", &mut tokens); // 258 " w"
    add(&[0xE4], &[0xB8], &mut tokens); // 259: first two bytes of 中 (E4 B8 AD)
    add(&[0xF0], &[0x9F], &mut tokens); // 260: first two bytes of most emoji
    add(b"S", b"T", &mut tokens); // 261 "ST"
    add(b"ST", b"O", &mut tokens); // 262 "STO"
    add(b"STO", b"P", &mut tokens); // 263 "STOP"
    tokens.push("<|im_start|>".to_owned()); // 264
    tokens.push("<|im_end|>".to_owned()); // 265
    let mut types = vec![1; tokens.len()];
    types[264] = 3;
    types[265] = 3;
    let mut spec = TokenizerSpec::new(VocabKind::Gpt2, tokens);
    spec.pre = "gpt-2".to_owned();
    spec.merges = merges;
    spec.token_types = Some(types);
    spec.bos = Some(264);
    spec.eos = Some(265);
    spec.add_bos = Some(false);
    Tokenizer::from_spec(&spec).unwrap()
}
