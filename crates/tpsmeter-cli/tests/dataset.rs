//! Datasets (issue 27): `tpsmeter bench --dataset F` drives a run from a file of
//! conversations, read off the wire by a server that keeps every request body.
//!
//! The target: a dataset of 1,000 ShareGPT-style conversations drives a run, the report
//! names the dataset and its SHA-256, and the same seed sends the same requests (another
//! seed, other entries).
#![allow(clippy::unwrap_used)]

mod capture;
mod common;

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use capture::Capture;
use common::{argv, bench, parse};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;
use tpsmeter_core::dataset::DatasetFormat;
use tpsmeter_core::report::PromptSource;

const CONVERSATIONS: usize = 1000;

fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tpsmeter-dataset-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// What conversation `i` must send: its system text and first human turn, and the output
/// cap its first gpt answer stands for (⌈characters / 4⌉).
struct Expected {
    system: Option<String>,
    human: String,
    max_tokens: u64,
}

/// 1,000 ShareGPT-style conversations, the same every time: answers of 8 to 1,200
/// characters, one in ten with a system turn, one in three with more turns after the
/// first exchange, one in seven opening with a gpt turn (ShareGPT has such), and some
/// non-ASCII text. Pretty-printed, one turn per line or so, as ShareGPT's file is.
fn sharegpt() -> (Vec<u8>, Vec<Expected>) {
    let mut entries = Vec::new();
    let mut expected = Vec::new();
    for i in 0..CONVERSATIONS {
        let human = format!(
            "Conversation {i}: {} — ¿qué tal? {}",
            tpsmeter_core::prompt::synthesize(5 + (i % 40) as u32),
            "ü".repeat(i % 3)
        );
        let answer_chars = 8 + (i * 37) % 1193;
        let answer: String = "abcdefghij".chars().cycle().take(answer_chars).collect();
        let mut turns = Vec::new();
        let system = (i % 10 == 0).then(|| format!("System for {i}."));
        if let Some(s) = &system {
            turns.push(json!({"from": "system", "value": s}));
        }
        if i % 7 == 3 {
            turns.push(json!({"from": "gpt", "value": "Hello! How can I help?"}));
        }
        turns.push(json!({"from": "human", "value": human}));
        turns.push(json!({"from": "gpt", "value": answer}));
        if i % 3 == 1 {
            turns.push(json!({"from": "human", "value": "And then?"}));
            turns.push(json!({"from": "gpt", "value": "Then nothing."}));
        }
        entries.push(json!({"id": format!("conv-{i}"), "conversations": turns}));
        expected.push(Expected {
            system,
            human,
            max_tokens: answer_chars.div_ceil(4) as u64,
        });
    }
    let text = serde_json::to_string_pretty(&Value::Array(entries)).unwrap();
    (text.into_bytes(), expected)
}

/// Every body `capture` kept, in order of arrival.
fn bodies(capture: &Capture) -> Vec<String> {
    capture.bodies.lock().unwrap().clone()
}

/// One request as the server got it: its mark's index, the conversation it sent, and the
/// body.
struct Sent {
    index: u64,
    conversation: usize,
    body: String,
}

