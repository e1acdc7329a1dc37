//! `--tokenizer` (issue 27): synthetic prompts of exact token lengths, tokenizers found by
//! file or by Hugging Face model id, answers re-counted when a server sends no usage, and a
//! server's own prompt count agreeing with ours.
//!
//! The real tokenizers (SmolLM2's and Gemma 3's, from their GGUF files) are assets: without
//! them these tests fail when `TPSMETER_REQUIRE_ASSETS=1` (CI) and skip otherwise.
#![allow(clippy::unwrap_used)]

mod capture;
mod common;
mod server_support;

use std::path::Path;
use std::process::{Command, Stdio};

use capture::{ANSWER, Capture};
use common::{argv, bench, measured};
use serde_json::Value;
use server_support::{assets, free_port, start};
use tpsmeter_cli::bench::tokenizer::{self, CliTokenizer};
use tpsmeter_core::tokens::TokenCounter;
use tpsmeter_core::{BenchOptions, PromptPlan, TokenCountSource};

/// Every prompt of a plan with `counter` counts exactly its requested length, for lengths
/// from short to long, with and without a shared prefix, at indices whose marks have 1 to 5
/// digits.
fn assert_exact(counter: &CliTokenizer) {
    // From 40: a request shorter than its mark (12 to 18 tokens) cannot be honoured.
    for (tokens, shared) in [
        (40, None),
        (100, None),
        (1000, Some(200)),
        (3000, Some(1000)),
    ] {
        let options = BenchOptions {
            url: "http://127.0.0.1:1".into(),
            model: "m".into(),
            input_tokens: Some(tokens),
            shared_prefix: shared,
            seed: Some(11),
            ..BenchOptions::default()
        };
        let plan = PromptPlan::new(&options, None, 0, Some(counter)).unwrap();
        for index in [0, 7, 42, 999, 12_345] {
            let prompt = plan.prompt(index, Some(counter)).unwrap();
            let n = counter.count(&prompt).unwrap();
            assert_eq!(
                n,
                tokens,
                "{}: {tokens} tokens asked, shared {shared:?}, request #{index}: {n}",
                counter.name()
            );
        }
    }
}

#[test]
fn smollm2_prompts_are_exactly_the_requested_length() {
    let Some([model]) = assets("tokenizer", ["TPSMETER_MODEL"]) else {
        return;
    };
    assert_exact(&tokenizer::load(model.to_str().unwrap()).unwrap());
}

#[test]
fn gemma3_prompts_are_exactly_the_requested_length() {
    let Some([model]) = assets("tokenizer", ["TPSMETER_GEMMA_MODEL"]) else {
        return;
    };
    assert_exact(&tokenizer::load(model.to_str().unwrap()).unwrap());
}

/// Writes SmolLM2's tokenizer as a `tokenizer.json` where the Hugging Face cache keeps it.
fn hf_cache_with(model: &Path, cache: &Path, id: &str) {
    let bytes = std::fs::read(model).unwrap();
    let tok = tpsmeter_model::tokenizer::Tokenizer::from_file_bytes(&bytes).unwrap();
    let json = tok.inner().to_string(false).unwrap();
    let repo = cache.join(format!("models--{}", id.replace('/', "--")));
    let snapshot = repo.join("snapshots").join("0123abcd");
    std::fs::create_dir_all(&snapshot).unwrap();
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs").join("main"), "0123abcd\n").unwrap();
    std::fs::write(snapshot.join("tokenizer.json"), json).unwrap();
}

#[test]
fn a_model_id_finds_its_tokenizer_json_in_the_hugging_face_cache() {
    let Some([model]) = assets("tokenizer", ["TPSMETER_MODEL"]) else {
        return;
    };
    let cache = std::env::temp_dir().join(format!("tpsmeter-hf-{}", std::process::id()));
    let id = "HuggingFaceTB/SmolLM2-135M-Instruct";
    hf_cache_with(&model, &cache, id);
    let by_id = tokenizer::load_with(id, std::slice::from_ref(&cache)).unwrap();
    let by_gguf = tokenizer::load(model.to_str().unwrap()).unwrap();
    assert_eq!(by_id.name(), id);
    let text = "The lighthouse keeper's logbook, 1887: fog again; 3 ships passed.";
    assert!(by_id.count(text).unwrap() > 10);
    assert_eq!(by_id.count(text).unwrap(), by_gguf.count(text).unwrap());
    assert_exact(&by_id);
    let _ = std::fs::remove_dir_all(&cache);
}

