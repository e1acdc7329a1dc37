//! What OpenAI chat completions and legacy completions streams share: the chunk shape,
//! `[DONE]`, usage (with llama.cpp's `timings`), finish reasons and in-stream errors.

use crate::protocol::value::Value;

use crate::cap::cap_chars;
use crate::decode::limits::MAX_ERROR_EXCERPT_CHARS;
use crate::error::Result;
use crate::event::{FinishReason, StreamEvent, Usage};
use crate::protocol::json::{
    Fields, Keys, Shape, any, count, error_event, index, number, object, objects, parse_value,
    parse_with, string,
};

/// The end marker of both OpenAI streams.
pub(super) const DONE_MARKER: &str = "[DONE]";

/// One `data:` chunk of `chat.completion.chunk` or `text_completion`.
#[derive(Debug)]
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

#[derive(Debug)]
pub(super) struct Choice {
    pub delta: Option<Delta>,
    /// Legacy completions put the text here.
    pub text: Option<String>,
    pub finish_reason: Option<String>,
}

#[derive(Debug)]
pub(super) struct Delta {
    /// A string everywhere except a few servers (Mistral's reasoning models) that send a
    /// list of typed parts; see [`Content`].
    pub content: Option<Content>,
    /// DeepSeek, vLLM, llama.cpp.
    pub reasoning_content: Option<String>,
    /// OpenRouter, newer vLLM, Ollama's OpenAI endpoint.
    pub reasoning: Option<String>,
    pub tool_calls: Option<Vec<ToolCall>>,
}

/// `delta.content`: a string, or a list of parts `{"type": "text", "text": ...}` /
/// `{"type": "thinking", "thinking": [{"type": "text", "text": ...}]}`. Other shapes are
/// ignored rather than failing the stream.
#[derive(Debug)]
pub(super) enum Content {
    Text(String),
    Parts(Vec<Value>),
    Other,
}

impl From<Value> for Content {
    fn from(value: Value) -> Content {
        match value {
            Value::String(text) => Content::Text(text),
            Value::Array(parts) => Content::Parts(parts),
            _ => Content::Other,
        }
    }
}

impl Content {
    /// (answer text, reasoning text), each possibly empty.
    pub(super) fn split(self) -> (String, String) {
        match self {
            Content::Text(text) => (text, String::new()),
            Content::Parts(parts) => {
                let (mut text, mut reasoning) = (String::new(), String::new());
                for part in &parts {
                    match part.get("type").and_then(Value::as_str) {
                        Some("thinking") => collect_text(part.get("thinking"), &mut reasoning),
                        _ => collect_text(Some(part), &mut text),
                    }
                }
                (text, reasoning)
            }
            Content::Other => (String::new(), String::new()),
        }
    }
}

/// Appends the `text` of a part, or of every part in a list of parts.
fn collect_text(value: Option<&Value>, into: &mut String) {
    match value {
        Some(Value::Array(parts)) => parts.iter().for_each(|p| collect_text(Some(p), into)),
        Some(Value::String(s)) => into.push_str(s),
        Some(part) => {
            if let Some(text) = part.get("text").and_then(Value::as_str) {
                into.push_str(text);
            }
        }
        None => {}
    }
}

#[derive(Debug)]
pub(super) struct ToolCall {
    pub index: Option<u32>,
    pub id: Option<String>,
    pub function: Option<FunctionDelta>,
}

#[derive(Debug)]
pub(super) struct FunctionDelta {
    pub name: Option<String>,
    pub arguments: Option<String>,
}

#[derive(Debug)]
pub(super) struct OpenaiUsage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub completion_tokens_details: Option<CompletionDetails>,
    /// `prompt_tokens_details.cached_tokens`.
    pub cached_tokens: Option<u64>,
}

#[derive(Debug)]
pub(super) struct CompletionDetails {
    pub reasoning_tokens: Option<u64>,
}

#[derive(Debug)]
pub(super) struct Timings {
    pub prompt_n: Option<u64>,
    pub cache_n: Option<u64>,
    pub prompt_ms: Option<f64>,
    pub predicted_n: Option<u64>,
    pub predicted_ms: Option<f64>,
}

/// The keys this adapter reads (see `Keys`).
const KEYS: Keys = Keys {
    read: &[
        "choices",
        "usage",
        "timings",
        "object",
        "delta",
        "text",
        "finish_reason",
        "reasoning_content",
        "reasoning",
        "tool_calls",
        "index",
        "id",
        "function",
        "name",
        "arguments",
        "prompt_tokens",
        "completion_tokens",
        "completion_tokens_details",
        "reasoning_tokens",
        "prompt_tokens_details",
        "cached_tokens",
        "cache_n",
        "prompt_n",
        "prompt_ms",
        "predicted_n",
        "predicted_ms",
    ],
    whole: &["error", "content"],
};

impl Chunk {
    fn decode(mut f: Fields) -> Result<Chunk, Shape> {
        Ok(Chunk {
            choices: objects(&mut f, "choices", Choice::decode)?,
            usage: object(&mut f, "usage")?
                .map(OpenaiUsage::decode)
                .transpose()?,
            timings: object(&mut f, "timings")?
                .map(Timings::decode)
                .transpose()?,
            error: any(&mut f, "error"),
            object: string(&mut f, "object")?,
        })
    }
}

