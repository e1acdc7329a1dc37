//! Adapter cases the golden streams do not cover: server variants and rarer shapes.
#![allow(clippy::unwrap_used)]

// In the browser (`cargo xtask browser-test`) the same `#[test]` functions run in headless
// Chromium through wasm-bindgen-test.
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

use tpsmeter_core::{Api, CoreError, FinishReason, StreamEvent, StreamParser, Usage};

fn parse(api: Api, body: &str) -> (Vec<StreamEvent>, Result<(), CoreError>) {
    let mut p = StreamParser::new(api);
    let mut events = p.feed(body.as_bytes()).unwrap();
    match p.finish() {
        Ok(e) => {
            events.extend(e);
            (events, Ok(()))
        }
        Err(e) => (events, Err(e)),
    }
}

#[test]
fn old_vllm_error_object_is_an_error() {
    let (events, end) = parse(
        Api::OpenaiChat,
        "data: {\"object\":\"error\",\"message\":\"too long\",\"type\":\"BadRequestError\",\"code\":400}\n\n",
    );
    assert_eq!(
        events,
        vec![StreamEvent::Error {
            code: Some("BadRequestError".into()),
            message: "too long".into()
        }]
    );
    assert!(end.is_ok());
}

#[test]
fn llama_cpp_timings_without_usage_still_report_server_counts() {
    let (events, _) = parse(
        Api::OpenaiChat,
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}],\"timings\":{\"prompt_n\":3,\"prompt_ms\":1.5,\"predicted_n\":7,\"predicted_ms\":70.0}}\n\ndata: [DONE]\n\n",
    );
    assert_eq!(
        events,
        vec![
            StreamEvent::Finish {
                reason: FinishReason::Length
            },
            StreamEvent::Usage(Usage {
                input_tokens: Some(3),
                output_tokens: Some(7),
                reasoning_tokens: None,
                server_decode_ms: Some(70.0),
                server_prefill_ms: Some(1.5),
                cached_input_tokens: None,
            }),
            StreamEvent::Done,
        ]
    );
}

#[test]
fn null_choices_and_unknown_fields_are_tolerated() {
    let (events, end) = parse(
        Api::OpenaiChat,
        "data: {\"choices\":null,\"usage\":null,\"system_fingerprint\":\"x\",\"new_field\":{\"a\":[1]}}\n\ndata: [DONE]\n\n",
    );
    assert_eq!(events, vec![StreamEvent::Done]);
    assert!(end.is_ok());
}

