//! What a browser test suite needs from one emulator: CORS preflights and headers (and their
//! absence on request), per-request fault and schedule overrides in the path, clear 400s for
//! bad overrides, and a health probe.

#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{Raw, post, send};
use tpsmeter_emulator::{Emulator, EmulatorConfig, Schedule};

const TOKENS: u32 = 4;

async fn emulator(cors: bool) -> Emulator {
    Emulator::start(EmulatorConfig {
        schedule: Schedule {
            ttft: Duration::from_millis(5),
            itl: Duration::from_millis(2),
            output_tokens: TOKENS,
        },
        cors,
        record: true,
        ..EmulatorConfig::default()
    })
    .await
    .unwrap()
}

const ORIGIN: (&str, &str) = ("Origin", "http://localhost:5173");

async fn preflight(emu: &Emulator, path: &str, asked: &str) -> Raw {
    send(
        &emu.base_url(),
        "OPTIONS",
        path,
        &[
            ORIGIN,
            ("Access-Control-Request-Method", "POST"),
            ("Access-Control-Request-Headers", asked),
        ],
        "",
    )
    .await
}

fn assert_cors(r: &Raw, what: &str) {
    assert_eq!(r.header("access-control-allow-origin"), Some("*"), "{what}");
    let exposed = r.header("access-control-expose-headers").unwrap_or("");
    assert!(exposed.contains("Retry-After"), "{what}: {exposed}");
    assert!(
        exposed.contains("x-vercel-ai-ui-message-stream"),
        "{what}: {exposed}"
    );
    assert_eq!(r.header("timing-allow-origin"), Some("*"), "{what}");
    assert_eq!(
        r.header("cross-origin-resource-policy"),
        Some("cross-origin"),
        "{what}"
    );
}

fn assert_no_cors(r: &Raw, what: &str) {
    let cors: Vec<_> = r
        .headers
        .iter()
        .filter(|(k, _)| {
            let k = k.to_ascii_lowercase();
            k.starts_with("access-control-") || k == "timing-allow-origin"
        })
        .collect();
    assert!(cors.is_empty(), "{what}: {cors:?}");
}

