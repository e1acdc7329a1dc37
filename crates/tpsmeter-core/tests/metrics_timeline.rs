//! Hand-computed metrics of small synthetic timelines, and SLO parsing and checking.
#![allow(clippy::unwrap_used)]

// In the browser (`cargo xtask browser-test`) the same `#[test]` functions run in headless
// Chromium through wasm-bindgen-test.
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

use tpsmeter_core::event::{FinishReason, StreamEvent, Usage};
use tpsmeter_core::metrics::TokenCountSource;
use tpsmeter_core::report::{ErrorClass, RequestRecord};
use tpsmeter_core::{CoreError, LoadLevel, Slo, Timeline};

fn content(s: &str) -> StreamEvent {
    StreamEvent::ContentDelta { text: s.into() }
}
fn reasoning(s: &str) -> StreamEvent {
    StreamEvent::ReasoningDelta { text: s.into() }
}
fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

/// Role-only first chunk, two tokens in one read, usage reporting one more token than events.
fn multi_token_with_usage() -> Timeline {
    let mut t = Timeline::new(100.0);
    t.on_bytes(150.0, 20);
    t.on_chunk(150.0, &[content("")]);
    t.on_bytes(200.0, 40);
    t.on_chunk(200.0, &[content("Hel"), content("lo")]);
    t.on_chunk(230.0, &[content(" wor")]);
    t.on_chunk(
        290.0,
        &[
            content("ld"),
            StreamEvent::Finish {
                reason: FinishReason::Stop,
            },
        ],
    );
    t.on_chunk(
        300.0,
        &[
            StreamEvent::Usage(Usage {
                input_tokens: Some(7),
                ..Usage::default()
            }),
            StreamEvent::Usage(Usage {
                output_tokens: Some(5),
                ..Usage::default()
            }),
            StreamEvent::Done,
        ],
    );
    t.finish(310.0);
    t
}

#[test]
fn multi_token_chunks_use_usage_count_and_skip_role_only_chunk() {
    let t = multi_token_with_usage();
    let m = t.metrics();
    // The role-only chunk at 150 must not be the first token (vLLM's flaw).
    assert!(close(m.ttfb_ms, 50.0));
    assert!(close(m.ttft_ms, 100.0));
    assert_eq!(m.ttft_reasoning_ms, None);
    assert!(close(m.e2e_ms, 210.0));
    assert_eq!(m.output_tokens, 5);
    assert_eq!(m.token_source, TokenCountSource::Usage);
    assert_eq!(m.chunk_tokens, 4);
    assert_eq!(m.usage_chunk_discrepancy, Some(1));
    assert_eq!(m.input_tokens, Some(7)); // merged across two usage events
    assert_eq!(m.output_chunks, 3);
    assert_eq!(m.itl_chunk_ms, vec![30.0, 60.0]);
    assert!(close(m.itl_token_ms, 90.0 / 4.0));
    assert!(close(m.tpot_ms, 110.0 / 4.0));
    assert!(close(m.output_tps, 5.0 / 210.0 * 1000.0));
    assert!(close(m.decode_tps, 4.0 / 90.0 * 1000.0));
    assert_eq!(m.server_decode_tps, None);
    assert_eq!(t.finish_reason(), Some(&FinishReason::Stop));
    assert!(t.saw_done());
    assert_eq!(t.content_chunks()[0].chars, 5);
    assert_eq!(t.content_chunks()[0].deltas, 2);
}

#[test]
fn reasoning_is_timed_apart_but_counted_in_decode() {
    let mut t = Timeline::new(0.0);
    t.on_chunk(100.0, &[reasoning("Let")]);
    t.on_chunk(120.0, &[reasoning(" me")]);
    t.on_chunk(150.0, &[reasoning(" think"), content("OK")]);
    t.on_chunk(170.0, &[content("!")]);
    t.finish(200.0);
    let m = t.metrics();
    assert!(close(m.ttft_reasoning_ms, 100.0));
    assert!(close(m.ttft_ms, 150.0));
    assert_eq!(m.output_tokens, 5);
    assert_eq!(m.token_source, TokenCountSource::Chunks);
    assert_eq!(m.reasoning_tokens, Some(3));
    assert_eq!(m.usage_chunk_discrepancy, None);
    // The read at 150 carried both kinds: one chunk, one gap.
    assert_eq!(m.output_chunks, 4);
    assert_eq!(m.itl_chunk_ms, vec![20.0, 30.0, 20.0]);
    assert!(close(m.itl_token_ms, 70.0 / 4.0));
    assert!(close(m.tpot_ms, 100.0 / 4.0));
    assert!(close(m.decode_tps, 4.0 / 70.0 * 1000.0));
    assert!(close(m.output_tps, 25.0));
}

