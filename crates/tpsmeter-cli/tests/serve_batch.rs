//! `tpsmeter serve` with continuous batching, end to end on the real model: requests in
//! flight together answer exactly what each answers alone; beyond `--parallel` they queue and
//! say so (`timings.queue_ms`); a client that hangs up mid-stream frees its slot for the next
//! request at once, long before its answer would have ended.
//!
//! Each test runs on both backends: `--backend gpu` (a GPU adapter; lavapipe will do) and
//! `--backend cpu`, whose scheduler is the same and whose model batches on the CPU. Loads
//! `TPSMETER_MODEL`; without it each test fails when `TPSMETER_REQUIRE_ASSETS=1` (CI) and
//! skips otherwise.
#![allow(clippy::unwrap_used)]

mod server_support;

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;
use std::time::Instant;

use serde_json::Value;
use server_support::{assets, serve_model_on};

fn body(prompt: &str, max_tokens: usize, stream: bool) -> String {
    serde_json::json!({
        "model": "local",
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": stream,
    })
    .to_string()
}

fn send(port: u16, body: &str) -> TcpStream {
    server_support::post_chat(port, body)
}

/// A non-streamed chat completion: (text, queue_ms).
fn complete(port: u16, prompt: &str) -> (String, f64) {
    let mut s = send(port, &body(prompt, 24, false));
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, json) = raw.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{raw}");
    let v: Value = serde_json::from_str(json).unwrap();
    let text = v["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let queue = v["timings"]["queue_ms"].as_f64().unwrap();
    (text, queue)
}

const PROMPTS: [&str; 3] = [
    "What is the capital of France?",
    "Write a haiku about autumn leaves.",
    "List three prime numbers.",
];

#[test]
fn concurrent_requests_answer_as_alone_and_queue_beyond_the_slots() {
    concurrent_as_alone(
        "concurrent_requests_answer_as_alone_and_queue_beyond_the_slots",
        "gpu",
    );
}

#[test]
fn cpu_concurrent_requests_answer_as_alone_and_queue_beyond_the_slots() {
    concurrent_as_alone(
        "cpu_concurrent_requests_answer_as_alone_and_queue_beyond_the_slots",
        "cpu",
    );
}

fn concurrent_as_alone(test: &str, backend: &str) {
    let Some([model]) = assets(test, ["TPSMETER_MODEL"]) else {
        return;
    };
    let (_server, port) = serve_model_on(&model, "2", backend);
    let alone: Vec<(String, f64)> = PROMPTS.iter().map(|p| complete(port, p)).collect();
    for (text, queue) in &alone {
        assert!(!text.is_empty());
        assert!(*queue < 1000.0, "a lone request queued {queue} ms");
    }
    let together: Vec<(String, f64)> = std::thread::scope(|s| {
        let handles: Vec<_> = PROMPTS
            .iter()
            .map(|p| s.spawn(move || complete(port, p)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (i, ((a, _), (t, _))) in alone.iter().zip(&together).enumerate() {
        assert_eq!(a, t, "request {i} alone vs with others in flight");
    }
    // Three requests, two slots: one waited for a slot (most of another's answer), and says
    // so; the others waited at most for the step under way when they arrived (a request
    // joins at a step boundary).
    let mut queues: Vec<f64> = together.iter().map(|(_, q)| *q).collect();
    queues.sort_by(f64::total_cmp);
    assert!(
        queues[2] > 50.0 && queues[2] > 2.0 * queues[1],
        "queue_ms {queues:?}"
    );
}

#[test]
fn a_client_that_hangs_up_frees_its_slot_at_once() {
    hang_up_frees_the_slot("a_client_that_hangs_up_frees_its_slot_at_once", "gpu");
}

#[test]
fn cpu_a_client_that_hangs_up_frees_its_slot_at_once() {
    hang_up_frees_the_slot("cpu_a_client_that_hangs_up_frees_its_slot_at_once", "cpu");
}

fn hang_up_frees_the_slot(test: &str, backend: &str) {
    let Some([model]) = assets(test, ["TPSMETER_MODEL"]) else {
        return;
    };
    let (_server, port) = serve_model_on(&model, "1", backend);
    // A long streamed answer on the only slot; read until decode is under way (a few pieces
    // of text: on a fresh machine the first decode step compiles its pipelines, seconds on
    // lavapipe, and that step must finish before any slot can change hands), then hang up.
    let s = send(
        port,
        &body("Tell me a very long story about dragons.", 1000, true),
    );
    let mut r = BufReader::new(s);
    let mut line = String::new();
    let mut pieces = 0;
    while pieces < 4 {
        line.clear();
        assert!(r.read_line(&mut line).unwrap() > 0, "stream ended early");
        if line.starts_with("data: {") && line.contains("\"content\"") {
            pieces += 1;
        }
    }
    drop(r);
    // The next request gets the slot within a step or so: its wait is far below the ~1000
    // tokens the first answer had left (tens of seconds on lavapipe).
    let t = Instant::now();
    let (text, queue) = complete(port, PROMPTS[0]);
    assert!(!text.is_empty());
    assert!(
        queue < 2000.0,
        "waited {queue} ms for the slot ({} ms in all)",
        t.elapsed().as_millis()
    );
}
