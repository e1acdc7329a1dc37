//! What the browser hands an [`Exchange`] besides wire bytes: text an app received already
//! decoded (the real-user meter's `chunk(text)`), and the frames that painted the answer.

#![allow(clippy::unwrap_used)]

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

use tpsmeter_core::paint::{Frame, Ready};
use tpsmeter_core::report::RequestRecord;
use tpsmeter_core::{Api, Exchange, FinishReason, LoadLevel};

const DELTAS: [(f64, &str); 3] = [(30.0, "Hel"), (31.5, "lo 😀"), (40.0, "!")];

fn record(ex: Exchange) -> RequestRecord {
    let o = ex.into_outcome();
    RequestRecord::from_timeline(
        0,
        LoadLevel::Concurrency(1),
        false,
        &o.timeline,
        o.http_status,
        None,
        true,
    )
}

#[test]
fn text_deltas_time_the_stream_as_its_wire_would() {
    let mut text = Exchange::new(Api::OpenaiChat, 0.0);
    text.on_response(200, None);
    let mut wire = Exchange::new(Api::OpenaiChat, 0.0);
    wire.on_response(200, None);
    for (t, s) in DELTAS {
        text.on_text(t, s);
        let event = serde_json::json!({"choices": [{"index": 0, "delta": {"content": s}}]});
        wire.on_bytes(t, format!("data: {event}\n\n").as_bytes());
    }
    // Empty text is no read (it would otherwise be a first byte).
    text.on_text(45.0, "");
    text.on_text_end(50.0);
    assert!(text.is_ended() && text.failure().is_none());
    wire.on_bytes(
        50.0,
        b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
    );
    // Text after the end is ignored, as bytes after [DONE] are.
    text.on_text(60.0, "late");
    let (a, b) = (record(text), record(wire));
    assert_eq!(a.finish_reason, Some(FinishReason::Stop));
    assert_eq!(a.metrics.ttft_ms, b.metrics.ttft_ms);
    assert_eq!(a.metrics.e2e_ms, b.metrics.e2e_ms);
    assert_eq!(a.metrics.itl_chunk_ms, b.metrics.itl_chunk_ms);
    assert_eq!(a.output_tokens, b.output_tokens);
    assert_eq!(a.metrics.ttfb_ms, Some(30.0));
    assert_eq!(a.end_ms, 50.0);
}

#[test]
fn frames_paint_the_characters_the_exchange_parsed() {
    let mut ex = Exchange::new(Api::OpenaiChat, 0.0);
    ex.on_response(200, None);
    for (t, s) in DELTAS {
        ex.on_text(t, s);
    }
    ex.on_text_end(41.0);
    let frames: Vec<Frame> = [33.0, 45.0, 60.0]
        .iter()
        .map(|&t| Frame {
            raf_ms: t,
            shown_ms: t,
        })
        .collect();
    // The app's DOM updated at 32 (the first two deltas) and at 50 (the last).
    ex.on_frames(Ready::Updates(&[32.0, 50.0]), &frames);
    let paint = record(ex).metrics.paint.unwrap();
    // "lo 😀" is 4 characters (the emoji is one scalar value, two UTF-16 units), so the
    // frame at 33 shows 3 + 4 and the one at 60 the last 1; the frame at 45 waited.
    assert_eq!(paint.frames, 2);
    assert_eq!(paint.empty_frames, 1);
    assert_eq!(paint.unpainted_chars, 0);
    assert_eq!(paint.lag_ms, vec![3.0, 1.5, 20.0]);
}
