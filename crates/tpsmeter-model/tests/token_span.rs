//! `TokenSpan`: the token count its length bound promises is never above the real one, on
//! every vocabulary we can build from llama.cpp's vocabulary test files and on SmolLM2 and
//! Gemma 3, for their test inputs and for texts made to defeat the bound (the longest
//! token repeated, characters the vocabulary has no token for, control-token text).
//! A bound above the real count would make `tpsmeter serve` refuse a prompt that fits.
#![allow(clippy::unwrap_used)]

mod tokenizer_support;

use std::path::Path;

use tokenizer_support::{asset, llama_cpp_root};
use tpsmeter_model::tokenizer::TokenSpan;
use tpsmeter_model::tokenizer::Tokenizer;

/// Texts that push the bound: the longest pieces repeated, each with and without a space
/// between (which may merge into still longer tokens), runs of every byte below 0x80 one
/// by one (SmolLM2 has no token for some control characters, which then vanish), and
/// characters far from any vocabulary.
fn hostile_texts(tok: &Tokenizer) -> Vec<String> {
    let mut pieces: Vec<(usize, String)> = (0..tok.vocab_size() as u32)
        .filter_map(|id| {
            let b = tok.piece_bytes(id, true).ok().flatten()?;
            Some((b.len(), String::from_utf8(b.to_vec()).ok()?))
        })
        .collect();
    pieces.sort_by_key(|p| std::cmp::Reverse(p.0));
    let mut texts: Vec<String> = Vec::new();
    for (_, p) in pieces.iter().take(8) {
        texts.push(p.repeat(50));
        texts.push(format!("{p} ").repeat(50));
        texts.push(format!("{p}\n").repeat(50));
    }
    for b in 0u8..0x80 {
        texts.push(char::from(b).to_string().repeat(300));
        texts.push(format!("a{}b", char::from(b)).repeat(100));
    }
    texts.push(" ".repeat(5000));
    texts.push("\n".repeat(5000));
    texts.push("\u{10FFFF}\u{E000}\u{1F600}\u{0300}".repeat(200));
    texts.push("<|im_start|><|im_end|><s></s><bos><start_of_turn>".repeat(40));
    texts
}

/// Checks `tok`'s span on `texts`; returns its span (`None`: the vocabulary has no bound).
fn check(name: &str, tok: &Tokenizer, texts: &[String]) -> Option<TokenSpan> {
    let span = TokenSpan::of(tok)?;
    for text in texts {
        let real = tok.encode(text, false).unwrap().len();
        let least = span.least_tokens(text);
        assert!(
            least <= real,
            "{name}: the bound says at least {least} tokens, the text is {real}: {:?}",
            text.chars().take(80).collect::<String>()
        );
    }
    Some(span)
}

fn tokenizer(path: &Path) -> Option<Tokenizer> {
    Tokenizer::from_file_bytes(&std::fs::read(path).unwrap()).ok()
}

#[test]
fn the_length_bound_never_exceeds_the_real_count_on_llama_cpp_vocabularies() {
    let Some(root) = llama_cpp_root() else {
        return;
    };
    let mut checked = Vec::new();
    for entry in std::fs::read_dir(root.join("models")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.starts_with("ggml-vocab-") && name.ends_with(".gguf")) {
            continue;
        }
        // Families the engine does not build (BERT's WordPiece, unknown pre-tokenizers).
        let Some(tok) = tokenizer(&path) else {
            continue;
        };
        let mut texts = hostile_texts(&tok);
        if let Ok(inp) = std::fs::read_to_string(path.with_extension("gguf.inp")) {
            texts.extend(inp.split("\n__ggml_vocab_test__\n").map(str::to_owned));
        }
        let span = check(&name, &tok, &texts);
        checked.push(format!("{name}: {:?}", span.map(|s| s.max_bytes)));
    }
    eprintln!("{}", checked.join("\n"));
    // Not vacuous: the byte-level and SentencePiece families are there, with bounds.
    let bounded = checked.iter().filter(|c| c.contains("Some(")).count();
    assert!(bounded >= 6, "{checked:?}");
}

#[test]
fn the_length_bound_never_exceeds_the_real_count_on_smollm2_and_gemma3() {
    for (var, what, max_bytes) in [
        ("TPSMETER_MODEL", "the SmolLM2 GGUF", 81),
        ("TPSMETER_GEMMA_MODEL", "the Gemma-3-270M GGUF", 48),
    ] {
        let Some(path) = asset(var, what) else {
            continue;
        };
        let tok = tokenizer(&path).unwrap();
        let texts = hostile_texts(&tok);
        let span = check(what, &tok, &texts).unwrap_or_else(|| panic!("{what}: no bound"));
        // The longest entries: SmolLM2's a newline and 80 spaces, Gemma's Tamil words.
        assert_eq!(span.max_bytes, max_bytes, "{what}");
        // A megabyte of text is far past any context either serves.
        assert!(
            span.least_tokens(&"word ".repeat(200_000)) > 12_000,
            "{what}"
        );
    }
}