#[tokio::test]
async fn answers_without_usage_are_counted_by_the_tokenizer() {
    let Some([model]) = assets("tokenizer", ["TPSMETER_MODEL"]) else {
        return;
    };
    let capture = Capture::start();
    let model = model.to_str().unwrap();
    let mut args = argv("openai-chat", &capture.url, &["--input-tokens", "50"]);
    args.extend_from_slice(&["--requests", "2", "--tokenizer", model]);
    let report = bench(&args).await.report;
    let counted = tokenizer::load(model).unwrap().count(ANSWER).unwrap();
    assert!(counted > 1, "{ANSWER:?} is several tokens");
    for r in measured(&report) {
        assert_eq!(r.token_source, TokenCountSource::Tokenizer);
        assert_eq!(r.output_tokens, u64::from(counted));
    }
    match &report.config.prompt {
        tpsmeter_core::report::PromptSource::Synthetic { tokenizer, .. } => {
            assert_eq!(tokenizer.as_deref(), Some(model));
        }
        other => panic!("{other:?}"),
    }
    // Without a tokenizer: one chunk, one token, as before.
    let mut args = argv("openai-chat", &capture.url, &["--requests", "1"]);
    args.push("--input-tokens");
    args.push("50");
    let report = bench(&args).await.report;
    assert_eq!(measured(&report)[0].token_source, TokenCountSource::Chunks);
}

