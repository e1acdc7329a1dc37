//! What OpenAI chat completions and legacy completions streams share: the chunk shape,
//! `[DONE]`, usage (with llama.cpp's `timings`), finish reasons and in-stream errors.

use serde::Deserialize;
use serde_json::Value;

use crate::error::Result;
use crate::event::{FinishReason, StreamEvent, Usage};
use crate::protocol::json::{error_event, parse};

/// The end marker of both OpenAI streams.
pub(super) const DONE_MARKER: &str = "[DONE]";

/// One `data:` chunk of `chat.completion.chunk` or `text_completion`.
#[derive(Debug, Deserialize)]
pub(super) struct Chunk {
    /// Absent or empty on the `include_usage` chunk: never index it blindly.
    pub choices: Option<Vec<Choice>>,
    pub usage: Option<OpenaiUsage>,
    /// llama.cpp's server-side timings.
    pub timings: Option<Timings>,
    /// `data: {"error": ...}`, often after HTTP 200.
    pub error: Option<Value>,
    /// Older vLLM sends errors as `{"object": "error", "message": ..., "code": ...}`.
    pub object: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Choice {
    pub delta: Option<Delta>,
    /// Legacy completions put the text here.
    pub text: Option<String>,
    pub finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Delta {
    pub content: Option<String>,
    /// DeepSeek, vLLM, llama.cpp.
    pub reasoning_content: Option<String>,
    /// OpenRouter, newer vLLM, Ollama's OpenAI endpoint.
    pub reasoning: Option<String>,
    pub tool_calls: Option<Vec<ToolCall>>,
}

#[derive(Debug, Deserialize)]
pub(super) struct ToolCall {
    pub index: Option<u32>,
    pub id: Option<String>,
    pub function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
pub(super) struct FunctionDelta {
    pub name: Option<String>,
    pub arguments: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct OpenaiUsage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Debug, Deserialize)]
pub(super) struct CompletionDetails {
    pub reasoning_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Timings {
    pub prompt_n: Option<u64>,
    pub prompt_ms: Option<f64>,
    pub predicted_n: Option<u64>,
    pub predicted_ms: Option<f64>,
}

/// Parses one data payload; `Ok(None)` for `[DONE]`.
pub(super) fn parse_chunk(context: &'static str, data: &str) -> Result<Option<Chunk>> {
    if data.trim_ascii() == DONE_MARKER {
        return Ok(None);
    }
    parse(context, data).map(Some)
}

/// Emits the error of an error chunk; returns whether the chunk was one.
pub(super) fn push_error(chunk: &Chunk, data: &str, out: &mut Vec<StreamEvent>) -> bool {
    if let Some(error) = &chunk.error {
        out.push(error_event(error));
        return true;
    }
    if chunk.object.as_deref() == Some("error") {
        // The whole payload is the error object.
        if let Ok(value) = serde_json::from_str::<Value>(data) {
            out.push(error_event(&value));
            return true;
        }
    }
    false
}

/// Emits `Usage` when the chunk carries `usage` or llama.cpp `timings`.
pub(super) fn push_usage(chunk: &Chunk, out: &mut Vec<StreamEvent>) {
    if chunk.usage.is_none() && chunk.timings.is_none() {
        return;
    }
    let mut usage = Usage::default();
    if let Some(t) = &chunk.timings {
        // Server counts; the `usage` object, when present, takes precedence below.
        usage.input_tokens = t.prompt_n;
        usage.output_tokens = t.predicted_n;
        usage.server_prefill_ms = t.prompt_ms;
        usage.server_decode_ms = t.predicted_ms;
    }
    if let Some(u) = &chunk.usage {
        usage.merge(&Usage {
            input_tokens: u.prompt_tokens,
            output_tokens: u.completion_tokens,
            reasoning_tokens: u
                .completion_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens),
            ..Usage::default()
        });
    }
    out.push(StreamEvent::Usage(usage));
}

/// OpenAI finish reasons (shared by most OpenAI-compatible servers).
pub(super) fn finish_reason(reason: String) -> FinishReason {
    match reason.as_str() {
        "stop" | "eos" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "content_filter" => FinishReason::ContentFilter,
        _ => FinishReason::Other(reason),
    }
}
