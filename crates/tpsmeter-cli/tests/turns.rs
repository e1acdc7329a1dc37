//! Multi-turn runs (`--turns`, issue 27): what each turn sends, read off the wire, and how
//! `tpsmeter serve`'s prompt cache meets a growing conversation. The serve test loads
//! `TPSMETER_MODEL` with `--backend auto` (the CPU where lavapipe is all); without the model
//! it fails when `TPSMETER_REQUIRE_ASSETS=1` (CI) and skips otherwise.
#![allow(clippy::unwrap_used)]

mod capture;
mod common;
mod server_support;

use capture::{ANSWER, Capture};
use common::{argv, bench, measured};
use serde_json::Value;
use server_support::assets;

#[tokio::test]
async fn each_turn_sends_the_conversation_so_far_with_the_real_answers() {
    let capture = Capture::start();
    let mut args = argv("openai-chat", &capture.url, &["--turns", "3"]);
    args.extend_from_slice(&["--requests", "6", "--concurrency", "1", "--seed", "2"]);
    let report = bench(&args).await.report;
    let bodies: Vec<Value> = capture.bodies_json();
    let turns: Vec<u32> = measured(&report).iter().map(|r| r.turn.unwrap()).collect();
    assert_eq!(turns, vec![1, 2, 3, 1, 2, 3]);
    let messages = |i: usize| bodies[i]["messages"].as_array().unwrap().clone();
    assert_eq!(messages(0).len(), 1);
    assert_eq!(messages(1).len(), 3);
    assert_eq!(messages(2).len(), 5);
    assert_eq!(messages(1)[1]["role"], "assistant");
    assert_eq!(
        messages(1)[1]["content"],
        ANSWER,
        "the answer the server gave"
    );
    // Turn 2 starts with turn 1's whole request: a prefix a cache can reuse.
    assert_eq!(messages(1)[0], messages(0)[0]);
    assert_eq!(messages(2)[..3], messages(1)[..]);
    // A new conversation, a new mark.
    assert_ne!(messages(3)[0], messages(0)[0]);
    let conversations: Vec<u64> = measured(&report)
        .iter()
        .map(|r| r.conversation.unwrap())
        .collect();
    assert_eq!(conversations, vec![0, 0, 0, 3, 3, 3]);
    assert_eq!(report.config.turns, Some(3));
    assert_eq!(report.turns.len(), 3);
    assert!(report.turns.iter().all(|t| t.requests == 2 && t.ok == 2));
    assert!(report.turns.iter().all(|t| t.ttft_ms_p50.is_some()));

    let mut args = argv("openai-chat", &capture.url, &["--turns", "2"]);
    args.extend_from_slice(&["--rate", "5"]);
    let e = tpsmeter_cli::bench::run_bench(&common::parse(&args), Default::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("closed-loop"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_serve_later_turns_reuse_the_cached_conversation() {
    let Some([model]) = assets("turns", ["TPSMETER_MODEL"]) else {
        return;
    };
    let (_server, port) = server_support::serve_model(&model, "1");
    let url = format!("http://127.0.0.1:{port}");
    let mut args = argv(
        "openai-chat",
        &url,
        &["--turns", "4", "--input-tokens", "64"],
    );
    args.extend_from_slice(&[
        "--requests",
        "4",
        "--max-tokens",
        "16",
        "--concurrency",
        "1",
    ]);
    let report = bench(&args).await.report;
    let records = measured(&report);
    assert_eq!(records.len(), 4);
    for r in &records {
        assert!(r.ok(), "{:?}", r.error);
        let (input, cached) = (r.input_tokens.unwrap(), r.cached_input_tokens.unwrap());
        match r.turn.unwrap() {
            // A fresh conversation: at most the chat template's preamble is cached.
            1 => assert!(cached <= 32, "turn 1: {cached} of {input} cached"),
            // The conversation so far is cached; only the new turn is evaluated.
            t => assert!(
                cached > 64 && cached < input,
                "turn {t}: {cached} of {input} cached"
            ),
        }
    }
    let inputs: Vec<u64> = records.iter().map(|r| r.input_tokens.unwrap()).collect();
    assert!(inputs.windows(2).all(|w| w[1] > w[0]), "{inputs:?}");
    assert_eq!(report.turns.len(), 4);
}

/// Issue 35: with `--turns`, a dataset entry's `system` message and `max_tokens` were dropped
/// from every turn, the first included (no system text, the run's cap: 256 where the entry
/// said 33), where a single-turn run sends them with every request.
#[tokio::test]
async fn every_turn_sends_the_dataset_entrys_system_text_and_output_cap() {
    let dir = std::env::temp_dir().join(format!("tpsmeter-turns-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("entry.jsonl");
    std::fs::write(
        &file,
        "{\"prompt\": \"Tell me about lighthouses.\", \"system\": \"Answer like a sailor.\", \
         \"max_tokens\": 33}\n",
    )
    .unwrap();
    let capture = Capture::start();
    let file_arg = file.to_str().unwrap();
    let mut args = argv("openai-chat", &capture.url, &["--turns", "3"]);
    args.extend_from_slice(&["--dataset", file_arg, "--requests", "3"]);
    args.extend_from_slice(&["--concurrency", "1", "--seed", "5"]);
    let report = bench(&args).await.report;
    let turns: Vec<u32> = measured(&report).iter().map(|r| r.turn.unwrap()).collect();
    assert_eq!(turns, vec![1, 2, 3]);
    for (i, body) in capture.bodies_json().iter().enumerate() {
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(body["max_tokens"], 33, "turn {}: {body}", i + 1);
        assert_eq!(messages[0]["role"], "system", "turn {}: {body}", i + 1);
        assert_eq!(messages[0]["content"], "Answer like a sailor.");
        assert_eq!(messages.len(), 2 + 2 * i, "system, then the turns so far");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