#[tokio::test]
async fn a_dataset_answer_is_counted_by_the_tokenizer_for_the_output_cap() {
    let Some([model]) = assets("tokenizer", ["TPSMETER_MODEL"]) else {
        return;
    };
    let model = model.to_str().unwrap();
    // An answer whose count differs from the ⌈characters / 4⌉ estimate.
    let answer = "Paris, the capital of France, on the Seine: 2,165,423 people (2019).";
    let dir = std::env::temp_dir().join(format!("tpsmeter-dataset-tok-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("sharegpt.json");
    let entry = serde_json::json!([{"conversations": [
        {"from": "human", "value": "Where is the Louvre?"},
        {"from": "gpt", "value": answer},
    ]}]);
    std::fs::write(&file, entry.to_string()).unwrap();
    let counted = tokenizer::load(model).unwrap().count(answer).unwrap();
    let estimate = u32::try_from(answer.chars().count().div_ceil(4)).unwrap();
    assert_ne!(counted, estimate, "pick an answer that tells them apart");
    let capture = Capture::start();
    let file_arg = file.to_str().unwrap();
    let cap = |tok: bool| {
        let mut args = argv("openai-chat", &capture.url, &["--dataset", file_arg]);
        args.extend_from_slice(&["--requests", "1"]);
        if tok {
            args.extend_from_slice(&["--tokenizer", model]);
        }
        args
    };
    let with = bench(&cap(true)).await.report;
    let without = bench(&cap(false)).await.report;
    let sent: Vec<Value> = capture.bodies_json();
    assert_eq!(sent[0]["max_tokens"], counted);
    assert_eq!(sent[1]["max_tokens"], estimate);
    let named = |r: &tpsmeter_core::Report| match &r.config.prompt {
        tpsmeter_core::report::PromptSource::Dataset { tokenizer, .. } => tokenizer.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(named(&with).as_deref(), Some(model));
    assert_eq!(named(&without), None);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The server's usage for runs of 40 and 400 input tokens counted by `tokenizer`: each
/// request of a run the same length, whatever its mark's digits, and the two apart by exactly
/// 360, the chat template's tokens cancelling out.
async fn assert_usage_agrees(url: &str, tokenizer: &str) {
    let usage = |tokens: &'static str| async move {
        let mut args = argv("openai-chat", url, &["--input-tokens", tokens]);
        args.extend_from_slice(&["--tokenizer", tokenizer, "--max-tokens", "1"]);
        args.extend_from_slice(&["--requests", "3"]);
        let report = bench(&args).await.report;
        measured(&report)
            .iter()
            .map(|r| r.input_tokens.unwrap())
            .collect::<Vec<_>>()
    };
    let short = usage("40").await;
    let long = usage("400").await;
    assert!(short.iter().all(|&n| n == short[0]), "{short:?}");
    assert!(long.iter().all(|&n| n == long[0]), "{long:?}");
    assert_eq!(long[0] - short[0], 360, "{short:?} {long:?}");
}

/// `tpsmeter serve` counts the prompt with SmolLM2's own tokenizer and chat template.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_usage_agrees_with_smollm2_lengths() {
    let Some([model]) = assets("tokenizer", ["TPSMETER_MODEL"]) else {
        return;
    };
    let (_server, port) = server_support::serve_model(&model, "2");
    let url = format!("http://127.0.0.1:{port}");
    assert_usage_agrees(&url, model.to_str().unwrap()).await;
}

/// llama.cpp's `llama-server` with Gemma 3: an independent tokenizer and template.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llama_server_usage_agrees_with_gemma3_lengths() {
    let Some([bin, model]) = assets(
        "tokenizer",
        ["TPSMETER_LLAMA_SERVER", "TPSMETER_GEMMA_MODEL"],
    ) else {
        return;
    };
    let port = free_port();
    let mut cmd = Command::new(bin);
    cmd.arg("-m")
        .arg(&model)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--parallel", "1", "--ctx-size", "2048"])
        .args(["--threads", "1", "--poll", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // The wait polls with blocking sleeps: off the runtime's threads.
    let _server = tokio::task::spawn_blocking(move || start(&mut cmd, port, "llama-server"))
        .await
        .unwrap();
    let url = format!("http://127.0.0.1:{port}");
    assert_usage_agrees(&url, model.to_str().unwrap()).await;
}

/// `--workload llmperf`: 550±150 input tokens (exact with the tokenizer), a 150-token output
/// cap, recorded in the report; an explicit `--max-tokens` wins over the workload's.
#[tokio::test]
async fn a_named_workload_sets_lengths_and_cap_and_is_recorded() {
    let Some([model]) = assets("tokenizer", ["TPSMETER_MODEL"]) else {
        return;
    };
    let model = model.to_str().unwrap();
    let counter = tokenizer::load(model).unwrap();
    let capture = Capture::start();
    let mut args = argv("openai-chat", &capture.url, &["--workload", "llmperf"]);
    args.extend_from_slice(&["--requests", "24", "--seed", "4", "--tokenizer", model]);
    let report = bench(&args).await.report;
    assert_eq!(
        report.config.workload,
        Some(tpsmeter_core::workload::Workload::Llmperf)
    );
    assert_eq!(report.config.max_tokens, Some(150));
    let bodies = capture.bodies.lock().unwrap().clone();
    let lengths: Vec<u32> = capture
        .prompts()
        .iter()
        .map(|p| counter.count(p).unwrap())
        .collect();
    assert_eq!(lengths.len(), 24);
    assert!(bodies.iter().all(|b| b.contains("\"max_tokens\":150")));
    assert!(
        lengths.iter().all(|n| (100..=1000).contains(n)),
        "{lengths:?}"
    );
    let mean = lengths.iter().sum::<u32>() as f64 / 24.0;
    assert!((400.0..700.0).contains(&mean), "{lengths:?}");
    let distinct: std::collections::HashSet<_> = lengths.iter().collect();
    assert!(distinct.len() > 10, "lengths are drawn: {lengths:?}");

    let mut args = argv("openai-chat", &capture.url, &["--workload", "chat"]);
    args.extend_from_slice(&["--requests", "1", "--max-tokens", "7"]);
    let report = bench(&args).await.report;
    assert_eq!(report.config.max_tokens, Some(7));
    let mut args = argv("openai-chat", &capture.url, &["--workload", "chat"]);
    args.extend_from_slice(&["--input-tokens", "9"]);
    let e = tpsmeter_cli::bench::run_bench(&common::parse(&args), Default::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("workload"), "a workload fixes the input: {e}");
}

/// A `tokenizer.json` of a byte-level BPE over a few letters, pre-tokenized by `pattern`.
fn tokenizer_json_with_split(pattern: &str) -> String {
    serde_json::json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [],
        "normalizer": null,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": false},
        ]},
        "post_processor": null,
        "decoder": null,
        "model": {
            "type": "BPE", "dropout": null, "unk_token": null,
            "continuing_subword_prefix": null, "end_of_word_suffix": null,
            "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
            "vocab": {"a": 0, "b": 1, " ": 2, "ab": 3},
            "merges": [["a", "b"]],
        },
    })
    .to_string()
}

