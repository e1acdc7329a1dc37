//! Hostile and broken bodies: never a panic, always a classified error, and the same error
//! however the body is split.
#![allow(clippy::unwrap_used)]

// In the browser (`cargo xtask browser-test`) the same `#[test]` functions run in headless
// Chromium through wasm-bindgen-test.
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

#[path = "golden/support.rs"]
mod support;

use proptest::prelude::*;
use support::{GOLDEN, body, run_chunks, run_cuts};
use tpsmeter_core::{Api, CoreError, Limits, StreamEvent, StreamParser};

fn small_limits() -> Limits {
    Limits {
        max_line_bytes: 256,
        max_event_data_bytes: 512,
    }
}

#[test]
fn huge_line_is_line_too_long_not_memory_growth() {
    for api in Api::ALL {
        let mut parser = StreamParser::with_limits(api, small_limits());
        let prefix: &[u8] = if api.is_ndjson() {
            b"{\"a\":\""
        } else {
            b"data: \""
        };
        parser.feed(prefix).unwrap();
        let mut err = None;
        for _ in 0..100 {
            if let Err(e) = parser.feed(&[b'x'; 64]) {
                err = Some(e);
                break;
            }
        }
        assert_eq!(err, Some(CoreError::LineTooLong { limit: 256 }), "{api}");
        // The parser stays failed: later calls repeat the error instead of resyncing.
        assert_eq!(
            parser.feed(b"\n\n"),
            Err(CoreError::LineTooLong { limit: 256 })
        );
        assert_eq!(parser.finish(), Err(CoreError::LineTooLong { limit: 256 }));
    }
}

#[test]
fn many_data_lines_over_the_event_cap_are_event_too_large() {
    let mut parser = StreamParser::with_limits(Api::OpenaiChat, small_limits());
    let line = format!("data: {}\n", "y".repeat(100));
    let mut result = Ok(vec![]);
    for _ in 0..10 {
        result = parser.feed(line.as_bytes());
        if result.is_err() {
            break;
        }
    }
    assert_eq!(result, Err(CoreError::EventTooLarge { limit: 512 }));
}

#[test]
fn invalid_utf8_is_an_error_with_the_stream_offset() {
    let body = b"data: {\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"\xff\"}}]}\n\n";
    let bad = body.iter().position(|&b| b == 0xff).unwrap() as u64;
    for cut in 0..body.len() {
        let (events, result) = run_cuts(Api::OpenaiChat, body, &[cut]);
        assert_eq!(
            result,
            Err(CoreError::InvalidUtf8 { offset: bad }),
            "cut {cut}"
        );
        assert!(events.len() <= 1);
    }
}

#[test]
fn utf8_split_inside_a_character_is_not_invalid() {
    let body =
        "data: {\"choices\":[{\"delta\":{\"content\":\"€\"}}]}\n\ndata: [DONE]\n\n".as_bytes();
    let euro = body.iter().position(|&b| b == 0xE2).unwrap();
    for cut in euro..euro + 3 {
        let (events, result) = run_cuts(Api::OpenaiChat, body, &[cut]);
        assert!(result.is_ok(), "cut {cut}: {result:?}");
        assert_eq!(events[0], StreamEvent::ContentDelta { text: "€".into() });
    }
}

#[test]
fn garbage_json_is_malformed_json_with_a_capped_excerpt() {
    let long_garbage = format!("data: {{not json {}\n\n", "z".repeat(10_000));
    for api in Api::ALL {
        let body = if api.is_ndjson() {
            long_garbage.trim_start_matches("data: ").to_owned()
        } else {
            long_garbage.clone()
        };
        let (_, result) = run_chunks(api, &[body.as_bytes()]);
        match result {
            Err(CoreError::MalformedJson { excerpt, .. }) => {
                assert!(excerpt.chars().count() < 200, "{api}: excerpt not capped");
            }
            other => panic!("{api}: {other:?}"),
        }
    }
}