fn error_message(r: &Raw) -> String {
    let v: Value = serde_json::from_str(&r.text()).unwrap();
    v["error"]["message"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn preflight_allows_any_origin_and_echoes_the_requested_headers() {
    let emu = emulator(true).await;
    let r = preflight(&emu, "/v1/chat/completions", "content-type, authorization").await;
    assert_eq!(r.status, 204);
    assert_cors(&r, "preflight");
    assert_eq!(
        r.header("access-control-allow-methods"),
        Some("POST, GET, OPTIONS")
    );
    assert_eq!(
        r.header("access-control-allow-headers"),
        Some("content-type, authorization")
    );
    assert_eq!(r.header("access-control-max-age"), Some("600"));
    assert!(r.body.is_empty());
}

#[tokio::test]
async fn an_overlong_requested_header_list_is_not_echoed() {
    // Guards the cap: the echo must not copy an unbounded request header into the answer.
    let emu = emulator(true).await;
    let asked = format!("x-{}", "a".repeat(2000));
    let r = preflight(&emu, "/v1/messages", &asked).await;
    assert_eq!(r.status, 204);
    assert_eq!(
        r.header("access-control-allow-headers"),
        Some("*, authorization")
    );
}

#[tokio::test]
async fn every_kind_of_response_carries_the_cors_headers() {
    let emu = emulator(true).await;
    let base = emu.base_url();
    let stream = post(&base, "/v1/chat/completions", "{}").await;
    assert_eq!(stream.status, 200);
    assert_cors(&stream, "stream");
    let health = send(&base, "GET", "/health", &[ORIGIN], "").await;
    assert_eq!(health.status, 200);
    assert!(health.text().contains("ok"));
    assert_cors(&health, "health");
    assert_cors(&post(&base, "/nope", "{}").await, "404");
    let limited = post(&base, "/fault/rate-limited:3/v1/messages", "{}").await;
    assert_eq!(limited.status, 429);
    assert_eq!(limited.header("retry-after"), Some("3"));
    assert_cors(&limited, "429");
    assert_cors(&post(&base, "/fault/bogus/api/chat", "{}").await, "400");
}

#[tokio::test]
async fn no_cors_prefix_strips_every_cors_header_from_the_request_and_its_preflight() {
    let emu = emulator(true).await;
    let base = emu.base_url();
    let r = post(&base, "/no-cors/v1/chat/completions", "{}").await;
    assert_eq!(r.status, 200);
    assert!(r.text().ends_with("data: [DONE]\n\n"));
    assert_no_cors(&r, "stream");
    assert_eq!(r.header("cross-origin-resource-policy"), None);
    let p = preflight(&emu, "/no-cors/v1/chat/completions", "content-type").await;
    assert_eq!(p.status, 204);
    assert_no_cors(&p, "preflight");
}

#[tokio::test]
async fn cors_off_for_the_server_means_no_cors_headers_anywhere() {
    let emu = emulator(false).await;
    let r = post(&emu.base_url(), "/v1/chat/completions", "{}").await;
    assert_eq!(r.status, 200);
    assert_no_cors(&r, "stream");
    assert_no_cors(
        &preflight(&emu, "/api/chat", "content-type").await,
        "preflight",
    );
}

#[tokio::test]
async fn fault_prefix_overrides_the_servers_fault_for_that_request_only() {
    let emu = emulator(true).await;
    let base = emu.base_url();
    let cut = post(&base, "/fault/cut:2/v1/chat/completions", "{}").await;
    assert!(!cut.terminated, "the cut aborts the chunked body");
    assert_eq!(cut.text().matches("x_sent_ns").count(), 2);
    let status = post(&base, "/fault/status:503/v1/messages", "{}").await;
    assert_eq!(status.status, 503);
    let healthy = post(&base, "/v1/chat/completions", "{}").await;
    assert!(healthy.terminated);
    assert_eq!(healthy.text().matches("x_sent_ns").count() as u32, TOKENS);
}

#[tokio::test]
async fn pace_prefix_sets_ttft_itl_tokens_and_tokens_per_chunk() {
    let emu = emulator(true).await;
    let base = emu.base_url();
    let r = post(&base, "/pace/40,3,5,2/api/generate", "{}").await;
    let lines: Vec<Value> = r
        .text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Five tokens, two per chunk: three chunks, then the final object.
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[3]["eval_count"], 5);
    let record = emu.take_records().pop().unwrap();
    assert_eq!(record.tokens, vec![2, 2, 1]);
    let offsets: Vec<u64> = record
        .due_ns
        .iter()
        .map(|d| (d - record.arrival_ns) / 1_000_000)
        .collect();
    assert_eq!(offsets, vec![40, 46, 52]);
}

#[tokio::test]
async fn fault_pace_and_no_cors_combine_in_any_order() {
    let emu = emulator(true).await;
    for path in [
        "/fault/error-event:1/pace/1,1,6/no-cors/v1/messages",
        "/no-cors/pace/1,1,6/fault/error-event:1/v1/messages",
    ] {
        let r = post(&emu.base_url(), path, "{}").await;
        assert_eq!(r.status, 200, "{path}");
        assert_no_cors(&r, path);
        let text = r.text();
        assert_eq!(text.matches("x_sent_ns").count(), 1, "{path}: {text}");
        assert!(text.contains("overloaded_error"), "{path}: {text}");
    }
}

#[tokio::test]
async fn malformed_or_unknown_prefixes_are_400_with_the_reason() {
    let emu = emulator(true).await;
    let base = emu.base_url();
    for (path, says) in [
        ("/fault/explode:1/v1/chat/completions", "unknown fault"),
        ("/fault/cut/v1/chat/completions", "needs TOKENS"),
        (
            "/pace/5,2/v1/chat/completions",
            "<ttft_ms>,<itl_ms>,<tokens>",
        ),
        ("/pace/5,x,3/api/chat", "itl_ms"),
        ("/fault/cut:1/fault/cut:2/api/chat", "twice"),
        (
            "/faults/cut:3/v1/chat/completions",
            "unknown override \"/faults/cut:3\"",
        ),
        ("/pace/1,1,2/nope", "no API path"),
    ] {
        let r = post(&base, path, "{}").await;
        assert_eq!(r.status, 400, "{path}");
        assert_eq!(r.header("content-type"), Some("application/json"));
        let message = error_message(&r);
        assert!(message.contains(says), "{path}: {message}");
    }
    let long = format!("/fault/cut:{}/api/chat", "1".repeat(400));
    let r = post(&base, &long, "{}").await;
    assert_eq!(r.status, 400);
    assert!(error_message(&r).contains("longer than"));
    // Without any override an unknown path stays a plain 404.
    assert_eq!(post(&base, "/nope", "{}").await.status, 404);
}