#[test]
fn zero_token_response_has_no_token_metrics() {
    let mut t = Timeline::new(10.0);
    t.on_bytes(30.0, 5);
    t.on_chunk(
        30.0,
        &[
            StreamEvent::Finish {
                reason: FinishReason::Stop,
            },
            StreamEvent::Done,
        ],
    );
    t.finish(40.0);
    let m = t.metrics();
    assert!(close(m.ttfb_ms, 20.0));
    assert_eq!(m.ttft_ms, None);
    assert_eq!(m.output_tokens, 0);
    assert!(m.itl_chunk_ms.is_empty());
    assert_eq!(m.itl_token_ms, None);
    assert_eq!(m.tpot_ms, None);
    assert_eq!(m.decode_tps, None);
    assert_eq!(m.output_tps, Some(0.0));
    assert_eq!(m.reasoning_tokens, None);
}

#[test]
fn one_token_response_has_no_inter_token_metrics() {
    let mut t = Timeline::new(0.0);
    t.on_chunk(80.0, &[content("Yes")]);
    t.finish(100.0);
    let m = t.metrics();
    assert!(close(m.ttft_ms, 80.0));
    assert_eq!(m.output_tokens, 1);
    assert_eq!(m.itl_token_ms, None);
    assert_eq!(m.tpot_ms, None);
    assert_eq!(m.decode_tps, None);
    assert!(close(m.output_tps, 10.0));
}

#[test]
fn all_tokens_in_one_read_give_zero_itl_and_no_decode_rate() {
    let mut t = Timeline::new(0.0);
    t.on_chunk(50.0, &[content("a b c d e f g h i j")]);
    t.on_chunk(
        60.0,
        &[StreamEvent::Usage(Usage {
            output_tokens: Some(10),
            server_decode_ms: Some(250.0),
            ..Usage::default()
        })],
    );
    t.finish(68.0);
    let m = t.metrics();
    assert_eq!(m.usage_chunk_discrepancy, Some(9));
    assert!(close(m.itl_token_ms, 0.0));
    assert_eq!(m.decode_tps, None);
    assert!(close(m.tpot_ms, 18.0 / 9.0));
    assert!(close(m.server_decode_tps, 40.0));
}

#[test]
fn token_source_prefers_usage_then_tokenizer_then_chunks() {
    let mut t = Timeline::new(0.0);
    t.on_chunk(10.0, &[content("ab")]);
    t.on_chunk(20.0, &[content("cd")]);
    t.finish(30.0);
    let m = t.metrics_with_tokenizer_count(4);
    assert_eq!(
        (m.output_tokens, m.token_source),
        (4, TokenCountSource::Tokenizer)
    );
    assert!(close(m.itl_token_ms, 10.0 / 3.0));
    assert_eq!(t.metrics().token_source, TokenCountSource::Chunks);

    let with_usage = multi_token_with_usage();
    let m = with_usage.metrics_with_tokenizer_count(99);
    assert_eq!(
        (m.output_tokens, m.token_source),
        (5, TokenCountSource::Usage)
    );
}

#[test]
fn error_mid_stream_keeps_partial_metrics_and_classifies() {
    let mut t = Timeline::new(0.0);
    t.on_chunk(50.0, &[content("a")]);
    t.on_chunk(60.0, &[content("b")]);
    t.on_chunk(
        70.0,
        &[StreamEvent::Error {
            code: Some("overloaded_error".into()),
            message: "Overloaded".into(),
        }],
    );
    t.on_chunk(
        75.0,
        &[StreamEvent::Error {
            code: None,
            message: "later".into(),
        }],
    );
    t.finish(80.0);
    let m = t.metrics();
    assert!(close(m.ttft_ms, 50.0));
    assert!(close(m.e2e_ms, 80.0));
    assert_eq!(m.output_tokens, 2);
    let e = t.stream_error().unwrap();
    assert_eq!((e.t_ms, e.message.as_str()), (70.0, "Overloaded"));
    assert!(!t.saw_done());

    let r = RequestRecord::from_timeline(
        3,
        LoadLevel::Concurrency(1),
        false,
        &t,
        Some(200),
        None,
        true,
    );
    let err = r.error.as_ref().unwrap();
    assert_eq!(err.class, ErrorClass::StreamError);
    assert_eq!(err.message, "overloaded_error: Overloaded");
    assert_eq!(r.chunk_times_ms, Some(vec![50.0, 60.0]));
    assert_eq!(r.first_token_ms, Some(50.0));
    assert_eq!(r.end_ms, 80.0);
    assert!(!r.ok());
}