#[test]
fn empty_body_is_truncated_for_every_api() {
    for api in Api::ALL {
        let (events, result) = run_chunks(api, &[]);
        assert!(events.is_empty());
        assert!(
            matches!(result, Err(CoreError::TruncatedStream { .. })),
            "{api}: {result:?}"
        );
    }
}

#[test]
fn events_after_the_end_marker_are_ignored() {
    let body = b"data: [DONE]\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"late\"}}]}\n\ndata: garbage\n\n";
    let (events, result) = run_chunks(Api::OpenaiChat, &[body]);
    assert_eq!(events, vec![StreamEvent::Done]);
    assert!(result.is_ok());
}

/// Pieces that make random bodies look enough like streams to reach deep code paths.
fn piece() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::sample::select(vec![
            "data: ",
            "data:",
            "event: ",
            "id: ",
            "retry: 10",
            ": c",
            "\n",
            "\r",
            "\r\n",
            "\n\n",
            "[DONE]",
            "{",
            "}",
            "[",
            "]",
            "\"",
            ",",
            ":",
            "null",
            "true",
            "0",
            "1e999",
            "\"choices\"",
            "\"delta\"",
            "\"content\"",
            "\"error\"",
            "\"type\"",
            "\"usage\"",
            "\"message_stop\"",
            "\"response.completed\"",
            "\"candidates\"",
            "\"done\"",
            "\"finishReason\"",
            "\"parts\"",
            "\"tool_calls\"",
            "\u{feff}",
            "é",
            "👋",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        prop::collection::vec(any::<u8>(), 0..8),
        (0..GOLDEN.len(), 0.0f64..1.0, 1usize..200).prop_map(|(i, at, n)| {
            let (stem, api, _) = GOLDEN[i];
            let b = body(stem, api);
            let start = ((b.len() as f64) * at) as usize;
            b[start..(start + n).min(b.len())].to_vec()
        }),
    ]
}

fn run_bytes(api: Api, chunks: &[&[u8]]) -> (Vec<StreamEvent>, Result<(), CoreError>) {
    let mut parser = StreamParser::with_limits(api, small_limits());
    let mut events = Vec::new();
    for chunk in chunks {
        match parser.feed(chunk) {
            Ok(e) => events.extend(e),
            Err(e) => return (events, Err(e)),
        }
    }
    match parser.finish() {
        Ok(e) => {
            events.extend(e);
            (events, Ok(()))
        }
        Err(e) => (events, Err(e)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// Random bytes to every API's parser: no panic; the outcome does not depend on the
    /// split (the error is the same, and events before it are a prefix of what byte-by-byte
    /// feeding yields, since only the failing chunk's events are dropped).
    #[test]
    fn random_bodies_never_panic_and_fail_the_same_way_under_any_split(
        pieces in prop::collection::vec(piece(), 0..48),
        fractions in prop::collection::vec(0.0f64..1.0, 0..12),
    ) {
        let body: Vec<u8> = pieces.concat();
        let mut cuts: Vec<usize> = fractions.iter().map(|f| ((body.len() as f64) * f) as usize).collect();
        cuts.sort_unstable();
        let mut chunks = Vec::new();
        let mut start = 0;
        for &cut in &cuts {
            chunks.push(&body[start..cut]);
            start = cut;
        }
        chunks.push(&body[start..]);
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        for api in Api::ALL {
            let whole = run_bytes(api, &[&body]);
            let split = run_bytes(api, &chunks);
            let by_byte = run_bytes(api, &bytes);
            prop_assert_eq!(&split.1, &whole.1, "{}", api);
            prop_assert_eq!(&by_byte.1, &whole.1, "{}", api);
            if whole.1.is_ok() {
                prop_assert_eq!(&split.0, &whole.0, "{}", api);
                prop_assert_eq!(&by_byte.0, &whole.0, "{}", api);
            } else {
                prop_assert!(by_byte.0.starts_with(&split.0), "{}", api);
                prop_assert!(by_byte.0.starts_with(&whole.0), "{}", api);
            }
        }
    }
}
