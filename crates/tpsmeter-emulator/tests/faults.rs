//! Each fault produces on the wire what it claims.

#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{post, sse_events};
use tpsmeter_emulator::{Emulator, EmulatorConfig, Fault, Schedule};

const TOKENS: u32 = 5;

async fn with_fault(fault: Fault) -> Emulator {
    Emulator::start(EmulatorConfig {
        schedule: Schedule {
            ttft: Duration::from_millis(5),
            itl: Duration::from_millis(2),
            output_tokens: TOKENS,
        },
        fault,
        ..EmulatorConfig::default()
    })
    .await
    .unwrap()
}

async fn chat(emu: &Emulator) -> support::Raw {
    post(
        &emu.base_url(),
        "/v1/chat/completions",
        r#"{"stream":true}"#,
    )
    .await
}

fn content_events(body: &str) -> usize {
    body.matches("x_sent_ns").count()
}

#[tokio::test]
async fn status_fault_answers_that_status_and_body() {
    let emu = with_fault(Fault::Status {
        code: 503,
        body: "{\"e\":1}".into(),
    })
    .await;
    let r = chat(&emu).await;
    assert_eq!(r.status, 503);
    assert_eq!(r.text(), "{\"e\":1}");
}

#[tokio::test]
async fn rate_limited_sends_429_with_retry_after() {
    let emu = with_fault(Fault::RateLimited { retry_after_s: 7 }).await;
    let r = chat(&emu).await;
    assert_eq!(r.status, 429);
    assert_eq!(r.header("retry-after"), Some("7"));
}

#[tokio::test]
async fn stall_moves_the_tokens_after_it_back_by_its_length() {
    let stall = Duration::from_millis(300);
    let emu = Emulator::start(EmulatorConfig {
        schedule: Schedule {
            ttft: Duration::from_millis(5),
            itl: Duration::from_millis(2),
            output_tokens: TOKENS,
        },
        fault: Fault::StallAfter {
            tokens: 2,
            for_: stall,
        },
        record: true,
        ..EmulatorConfig::default()
    })
    .await
    .unwrap();
    let r = chat(&emu).await;
    assert!(r.text().ends_with("data: [DONE]\n\n"));
    let rec = emu.take_records().pop().unwrap();
    let gap = |i: usize| rec.due_ns[i] - rec.due_ns[i - 1];
    assert_eq!(gap(1), 2_000_000);
    assert_eq!(gap(2), 2_000_000 + stall.as_nanos() as u64);
    assert_eq!(gap(3), 2_000_000);
    // Nothing after the stall leaves early: the client really sees the silence.
    assert!(rec.sent_ns[2] >= rec.due_ns[2]);
    assert!(rec.sent_ns[2] - rec.arrival_ns >= stall.as_nanos() as u64);
}

#[tokio::test]
async fn cut_aborts_the_connection_without_final_chunk_or_marker() {
    let emu = with_fault(Fault::CutAfter { tokens: 3 }).await;
    let r = chat(&emu).await;
    assert_eq!(r.status, 200);
    assert!(
        !r.terminated,
        "a cut must not send the final zero-length chunk"
    );
    assert_eq!(content_events(&r.text()), 3);
    assert!(!r.text().contains("[DONE]"));
}

#[tokio::test]
async fn end_without_marker_ends_http_cleanly_but_early() {
    let emu = with_fault(Fault::EndWithoutMarkerAfter { tokens: 2 }).await;
    let r = post(&emu.base_url(), "/v1/messages", "{}").await;
    assert!(r.terminated);
    assert_eq!(content_events(&r.text()), 2);
    assert!(!r.text().contains("message_stop"));
}

#[tokio::test]
async fn error_event_is_sent_mid_stream_in_each_apis_shape() {
    let emu = with_fault(Fault::ErrorEventAfter { tokens: 1 }).await;
    let cases = [
        ("/v1/chat/completions", "\"error\":{"),
        ("/v1/responses", "event: error\n"),
        ("/v1/messages", "overloaded_error"),
        (
            "/v1beta/models/g:streamGenerateContent?alt=sse",
            "\"status\":\"INTERNAL\"",
        ),
        ("/api/chat", "{\"error\":"),
    ];
    for (path, marker) in cases {
        let r = post(&emu.base_url(), path, "{}").await;
        assert_eq!(r.status, 200, "{path}");
        let body = r.text();
        assert_eq!(content_events(&body), 1, "{path}: {body}");
        let at = body
            .find(marker)
            .unwrap_or_else(|| panic!("{path}: {body}"));
        assert!(
            at > body.find("x_sent_ns").unwrap(),
            "{path}: error before the token"
        );
    }
}