/// A coarse browser clock (100 µs) can stamp two different reads identically: both are chunks.
#[test]
fn reads_with_identical_stamps_stay_separate_chunks() {
    let mut t = Timeline::new(0.0);
    t.on_chunk(10.0, &[reasoning("a"), content("b")]);
    t.on_chunk(10.0, &[content("c")]);
    t.on_chunk(12.0, &[content("d")]);
    t.finish(12.0);
    let m = t.metrics();
    assert_eq!(m.output_chunks, 3);
    assert_eq!(m.itl_chunk_ms, vec![0.0, 2.0]);
    assert_eq!(t.output_chunk_times(), &[10.0, 10.0, 12.0]);
}

#[test]
fn tool_call_fragments_count_as_answer_output() {
    let mut t = Timeline::new(0.0);
    t.on_chunk(
        40.0,
        &[StreamEvent::ToolCallDelta {
            index: 0,
            id: Some("call_1".into()),
            name: Some("f".into()),
            arguments: String::new(),
        }],
    );
    t.on_chunk(
        55.0,
        &[StreamEvent::ToolCallDelta {
            index: 0,
            id: None,
            name: None,
            arguments: "{\"x\":".into(),
        }],
    );
    t.finish(60.0);
    let m = t.metrics();
    assert!(close(m.ttft_ms, 55.0)); // the empty first fragment does not count
    assert_eq!(m.output_tokens, 1);
}

#[test]
fn first_paint_and_unfinished_timeline() {
    let mut t = Timeline::new(5.0);
    t.on_chunk(20.0, &[content("hi")]);
    t.on_paint(18.0, 0);
    t.on_paint(25.0, 2);
    let m = t.metrics();
    assert!(close(m.ttfp_ms, 20.0));
    assert_eq!(m.e2e_ms, None);
    assert_eq!(m.output_tps, None);
    let r = RequestRecord::from_timeline(0, LoadLevel::Rate(2.0), true, &t, None, None, false);
    assert_eq!(r.end_ms, 20.0); // the last stamp seen
    assert_eq!(r.chunk_times_ms, None);
}

#[test]
fn slo_parses_units_and_both_separators() {
    let s = Slo::parse("ttft=500ms, tpot=50ms,itl=0.2s,e2e=2s").unwrap();
    assert_eq!(
        (s.ttft_ms, s.tpot_ms, s.itl_ms, s.e2e_ms),
        (Some(500.0), Some(50.0), Some(200.0), Some(2000.0))
    );
    let s = Slo::parse("ttft:250us").unwrap();
    assert!(close(s.ttft_ms, 0.25));
    assert_eq!(s.tpot_ms, None);
    assert_eq!(Slo::parse(&s.to_string()).unwrap(), s);
}

#[test]
fn slo_errors_name_the_bad_part() {
    for (spec, needle) in [
        ("", "empty"),
        ("ttft=500", "no unit"),
        ("ttfx=5ms", "ttfx"),
        ("ttft=5ms,ttft=6ms", "twice"),
        ("ttft=5min", "min"),
        ("ttft=0ms", "positive"),
        ("ttft=1..2ms", "1..2"),
        ("tpot", "name=value"),
        ("ttft=5ms,", "name=value"),
    ] {
        match Slo::parse(spec) {
            Err(CoreError::InvalidSpec { what, reason, .. }) => {
                assert_eq!(what, "SLO");
                assert!(reason.contains(needle), "{spec:?}: {reason}");
            }
            other => panic!("{spec:?} gave {other:?}"),
        }
    }
}

#[test]
fn slo_check_applies_each_limit() {
    let m = multi_token_with_usage().metrics(); // ttft 100, tpot 27.5, max gap 60, e2e 210
    let pass = |s: &str| Slo::parse(s).unwrap().check(&m);
    assert!(pass("ttft=100ms,tpot=27.5ms,itl=60ms,e2e=210ms"));
    assert!(!pass("ttft=99ms"));
    assert!(!pass("tpot=27ms"));
    assert!(!pass("itl=59ms"));
    assert!(!pass("e2e=0.2s"));

    // No answer: a TTFT limit cannot hold; a TPOT limit has nothing to judge.
    let mut t = Timeline::new(0.0);
    t.finish(10.0);
    let empty = t.metrics();
    assert!(!Slo::parse("ttft=1s").unwrap().check(&empty));
    assert!(Slo::parse("tpot=1ms,itl=1ms").unwrap().check(&empty));
}