#[test]
fn anthropic_unknown_event_with_new_shape_is_ignored() {
    let (events, _) = parse(
        Api::Anthropic,
        "event: future_thing\ndata: {\"type\":\"future_thing\",\"delta\":\"a string now\"}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    assert_eq!(events, vec![StreamEvent::Done]);
}

#[test]
fn responses_event_kind_falls_back_to_the_sse_name() {
    let (events, _) = parse(
        Api::OpenaiResponses,
        "event: response.output_text.delta\ndata: {\"delta\":\"hi\"}\n\n",
    );
    assert_eq!(
        events,
        vec![StreamEvent::ContentDelta { text: "hi".into() }]
    );
}

#[test]
fn gemini_blocked_prompt_is_a_content_filter_finish_and_a_clean_end() {
    let (events, end) = parse(
        Api::Gemini,
        "data: {\"promptFeedback\":{\"blockReason\":\"SAFETY\"},\"usageMetadata\":{\"promptTokenCount\":4}}\r\n\r\n",
    );
    assert_eq!(
        events,
        vec![
            StreamEvent::Finish {
                reason: FinishReason::ContentFilter
            },
            StreamEvent::Usage(Usage {
                input_tokens: Some(4),
                ..Usage::default()
            }),
            StreamEvent::Done,
        ]
    );
    assert!(end.is_ok());
}

#[test]
fn ollama_without_done_reason_finishes_with_stop() {
    let (events, end) = parse(
        Api::OllamaChat,
        "{\"message\":{\"role\":\"assistant\",\"content\":\"x\"},\"done\":false}\n{\"done\":true,\"eval_count\":1,\"eval_duration\":1000000}\n",
    );
    assert_eq!(events.len(), 4);
    assert_eq!(
        events[2],
        StreamEvent::Finish {
            reason: FinishReason::Stop
        }
    );
    assert!(end.is_ok());
}

#[test]
fn ollama_stream_without_done_line_is_truncated() {
    let (_, end) = parse(Api::OllamaGenerate, "{\"response\":\"x\",\"done\":false}\n");
    assert!(matches!(end, Err(CoreError::TruncatedStream { .. })));
}

#[test]
fn bytes_seen_counts_every_byte_fed() {
    let mut p = StreamParser::new(Api::OpenaiChat);
    p.feed(b"\xEF\xBB\xBF: c\r").unwrap();
    p.feed(b"\n").unwrap();
    assert_eq!(p.bytes_seen(), 8);
}

#[test]
fn content_as_a_list_of_parts_splits_text_and_thinking() {
    // Mistral's reasoning models stream `content` as typed parts instead of a string.
    let (events, _) = parse(
        Api::OpenaiChat,
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":[{\"type\":\"thinking\",\"thinking\":[{\"type\":\"text\",\"text\":\"hmm\"}]}]}}]}\n\n\
         data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":[{\"type\":\"text\",\"text\":\"yes\"}]}}]}\n\n\
         data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":{\"future\":1}}}]}\n\n",
    );
    assert_eq!(
        events,
        vec![
            StreamEvent::ReasoningDelta { text: "hmm".into() },
            StreamEvent::ContentDelta { text: "yes".into() },
        ]
    );
}

#[test]
fn named_error_event_with_plain_text_payload_is_an_error() {
    for api in [Api::OpenaiChat, Api::OpenaiCompletions] {
        let (events, end) = parse(api, "event: error\ndata: upstream timed out\n\n");
        assert_eq!(
            events,
            vec![StreamEvent::Error {
                code: None,
                message: "upstream timed out".into()
            }],
            "{api}"
        );
        assert!(end.is_ok());
    }
}

#[test]
fn truncation_is_reported_again_by_a_second_finish() {
    let mut p = StreamParser::new(Api::Anthropic);
    p.feed(b"event: ping\ndata: {\"type\":\"ping\"}\n\n")
        .unwrap();
    let first = p.finish();
    assert!(matches!(first, Err(CoreError::TruncatedStream { .. })));
    assert_eq!(p.finish(), first);
}

#[test]
fn vercel_ui_abort_is_an_error_with_code_abort() {
    let (events, end) = parse(
        Api::VercelUi,
        "data: {\"type\":\"text-delta\",\"id\":\"0\",\"delta\":\"Hi\"}\n\n\
         data: {\"type\":\"abort\"}\n\n\
         data: [DONE]\n\n",
    );
    assert_eq!(
        events,
        vec![
            StreamEvent::ContentDelta { text: "Hi".into() },
            StreamEvent::Error {
                code: Some("abort".into()),
                message: "stream aborted".into()
            },
        ]
    );
    assert!(end.is_ok());
}

#[test]
fn vercel_ui_finish_reasons_default_to_stop_and_keep_unknown_ones() {
    for (part, reason) in [
        (r#"{"type":"finish"}"#, FinishReason::Stop),
        (
            r#"{"type":"finish","finishReason":"length"}"#,
            FinishReason::Length,
        ),
        (
            r#"{"type":"finish","finishReason":"content-filter"}"#,
            FinishReason::ContentFilter,
        ),
        (
            r#"{"type":"finish","finishReason":"unknown"}"#,
            FinishReason::Other("unknown".into()),
        ),
    ] {
        let (events, end) = parse(Api::VercelUi, &format!("data: {part}\n\ndata: [DONE]\n\n"));
        assert_eq!(
            events,
            vec![StreamEvent::Finish { reason }, StreamEvent::Done],
            "{part}"
        );
        assert!(end.is_ok());
    }
}

#[test]
fn vercel_ui_usage_comes_only_from_usage_shaped_message_metadata() {
    let (events, _) = parse(
        Api::VercelUi,
        "data: {\"type\":\"message-metadata\",\"messageMetadata\":{\"usage\":{\"inputTokens\":5}}}\n\n\
         data: {\"type\":\"finish\",\"messageMetadata\":{\"usage\":{\"outputTokens\":\"many\"},\"createdAt\":1}}\n\n\
         data: {\"type\":\"finish\",\"messageMetadata\":\"just a string\"}\n\n",
    );
    assert_eq!(
        events,
        vec![
            StreamEvent::Usage(Usage {
                input_tokens: Some(5),
                ..Usage::default()
            }),
            StreamEvent::Finish {
                reason: FinishReason::Stop
            },
            StreamEvent::Finish {
                reason: FinishReason::Stop
            },
        ]
    );
}

#[test]
fn vercel_ui_known_part_with_a_wrong_field_type_is_malformed() {
    let mut p = StreamParser::new(Api::VercelUi);
    let fed =
        p.feed(b"data: {\"type\":\"text-delta\",\"id\":\"0\",\"delta\":{\"text\":\"x\"}}\n\n");
    assert!(
        matches!(fed, Err(CoreError::MalformedJson { .. })),
        "{fed:?}"
    );
}

#[test]
fn vercel_ui_tool_call_table_is_capped() {
    // Guards memory: a stream that invents a new toolCallId per part must not grow the
    // adapter's table without bound; calls past the cap share one index.
    let mut body = String::new();
    for i in 0..300 {
        body.push_str(&format!(
            "data: {{\"type\":\"tool-input-delta\",\"toolCallId\":\"c{i}\",\"inputTextDelta\":\"x\"}}\n\n"
        ));
    }
    body.push_str("data: [DONE]\n\n");
    let (events, end) = parse(Api::VercelUi, &body);
    assert!(end.is_ok());
    let indexes: Vec<u32> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallDelta { index, .. } => Some(*index),
            _ => None,
        })
        .collect();
    assert_eq!(indexes.len(), 300);
    assert_eq!(indexes[..256], (0..256).collect::<Vec<u32>>()[..]);
    assert!(indexes[256..].iter().all(|&i| i == 256));
}

#[test]
fn anthropic_prompt_caching_counts_the_whole_input_and_its_cached_part() {
    // Anthropic's `input_tokens` is only what follows the last cache breakpoint; the
    // message_delta that ends the stream carries the output count alone.
    let (events, end) = parse(
        Api::Anthropic,
        concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":12,\"cache_creation_input_tokens\":300,\"cache_read_input_tokens\":2000,\"output_tokens\":1}}}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        ),
    );
    assert!(end.is_ok());
    let mut usage = Usage::default();
    for e in &events {
        if let StreamEvent::Usage(u) = e {
            usage.merge(u);
        }
    }
    assert_eq!(usage.input_tokens, Some(2312));
    assert_eq!(usage.cached_input_tokens, Some(2000));
    assert_eq!(usage.output_tokens, Some(9));
}

#[test]
fn gemini_cached_content_is_the_cached_input() {
    let (events, _) = parse(
        Api::Gemini,
        "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"hi\"}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":1500,\"cachedContentTokenCount\":1024,\"candidatesTokenCount\":2}}\r\n\r\n",
    );
    let usage = first_usage(&events);
    assert_eq!(
        usage,
        Some(Usage {
            input_tokens: Some(1500),
            output_tokens: Some(2),
            cached_input_tokens: Some(1024),
            ..Usage::default()
        })
    );
}

#[test]
fn responses_cached_input_comes_from_input_tokens_details() {
    let (events, _) = parse(
        Api::OpenaiResponses,
        "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":1200,\"input_tokens_details\":{\"cached_tokens\":1024},\"output_tokens\":5}}}\n\n",
    );
    let usage = first_usage(&events);
    assert_eq!(
        usage,
        Some(Usage {
            input_tokens: Some(1200),
            output_tokens: Some(5),
            cached_input_tokens: Some(1024),
            ..Usage::default()
        })
    );
}

/// The first usage report among `events`.
fn first_usage(events: &[StreamEvent]) -> Option<Usage> {
    events.iter().find_map(|e| match e {
        StreamEvent::Usage(u) => Some(u.clone()),
        _ => None,
    })
}