/// Issue 35: a `Split` whose regex backtracks, `(?:(?:.|..){0,16}(?=\x00)|.)`, cost ~4 ms per
/// character counted (a 3,000-character answer took 25 s). It is refused when the file
/// loads, by path and by the binary, naming the pattern and where it is; the same file with
/// a plain pattern loads and counts.
#[test]
fn a_tokenizer_json_with_a_backtracking_pattern_is_refused() {
    let dir = std::env::temp_dir().join(format!("tpsmeter-hostile-tok-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let hostile = dir.join("tokenizer.json");
    std::fs::write(
        &hostile,
        tokenizer_json_with_split(r"(?:(?:.|..){0,16}(?=\x00)|.)"),
    )
    .unwrap();
    let e = format!(
        "{:#}",
        tokenizer::load(hostile.to_str().unwrap()).unwrap_err()
    );
    for part in [
        "refused",
        "look-around",
        "pre_tokenizer.pretokenizers[0].pattern.Regex",
        "(?=\\\\x00)",
        hostile.to_str().unwrap(),
    ] {
        assert!(e.contains(part), "{part:?} in {e}");
    }

    let out = Command::new(env!("CARGO_BIN_EXE_tpsmeter"))
        .args([
            "bench",
            "--api",
            "openai-chat",
            "--url",
            "http://127.0.0.1:9",
        ])
        .args(["--model", "m", "--requests", "1", "--input-tokens", "50"])
        .arg("--tokenizer")
        .arg(&hostile)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("refused") && stderr.contains("look-around"),
        "{stderr}"
    );

    let plain = dir.join("plain.json");
    std::fs::write(&plain, tokenizer_json_with_split(r"\s+|[^\s]+")).unwrap();
    let counter = tokenizer::load(plain.to_str().unwrap()).unwrap();
    assert_eq!(counter.count("ab ab a").unwrap(), 5);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 52: a GGUF whose vocabulary holds 100,000 control tokens took 38 s to load for
/// `bench --tokenizer X.gguf` (every one becomes an added token). It is refused at once, by
/// path, naming the limit; the review's WordPiece `tokenizer.json` likewise, by its type.
#[test]
fn a_gguf_of_100k_control_tokens_and_a_wordpiece_file_are_refused() {
    use tpsmeter_model::gguf::{GgufWriter, MetadataArray, MetadataValue};
    let dir = std::env::temp_dir().join(format!("tpsmeter-hostile-vocab-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut tokens: Vec<String> = (0x21u8..0x7f).map(|b| char::from(b).to_string()).collect();
    let normal = tokens.len();
    tokens.extend((0..100_000).map(|i| format!("<|ctrl_{i}|>")));
    let types: Vec<i32> = (0..tokens.len())
        .map(|i| if i < normal { 1 } else { 3 })
        .collect();
    let mut w = GgufWriter::new();
    w.metadata("tokenizer.ggml.model", MetadataValue::String("gpt2".into()))
        .metadata(
            "tokenizer.ggml.tokens",
            MetadataValue::Array(MetadataArray::String(tokens)),
        )
        .metadata(
            "tokenizer.ggml.token_type",
            MetadataValue::Array(MetadataArray::I32(types)),
        )
        .metadata(
            "tokenizer.ggml.merges",
            MetadataValue::Array(MetadataArray::String(Vec::new())),
        );
    let gguf = dir.join("control.gguf");
    std::fs::write(&gguf, w.to_bytes()).unwrap();
    let e = format!("{:#}", tokenizer::load(gguf.to_str().unwrap()).unwrap_err());
    assert!(
        e.contains("control and user-defined tokens count is 100000, above the limit of 65536"),
        "{e}"
    );
    let wordpiece = dir.join("tokenizer.json");
    std::fs::write(
        &wordpiece,
        serde_json::json!({"version": "1.0", "added_tokens": [], "normalizer": null,
            "pre_tokenizer": null, "post_processor": null, "decoder": null,
            "model": {"type": "WordPiece", "unk_token": "[UNK]",
                      "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
                      "vocab": {"[UNK]": 0, "a": 1, "##a": 2}}})
        .to_string(),
    )
    .unwrap();
    let e = format!(
        "{:#}",
        tokenizer::load(wordpiece.to_str().unwrap()).unwrap_err()
    );
    assert!(e.contains("\"WordPiece\" is not accepted"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