proptest::proptest! {
    /// Invariants that tie the metrics together for any stream shape: gaps add up to the
    /// decode phase, TPOT (which includes the tail) is never below per-token ITL, and
    /// nothing is NaN.
    #[test]
    fn metrics_are_consistent_for_any_stream(
        reads in proptest::collection::vec((0.0f64..50.0, 0usize..4, 0usize..3), 0..40),
        tail in 0.0f64..20.0,
        usage in proptest::option::of(0u64..200),
    ) {
        let mut t = Timeline::new(0.0);
        let mut now = 0.0;
        let mut output_reads = 0u64;
        let mut deltas = 0u64;
        for &(gap, n_content, n_reasoning) in &reads {
            now += gap;
            let mut events: Vec<StreamEvent> = (0..n_content).map(|_| content("x")).collect();
            events.extend((0..n_reasoning).map(|_| reasoning("y")));
            if n_content + n_reasoning > 0 {
                output_reads += 1;
                deltas += (n_content + n_reasoning) as u64;
            }
            t.on_bytes(now, 1);
            t.on_chunk(now, &events);
        }
        if let Some(n) = usage {
            t.on_chunk(now, &[StreamEvent::Usage(Usage { output_tokens: Some(n), ..Usage::default() })]);
        }
        t.finish(now + tail);
        let m = t.metrics();
        proptest::prop_assert_eq!(m.output_chunks, output_reads);
        proptest::prop_assert_eq!(m.chunk_tokens, deltas);
        proptest::prop_assert_eq!(m.output_tokens, usage.unwrap_or(deltas));
        proptest::prop_assert_eq!(m.itl_chunk_ms.len() as u64, output_reads.saturating_sub(1));
        if let (Some(f), Some(l)) = (t.first_output_ms(), t.last_output_ms()) {
            let sum: f64 = m.itl_chunk_ms.iter().sum();
            proptest::prop_assert!((sum - (l - f)).abs() < 1e-6);
        }
        if let (Some(itl), Some(tpot)) = (m.itl_token_ms, m.tpot_ms) {
            proptest::prop_assert!(tpot >= itl - 1e-9);
        }
        if let (Some(ttfb), Some(ttft)) = (m.ttfb_ms, m.ttft_ms) {
            proptest::prop_assert!(ttft >= ttfb);
        }
        for v in [m.ttft_ms, m.itl_token_ms, m.tpot_ms, m.output_tps, m.decode_tps, m.e2e_ms].into_iter().flatten() {
            proptest::prop_assert!(v.is_finite() && v >= 0.0);
        }
    }
}

#[test]
fn ttft_counts_from_the_request_leaving_and_the_wait_before_is_kept() {
    // Handed to the client at 100 ms, written at 103.5 ms (pool, connection set-up, the
    // client's own scheduling), first token at 150 ms.
    let mut t = Timeline::new(100.0);
    t.on_sent(103.5);
    // Only the first send stamp counts.
    t.on_sent(120.0);
    t.on_bytes(150.0, 20);
    t.on_chunk(150.0, &[content("Hi")]);
    t.finish(160.0);
    assert!(close(Some(t.request_start_ms()), 103.5));
    assert!(close(t.queue_ms(), 3.5));
    let m = t.metrics();
    assert!(close(m.ttft_ms, 46.5), "{:?}", m.ttft_ms);
    assert!(close(m.e2e_ms, 56.5), "{:?}", m.e2e_ms);
    let r = RequestRecord::from_timeline(
        0,
        LoadLevel::Concurrency(1),
        false,
        &t,
        Some(200),
        None,
        false,
    );
    assert!(close(r.queue_ms, 3.5));
    assert!(close(Some(r.start_ms), 103.5));
    // A stamp before the start, or after the first byte, cannot move the start.
    let mut early = Timeline::new(100.0);
    early.on_sent(99.0);
    assert_eq!(early.queue_ms(), None);
    let mut late = Timeline::new(100.0);
    late.on_bytes(150.0, 20);
    late.on_sent(120.0);
    assert!(close(Some(late.request_start_ms()), 100.0));
    assert_eq!(late.queue_ms(), None);
}