#[tokio::test]
async fn malformed_json_is_one_unparseable_event_and_the_stream_goes_on() {
    let emu = with_fault(Fault::MalformedJsonAfter { tokens: 2 }).await;
    let r = chat(&emu).await;
    let events = sse_events(&r.text(), "\n\n");
    let bad: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, (_, d))| d != "[DONE]" && serde_json::from_str::<Value>(d).is_err())
        .map(|(i, _)| i)
        .collect();
    // Event 0 is the role chunk, then two tokens.
    assert_eq!(bad, vec![3]);
    assert_eq!(content_events(&r.text()), TOKENS as usize);
    assert_eq!(events.last().unwrap().1, "[DONE]");
}

#[tokio::test]
async fn oversized_line_is_one_line_of_the_asked_length() {
    let bytes = 3 * 1024 * 1024 + 17;
    let emu = with_fault(Fault::OversizedLine { bytes }).await;
    for path in ["/v1/chat/completions", "/api/generate"] {
        let r = post(&emu.base_url(), path, "{}").await;
        let body = r.text();
        let longest = body.split('\n').map(str::len).max().unwrap();
        // The line's length counts its terminator(s): "\n" for NDJSON, "\n\n" for SSE.
        let terminator = if path.starts_with("/api") { 1 } else { 2 };
        assert_eq!(longest + terminator, bytes, "{path}");
        assert_eq!(content_events(&body), TOKENS as usize, "{path}");
    }
}

#[tokio::test]
async fn invalid_utf8_puts_ff_fe_in_a_content_chunk() {
    let emu = with_fault(Fault::InvalidUtf8After { tokens: 1 }).await;
    let r = chat(&emu).await;
    assert!(String::from_utf8(r.body.clone()).is_err());
    let at = r.body.windows(2).position(|w| w == [0xFF, 0xFE]).unwrap();
    let line_start = r.body[..at].iter().rposition(|&b| b == b'\n').unwrap() + 1;
    assert!(r.body[line_start..at].starts_with(b"data: {\"id\":\"chatcmpl-"));
    assert!(r.body.ends_with(b"data: [DONE]\n\n"));
}

#[tokio::test]
async fn slow_headers_hold_the_first_byte_back() {
    let delay = Duration::from_millis(250);
    let emu = with_fault(Fault::SlowHeaders(delay)).await;
    let r = chat(&emu).await;
    assert_eq!(r.status, 200);
    assert!(r.first_byte >= delay, "first byte after {:?}", r.first_byte);
}

/// When each response's first content event was due, from its request's arrival, in ms;
/// sorted.
fn first_token_waits(emu: &Emulator) -> Vec<f64> {
    let mut waits: Vec<f64> = emu
        .take_records()
        .iter()
        .map(|r| (r.due_ns[0] - r.arrival_ns) as f64 / 1e6)
        .collect();
    waits.sort_by(f64::total_cmp);
    waits
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beyond_max_streams_a_request_waits_for_a_slot_then_runs_its_schedule() {
    // Streams of 5 ms + 4 × 20 ms: the third of three requests on two slots starts only
    // when one of the first two has sent its last token.
    let emu = Emulator::start(EmulatorConfig {
        schedule: Schedule {
            ttft: Duration::from_millis(5),
            itl: Duration::from_millis(20),
            output_tokens: TOKENS,
        },
        max_streams: Some(2),
        record: true,
        ..EmulatorConfig::default()
    })
    .await
    .unwrap();
    let rs = tokio::join!(chat(&emu), chat(&emu), chat(&emu));
    for r in [&rs.0, &rs.1, &rs.2] {
        assert_eq!(r.status, 200);
        assert_eq!(
            content_events(&r.text()),
            TOKENS as usize,
            "every answer is whole"
        );
    }
    let waits = first_token_waits(&emu);
    // Two got a slot at once: their first token is due exactly 5 ms after arrival.
    assert_eq!(waits[..2], [5.0, 5.0], "{waits:?}");
    assert!(waits[2] >= 85.0, "the third waited for a slot: {waits:?}");

    // Per request: `/max-streams/1` on an unlimited server, and its own slots.
    let emu = Emulator::start(EmulatorConfig {
        schedule: Schedule {
            ttft: Duration::from_millis(5),
            itl: Duration::from_millis(20),
            output_tokens: TOKENS,
        },
        record: true,
        ..EmulatorConfig::default()
    })
    .await
    .unwrap();
    let url = emu.base_url();
    let one = |_| {
        post(
            &url,
            "/max-streams/1/v1/chat/completions",
            r#"{"stream":true}"#,
        )
    };
    let _ = tokio::join!(one(0), one(1), chat(&emu));
    let waits = first_token_waits(&emu);
    assert_eq!(
        waits[..2],
        [5.0, 5.0],
        "the unlimited request and the first: {waits:?}"
    );
    assert!(waits[2] >= 85.0, "{waits:?}");
}