/// Reads every body `capture` kept, checking each against the conversation it sent.
fn sent(capture: &Capture, run_id: &str, expected: &[Expected]) -> Vec<Sent> {
    bodies(capture)
        .into_iter()
        .map(|body| {
            let v: Value = serde_json::from_str(&body).unwrap();
            let messages = v["messages"].as_array().unwrap();
            let user = messages.iter().find(|m| m["role"] == "user").unwrap();
            let text = user["content"].as_str().unwrap();
            let rest = text
                .strip_prefix(&format!("[run {run_id} #"))
                .unwrap_or_else(|| panic!("marked: {text}"));
            let (index, human) = rest.split_once("] ").unwrap();
            let conversation: usize = human
                .strip_prefix("Conversation ")
                .and_then(|h| h.split(':').next())
                .unwrap()
                .parse()
                .unwrap();
            let e = &expected[conversation];
            assert_eq!(human, e.human, "the first human turn, whole");
            assert_eq!(v["max_tokens"].as_u64(), Some(e.max_tokens), "{body}");
            let system = messages
                .iter()
                .find(|m| m["role"] == "system")
                .map(|m| m["content"].as_str().unwrap().to_owned());
            assert_eq!(system, e.system, "the entry's system turn, or none");
            assert_eq!(messages.len(), 1 + usize::from(e.system.is_some()));
            Sent {
                index: index.parse().unwrap(),
                conversation,
                body,
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharegpt_dataset_of_1000_conversations_drives_a_run() {
    let (bytes, expected) = sharegpt();
    let path = temp_file("sharegpt.json", &bytes);
    let shown = path.display().to_string();
    let digest: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let run = |seed: &'static str| {
        let shown = shown.clone();
        async move {
            let capture = Capture::start();
            let args = argv(
                "openai-chat",
                &capture.url,
                &[
                    "--dataset",
                    &shown,
                    "--seed",
                    seed,
                    "--concurrency",
                    "4",
                    "--requests",
                    "120",
                    "--warmup",
                    "2",
                    "--max-tokens",
                    "5000",
                ],
            );
            let report = bench(&args).await.report;
            (capture, report)
        }
    };

    let (capture, report) = run("7").await;
    match &report.config.prompt {
        PromptSource::Dataset {
            name,
            sha256,
            bytes: size,
            format,
            entries,
            skipped,
            tokenizer,
        } => {
            assert_eq!(
                tokenizer, &None,
                "no tokenizer: the answers' lengths are estimates"
            );
            assert_eq!(name, &shown);
            assert_eq!(sha256, &digest, "the SHA-256 of the file's bytes");
            assert_eq!(*size, bytes.len() as u64);
            assert_eq!(*format, DatasetFormat::Json);
            assert_eq!((*entries, *skipped), (CONVERSATIONS as u64, 0));
        }
        other => panic!("{other:?}"),
    }
    let run_id = report.config.prompt_run_id.clone().unwrap();
    let first = sent(&capture, &run_id, &expected);
    assert_eq!(first.len(), 122, "120 measured and 2 warm-ups");
    let indices: BTreeSet<u64> = first.iter().map(|s| s.index).collect();
    assert_eq!(indices, (0..122).collect(), "one mark per request");
    // Without replacement: 122 requests, 122 different conversations, from all over the
    // file rather than its first lines.
    let conversations: BTreeSet<usize> = first.iter().map(|s| s.conversation).collect();
    assert_eq!(conversations.len(), 122);
    assert!(conversations.iter().any(|&c| c >= 500) && conversations.iter().any(|&c| c < 500));

    // The same seed: the same requests, byte for byte (in whatever order they arrived).
    let (again, report_again) = run("7").await;
    assert_eq!(report_again.config.prompt, report.config.prompt);
    let set = |s: &[Sent]| -> BTreeSet<String> { s.iter().map(|s| s.body.clone()).collect() };
    let second = sent(&again, &run_id, &expected);
    assert_eq!(set(&second), set(&first));

    // Another seed: other conversations for the same request indices.
    let (other, report_other) = run("8").await;
    let other_id = report_other.config.prompt_run_id.clone().unwrap();
    let third = sent(&other, &other_id, &expected);
    let by_index = |s: &[Sent]| -> HashMap<u64, usize> {
        s.iter().map(|s| (s.index, s.conversation)).collect()
    };
    let (a, b) = (by_index(&first), by_index(&third));
    let same = (0..122).filter(|i| a[i] == b[i]).count();
    assert!(
        same < 10,
        "{same} of 122 requests sent the same conversation"
    );
}

#[tokio::test]
async fn a_malformed_entry_stops_the_run_before_any_request_and_names_its_line() {
    let capture = Capture::start();
    let path = temp_file(
        "bad.jsonl",
        b"{\"prompt\": \"fine\"}\n{\"messages\": [{\"role\": \"user\", \"content\": 42}]}\n",
    );
    let shown = path.display().to_string();
    let args = parse(&argv("openai-chat", &capture.url, &["--dataset", &shown]));
    let e = tpsmeter_cli::bench::run_bench(&args, CancellationToken::new())
        .await
        .unwrap_err();
    let text = format!("{e:#}");
    assert!(
        text.contains(&format!("--dataset {shown}"))
            && text.contains("line 2, field `messages[0].content`: must be a string"),
        "{text}"
    );
    assert!(bodies(&capture).is_empty(), "nothing sent");
}

#[tokio::test]
async fn jsonl_entries_send_their_conversation_system_and_output_length() {
    let capture = Capture::start();
    let path = temp_file(
        "chat.jsonl",
        concat!(
            "{\"messages\": [{\"role\": \"system\", \"content\": \"Be terse.\"}, ",
            "{\"role\": \"user\", \"content\": \"Hi\"}, {\"role\": \"assistant\", \"content\": \"Hello\"}, ",
            "{\"role\": \"user\", \"content\": \"Bye\"}], \"max_tokens\": 3}\n"
        )
        .as_bytes(),
    );
    let shown = path.display().to_string();
    let args = argv(
        "openai-chat",
        &capture.url,
        &[
            "--dataset",
            &shown,
            "--requests",
            "2",
            "--system",
            "ignored",
            "--cache-bust",
            "off",
        ],
    );
    let report = bench(&args).await.report;
    assert!(matches!(report.config.prompt, PromptSource::Dataset { .. }));
    let bodies = bodies(&capture);
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0], bodies[1], "one entry, no marks");
    let v: Value = serde_json::from_str(&bodies[0]).unwrap();
    assert_eq!(v["max_tokens"], 3);
    assert_eq!(
        v["messages"],
        json!([
            {"role": "system", "content": "Be terse."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello"},
            {"role": "user", "content": "Bye"}
        ]),
        "the entry's system text over --system"
    );
}
