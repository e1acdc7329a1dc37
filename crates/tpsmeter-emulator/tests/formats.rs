//! Every API's stream, read off the wire with a raw client: event sequence, token texts,
//! usage counts, end markers, and the send timestamps against the schedule. The Vercel UI
//! stream is also read back with tpsmeter-core's parser.

#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{post, sse_events};
use tpsmeter_core::{Api, CoreError, FinishReason, StreamEvent, StreamParser, Usage};
use tpsmeter_emulator::wire::token_text;
use tpsmeter_emulator::{Emulator, EmulatorConfig, Schedule, clock};

const TOKENS: u32 = 6;

async fn emulator(tokens_per_chunk: u32) -> Emulator {
    Emulator::start(EmulatorConfig {
        schedule: Schedule {
            ttft: Duration::from_millis(30),
            itl: Duration::from_millis(5),
            output_tokens: TOKENS,
        },
        tokens_per_chunk,
        record: true,
        ..EmulatorConfig::default()
    })
    .await
    .unwrap()
}

fn expected_text(n: u32) -> String {
    (0..n).map(token_text).collect()
}

fn json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("{e}: {s}"))
}

#[tokio::test]
async fn openai_chat_sends_role_chunk_content_usage_and_done() {
    let emu = emulator(1).await;
    let r = post(
        &emu.base_url(),
        "/v1/chat/completions",
        r#"{"model":"m","stream":true,"stream_options":{"include_usage":true}}"#,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert!(r.terminated);
    let events = sse_events(&r.text(), "\n\n");
    assert_eq!(events.last().unwrap().1, "[DONE]");
    let first = json(&events[0].1);
    assert_eq!(first["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(first["choices"][0]["delta"]["content"], "");
    let mut text = String::new();
    let mut sent = Vec::new();
    for (_, d) in &events[1..events.len() - 3] {
        let v = json(d);
        text.push_str(v["choices"][0]["delta"]["content"].as_str().unwrap());
        sent.push(v["x_sent_ns"].as_u64().unwrap());
    }
    assert_eq!(text, expected_text(TOKENS));
    assert!(sent.windows(2).all(|w| w[0] <= w[1]), "{sent:?}");
    let finish = json(&events[events.len() - 3].1);
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
    let usage = json(&events[events.len() - 2].1);
    assert_eq!(usage["choices"], Value::Array(vec![]));
    assert_eq!(usage["usage"]["completion_tokens"], TOKENS);
}

#[tokio::test]
async fn openai_chat_without_include_usage_sends_no_usage_chunk() {
    let emu = emulator(1).await;
    let r = post(
        &emu.base_url(),
        "/v1/chat/completions",
        r#"{"stream":true}"#,
    )
    .await;
    assert!(!r.text().contains("\"usage\""));
}

#[tokio::test]
async fn max_tokens_cuts_the_stream_with_finish_reason_length() {
    let emu = emulator(1).await;
    let r = post(
        &emu.base_url(),
        "/v1/completions",
        r#"{"max_tokens":2,"stream":true}"#,
    )
    .await;
    let events = sse_events(&r.text(), "\n\n");
    let texts: String = events
        .iter()
        .filter(|(_, d)| d.contains("x_sent_ns"))
        .map(|(_, d)| json(d)["choices"][0]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(texts, expected_text(2));
    assert_eq!(
        json(&events[events.len() - 2].1)["choices"][0]["finish_reason"],
        "length"
    );
}

#[tokio::test]
async fn openai_responses_sends_named_events_and_completed_usage() {
    let emu = emulator(1).await;
    let r = post(&emu.base_url(), "/v1/responses", r#"{"stream":true}"#).await;
    let events = sse_events(&r.text(), "\n\n");
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_deref().unwrap()).collect();
    assert_eq!(
        names[..4],
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added"
        ]
    );
    assert_eq!(*names.last().unwrap(), "response.completed");
    assert!(!r.text().contains("[DONE]"));
    let deltas: String = events
        .iter()
        .filter(|(n, _)| n.as_deref() == Some("response.output_text.delta"))
        .map(|(_, d)| json(d)["delta"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(deltas, expected_text(TOKENS));
    let seqs: Vec<u64> = events
        .iter()
        .map(|(_, d)| json(d)["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (0..events.len() as u64).collect::<Vec<_>>());
    let done = json(&events.last().unwrap().1);
    assert_eq!(done["response"]["usage"]["output_tokens"], TOKENS);
}

#[tokio::test]
async fn anthropic_sends_the_message_event_sequence() {
    let emu = emulator(2).await;
    let r = post(
        &emu.base_url(),
        "/v1/messages",
        r#"{"max_tokens":100,"stream":true}"#,
    )
    .await;
    let events = sse_events(&r.text(), "\n\n");
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_deref().unwrap()).collect();
    let deltas = (TOKENS as usize).div_ceil(2);
    let mut expected = vec!["message_start", "content_block_start", "ping"];
    expected.extend(std::iter::repeat_n("content_block_delta", deltas));
    expected.extend(["content_block_stop", "message_delta", "message_stop"]);
    assert_eq!(names, expected);
    let text: String = events
        .iter()
        .filter(|(n, _)| n.as_deref() == Some("content_block_delta"))
        .map(|(_, d)| json(d)["delta"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(text, expected_text(TOKENS));
    let delta = json(&events[events.len() - 2].1);
    assert_eq!(delta["usage"]["output_tokens"], TOKENS);
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
}

#[tokio::test]
async fn gemini_sends_crlf_events_with_usage_metadata() {
    let emu = emulator(1).await;
    let r = post(
        &emu.base_url(),
        "/v1beta/models/gem:streamGenerateContent?alt=sse",
        r#"{"contents":[]}"#,
    )
    .await;
    assert_eq!(r.status, 200);
    let body = r.text();
    assert!(body.ends_with("\r\n\r\n"));
    let events = sse_events(&body, "\r\n\r\n");
    assert_eq!(events.len() as u32, TOKENS + 1);
    let last = json(&events.last().unwrap().1);
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    assert_eq!(last["usageMetadata"]["candidatesTokenCount"], TOKENS);
    assert_eq!(last["modelVersion"], "gem");
}

#[tokio::test]
async fn ollama_streams_ndjson_ending_with_eval_counts() {
    let emu = emulator(1).await;
    for (path, field) in [
        ("/api/chat", "/message/content"),
        ("/api/generate", "/response"),
    ] {
        let r = post(&emu.base_url(), path, r#"{"model":"llama"}"#).await;
        assert_eq!(r.header("content-type"), Some("application/x-ndjson"));
        let lines: Vec<Value> = r.text().lines().map(json).collect();
        let text: String = lines
            .iter()
            .map(|l| l.pointer(field).unwrap().as_str().unwrap())
            .collect();
        assert_eq!(text, expected_text(TOKENS));
        let last = lines.last().unwrap();
        assert_eq!(last["done"], true);
        assert_eq!(last["eval_count"], TOKENS);
        assert_eq!(last["eval_duration"], 5_000_000 * u64::from(TOKENS));
        assert!(lines[..lines.len() - 1].iter().all(|l| l["done"] == false));
    }
}

/// Runs tpsmeter-core's parser over a body, as the CLI and the browser do.
fn parse_with_core(api: Api, body: &[u8]) -> (Vec<StreamEvent>, Result<(), CoreError>) {
    let mut parser = StreamParser::new(api);
    let mut events = match parser.feed(body) {
        Ok(events) => events,
        Err(e) => return (Vec::new(), Err(e)),
    };
    match parser.finish() {
        Ok(more) => {
            events.extend(more);
            (events, Ok(()))
        }
        Err(e) => (events, Err(e)),
    }
}

#[tokio::test]
async fn vercel_ui_stream_has_the_sdk_part_sequence_and_parses_with_core() {
    let emu = emulator(2).await;
    for path in ["/api/ui-chat", "/"] {
        let r = post(&emu.base_url(), path, r#"{"id":"c","messages":[]}"#).await;
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.header("content-type"), Some("text/event-stream"));
        assert_eq!(r.header("x-vercel-ai-ui-message-stream"), Some("v1"));
        let events = sse_events(&r.text(), "\n\n");
        let kinds: Vec<String> = events
            .iter()
            .map(|(_, d)| match d.as_str() {
                "[DONE]" => d.clone(),
                _ => json(d)["type"].as_str().unwrap().to_owned(),
            })
            .collect();
        let mut expected = vec!["start", "start-step", "text-start"];
        expected.extend(std::iter::repeat_n(
            "text-delta",
            (TOKENS as usize).div_ceil(2),
        ));
        expected.extend(["text-end", "finish-step", "finish", "[DONE]"]);
        assert_eq!(kinds, expected, "{path}");
        for (_, d) in events.iter().filter(|(_, d)| d.contains("text-delta")) {
            assert!(json(d)["x_sent_ns"].as_u64().is_some(), "{d}");
        }
        let (parsed, end) = parse_with_core(Api::VercelUi, &r.body);
        assert!(end.is_ok(), "{end:?}");
        let text: String = parsed
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ContentDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, expected_text(TOKENS));
        let n = parsed.len();
        assert_eq!(
            parsed[n - 3..],
            [
                StreamEvent::Usage(Usage {
                    input_tokens: Some(r#"{"id":"c","messages":[]}"#.len() as u64 / 4),
                    output_tokens: Some(u64::from(TOKENS)),
                    ..Usage::default()
                }),
                StreamEvent::Finish {
                    reason: FinishReason::Stop
                },
                StreamEvent::Done,
            ]
        );
    }
}

#[tokio::test]
async fn vercel_ui_honours_max_output_tokens_and_sends_error_parts() {
    let emu = emulator(1).await;
    let r = post(&emu.base_url(), "/api/ui-chat", r#"{"maxOutputTokens":2}"#).await;
    let (parsed, end) = parse_with_core(Api::VercelUi, &r.body);
    assert!(end.is_ok());
    assert!(parsed.contains(&StreamEvent::Finish {
        reason: FinishReason::Length
    }));
    let r = post(&emu.base_url(), "/fault/error-event:1/api/ui-chat", "{}").await;
    let (parsed, end) = parse_with_core(Api::VercelUi, &r.body);
    assert!(end.is_ok());
    assert_eq!(
        parsed.last(),
        Some(&StreamEvent::Error {
            code: None,
            message: "emulated server error mid-stream".into()
        })
    );
    let r = post(&emu.base_url(), "/fault/end-early:2/api/ui-chat", "{}").await;
    let (_, end) = parse_with_core(Api::VercelUi, &r.body);
    assert!(matches!(end, Err(CoreError::TruncatedStream { .. })));
}

#[tokio::test]
async fn no_chunk_leaves_before_its_deadline() {
    // Deadlines are absolute from arrival: chunk j is due at arrival + ttft + j * itl.
    let emu = emulator(1).await;
    let before = clock::monotonic_ns();
    let _ = post(
        &emu.base_url(),
        "/v1/chat/completions",
        r#"{"stream":true}"#,
    )
    .await;
    let records = emu.take_records();
    assert_eq!(records.len(), 1);
    let r = &records[0];
    assert!(r.arrival_ns >= before);
    assert_eq!(r.sent_ns.len() as u32, TOKENS);
    for (j, (&due, &sent)) in r.due_ns.iter().zip(&r.sent_ns).enumerate() {
        assert_eq!(due, r.arrival_ns + 30_000_000 + 5_000_000 * j as u64);
        assert!(sent >= due, "chunk {j} sent {sent} before due {due}");
    }
    // Every event's departure is the kernel's transmit stamp, taken after the event was
    // produced (within the two clocks' conversion error, a few µs).
    assert_eq!(
        r.departed_by_kernel as u32, TOKENS,
        "events the kernel did not stamp"
    );
    for (j, (&sent, &left)) in r.sent_ns.iter().zip(&r.departed_ns).enumerate() {
        assert!(
            left + 50_000 >= sent,
            "chunk {j} left {left} before it was produced {sent}"
        );
    }
}

#[tokio::test]
async fn stats_count_requests_and_close_streams() {
    let emu = emulator(1).await;
    let _ = post(&emu.base_url(), "/api/chat", "{}").await;
    let _ = post(&emu.base_url(), "/nope", "{}").await;
    let s = emu.stats();
    assert_eq!(s.requests_served, 2);
    assert_eq!(s.connections, 2);
    assert_eq!(s.open_streams, 0);
}

#[tokio::test]
async fn dropping_the_emulator_stops_the_server() {
    let emu = emulator(1).await;
    let addr = emu.addr();
    drop(emu);
    // The listener is closed when the aborted accept task is dropped; give the runtime the
    // turn it needs to run the abort, then a connect must be refused.
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(addr).await.is_err() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("{addr} still accepts connections after drop");
}