impl Choice {
    fn decode(mut f: Fields) -> Result<Choice, Shape> {
        Ok(Choice {
            delta: object(&mut f, "delta")?.map(Delta::decode).transpose()?,
            text: string(&mut f, "text")?,
            finish_reason: string(&mut f, "finish_reason")?,
        })
    }
}

impl Delta {
    fn decode(mut f: Fields) -> Result<Delta, Shape> {
        Ok(Delta {
            content: any(&mut f, "content").map(Content::from),
            reasoning_content: string(&mut f, "reasoning_content")?,
            reasoning: string(&mut f, "reasoning")?,
            tool_calls: objects(&mut f, "tool_calls", ToolCall::decode)?,
        })
    }
}

impl ToolCall {
    fn decode(mut f: Fields) -> Result<ToolCall, Shape> {
        Ok(ToolCall {
            index: index(&mut f, "index")?,
            id: string(&mut f, "id")?,
            function: object(&mut f, "function")?
                .map(|mut f| {
                    Ok(FunctionDelta {
                        name: string(&mut f, "name")?,
                        arguments: string(&mut f, "arguments")?,
                    })
                })
                .transpose()?,
        })
    }
}

impl OpenaiUsage {
    fn decode(mut f: Fields) -> Result<OpenaiUsage, Shape> {
        Ok(OpenaiUsage {
            prompt_tokens: count(&mut f, "prompt_tokens")?,
            completion_tokens: count(&mut f, "completion_tokens")?,
            completion_tokens_details: object(&mut f, "completion_tokens_details")?
                .map(|mut f| {
                    Ok(CompletionDetails {
                        reasoning_tokens: count(&mut f, "reasoning_tokens")?,
                    })
                })
                .transpose()?,
            cached_tokens: object(&mut f, "prompt_tokens_details")?
                .map(|mut f| count(&mut f, "cached_tokens"))
                .transpose()?
                .flatten(),
        })
    }
}

impl Timings {
    fn decode(mut f: Fields) -> Result<Timings, Shape> {
        Ok(Timings {
            prompt_n: count(&mut f, "prompt_n")?,
            cache_n: count(&mut f, "cache_n")?,
            prompt_ms: number(&mut f, "prompt_ms")?,
            predicted_n: count(&mut f, "predicted_n")?,
            predicted_ms: number(&mut f, "predicted_ms")?,
        })
    }
}

/// What one data payload is.
pub(super) enum Message {
    Chunk(Chunk),
    Done,
    /// An `event: error` whose payload is not a chunk with an `error` field.
    Error(StreamEvent),
}

/// Parses one SSE event of an OpenAI-style stream.
pub(super) fn parse_message(context: &'static str, event: &str, data: &str) -> Result<Message> {
    if data.trim_ascii() == DONE_MARKER {
        return Ok(Message::Done);
    }
    if event == "error" {
        // Some servers (TGI, proxies) name error events; the payload may even be plain text.
        let error = match parse_value(data) {
            Ok(value) => error_event(value.get("error").unwrap_or(&value)),
            Err(_) => StreamEvent::Error {
                code: None,
                message: cap_chars(data, MAX_ERROR_EXCERPT_CHARS),
            },
        };
        return Ok(Message::Error(error));
    }
    parse_with(context, &KEYS, data, Chunk::decode).map(Message::Chunk)
}

/// Parses one SSE event of an OpenAI-style stream and emits what ends or fails it
/// (`[DONE]`, a named error event, an error chunk). Returns the chunk only when it is an
/// ordinary one whose choices and usage the adapter still has to map.
pub(super) fn open_chunk(
    context: &'static str,
    event: &str,
    data: &str,
    out: &mut Vec<StreamEvent>,
) -> Result<Option<Chunk>> {
    let chunk = match parse_message(context, event, data)? {
        Message::Chunk(chunk) => chunk,
        Message::Done => {
            out.push(StreamEvent::Done);
            return Ok(None);
        }
        Message::Error(error) => {
            out.push(error);
            return Ok(None);
        }
    };
    if push_error(&chunk, data, out) {
        return Ok(None);
    }
    Ok(Some(chunk))
}

/// Emits the error of an error chunk; returns whether the chunk was one.
pub(super) fn push_error(chunk: &Chunk, data: &str, out: &mut Vec<StreamEvent>) -> bool {
    if let Some(error) = &chunk.error {
        out.push(error_event(error));
        return true;
    }
    if chunk.object.as_deref() == Some("error") {
        // The whole payload is the error object.
        if let Ok(value) = parse_value(data) {
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
        // llama.cpp's `prompt_n` counts the tokens it evaluated, `cache_n` those it reused:
        // the prompt is both.
        usage.input_tokens = match (t.prompt_n, t.cache_n) {
            (Some(p), Some(c)) => Some(p.saturating_add(c)),
            (p, _) => p,
        };
        usage.cached_input_tokens = t.cache_n;
        usage.output_tokens = t.predicted_n;
        usage.server_prefill_ms = t.prompt_ms;
        usage.server_decode_ms = t.predicted_ms;
    }
    if let Some(u) = &chunk.usage {
        usage.merge(&Usage {
            input_tokens: u.prompt_tokens,
            cached_input_tokens: u.cached_tokens,
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
