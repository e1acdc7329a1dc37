//! Golden streams, one or more per protocol, written from each API's published wire format
//! (role-only chunks, usage chunks, reasoning, tool calls, in-stream errors, truncation):
//! the parser must produce exactly the expected events, fed whole, byte by byte, and cut
//! in two at every offset.
#![allow(clippy::unwrap_used)]

// In the browser (`cargo xtask browser-test`) the same `#[test]` functions run in headless
// Chromium through wasm-bindgen-test.
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

#[path = "golden/support.rs"]
mod support;

use support::{End, GOLDEN, body, expected, run_chunks, run_cuts};
use tpsmeter_core::{Api, CoreError};

fn check_end(stem: &str, end: End, result: &Result<(), CoreError>) {
    match (end, result) {
        (End::Clean, Ok(())) => {}
        (End::Truncated, Err(CoreError::TruncatedStream { .. })) => {}
        _ => panic!("{stem}: expected {end:?}, got {result:?}"),
    }
}

#[test]
fn every_golden_stream_yields_its_expected_events() {
    for &(stem, api, end) in GOLDEN {
        let (events, result) = run_chunks(api, &[&body(stem, api)]);
        assert_eq!(events, expected(stem), "{stem}");
        check_end(stem, end, &result);
    }
}

#[test]
fn every_two_way_split_of_every_golden_stream_yields_the_same_events() {
    for &(stem, api, end) in GOLDEN {
        let body = body(stem, api);
        let want = expected(stem);
        for cut in 0..=body.len() {
            let (events, result) = run_cuts(api, &body, &[cut]);
            assert_eq!(events, want, "{stem} cut at {cut}");
            check_end(stem, end, &result);
        }
    }
}

#[test]
fn byte_by_byte_feeding_yields_the_same_events() {
    for &(stem, api, end) in GOLDEN {
        let body = body(stem, api);
        let chunks: Vec<&[u8]> = body.chunks(1).collect();
        let (events, result) = run_chunks(api, &chunks);
        assert_eq!(events, expected(stem), "{stem}");
        check_end(stem, end, &result);
    }
}

#[test]
fn every_api_has_a_clean_golden_stream() {
    for api in Api::ALL {
        assert!(
            GOLDEN.iter().any(|&(_, a, e)| a == api && e == End::Clean),
            "no golden stream for {api}"
        );
    }
}

#[test]
fn golden_streams_without_their_last_bytes_are_truncated_or_fail_cleanly() {
    // Cutting the end marker off must never look like a complete stream.
    for &(stem, api, end) in GOLDEN {
        if end != End::Clean || stem.contains("error") || stem.contains("failed") {
            continue;
        }
        let body = body(stem, api);
        let mut parser = tpsmeter_core::StreamParser::new(api);
        let marker_start = last_message_start(&body);
        let fed = parser.feed(&body[..marker_start]);
        let finished = fed.and_then(|_| parser.finish());
        // (Gemini has no end marker, but its last event carries the finish reason.)
        assert!(
            matches!(finished, Err(CoreError::TruncatedStream { .. })),
            "{stem}: {finished:?}"
        );
    }
}

/// Offset where the last message (SSE event or NDJSON line) of `body` begins.
fn last_message_start(body: &[u8]) -> usize {
    let text = std::str::from_utf8(body).unwrap();
    let trimmed = text.trim_end();
    let sep = if trimmed.contains("\n\n") || trimmed.contains("\r\n\r\n") {
        trimmed
            .rfind("\n\n")
            .map(|i| i + 2)
            .into_iter()
            .chain(trimmed.rfind("\r\n\r\n").map(|i| i + 4))
            .max()
    } else {
        trimmed.rfind('\n').map(|i| i + 1)
    };
    sep.unwrap_or(0)
}
