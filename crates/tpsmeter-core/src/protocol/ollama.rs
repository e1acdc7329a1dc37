//! Ollama's native NDJSON streams, `/api/chat` and `/api/generate` (one adapter: the two
//! differ only in where the text sits).
//!
//! - `message.content` (chat) / `response` (generate) → content; `message.thinking` /
//!   `thinking` → reasoning; `message.tool_calls[]` → whole tool calls (Ollama does not
//!   fragment them; the index counts calls in the stream, `arguments` re-serialised);
//! - the line with `done: true` → usage (`prompt_eval_count`, `eval_count`, and the
//!   nanosecond `eval_duration` / `prompt_eval_duration` converted to milliseconds), finish
//!   (`done_reason`; `stop` when an old server omits it), done;
//! - `{"error": "..."}` → error.

use crate::protocol::value::Value;

use crate::error::{CoreError, Result};
use crate::event::{FinishReason, StreamEvent, Usage};
use crate::protocol::json::{
    Fields, Keys, Shape, any, boolean, count, error_event, object, objects, parse_with, string,
};
use crate::protocol::{Adapter, push_text};

/// Ollama reports durations in nanoseconds; we use milliseconds.
const NANOS_PER_MILLI: f64 = 1e6;

#[derive(Debug)]
struct Line {
    message: Option<Message>,
    response: Option<String>,
    thinking: Option<String>,
    done: bool,
    done_reason: Option<String>,
    prompt_eval_count: Option<u64>,
    prompt_eval_duration: Option<u64>,
    eval_count: Option<u64>,
    eval_duration: Option<u64>,
    error: Option<Value>,
}

#[derive(Debug)]
struct Message {
    content: Option<String>,
    thinking: Option<String>,
    tool_calls: Option<Vec<ToolCall>>,
}

#[derive(Debug)]
struct ToolCall {
    id: Option<String>,
    function: Option<Function>,
}

#[derive(Debug)]
struct Function {
    name: Option<String>,
    arguments: Option<Value>,
}

/// The keys this adapter reads (see `Keys`).
const KEYS: Keys = Keys {
    read: &[
        "message",
        "content",
        "thinking",
        "tool_calls",
        "response",
        "done_reason",
        "prompt_eval_count",
        "prompt_eval_duration",
        "eval_count",
        "eval_duration",
        "id",
        "function",
        "name",
        "done",
    ],
    whole: &["error", "arguments"],
};

impl Line {
    fn decode(mut f: Fields) -> Result<Line, Shape> {
        Ok(Line {
            message: object(&mut f, "message")?
                .map(|mut m| {
                    Ok(Message {
                        content: string(&mut m, "content")?,
                        thinking: string(&mut m, "thinking")?,
                        tool_calls: objects(&mut m, "tool_calls", ToolCall::decode)?,
                    })
                })
                .transpose()?,
            response: string(&mut f, "response")?,
            thinking: string(&mut f, "thinking")?,
            done: done(&mut f)?,
            done_reason: string(&mut f, "done_reason")?,
            prompt_eval_count: count(&mut f, "prompt_eval_count")?,
            prompt_eval_duration: count(&mut f, "prompt_eval_duration")?,
            eval_count: count(&mut f, "eval_count")?,
            eval_duration: count(&mut f, "eval_duration")?,
            error: any(&mut f, "error"),
        })
    }
}

/// `done`: `false` when missing, but unlike the optional fields never `null`.
fn done(f: &mut Fields) -> Result<bool, Shape> {
    if f.get("done").is_some_and(Value::is_null) {
        return Err(Shape::null("done", "a boolean"));
    }
    Ok(boolean(f, "done")?.unwrap_or(false))
}

impl ToolCall {
    fn decode(mut f: Fields) -> Result<ToolCall, Shape> {
        Ok(ToolCall {
            id: string(&mut f, "id")?,
            function: object(&mut f, "function")?
                .map(|mut f| {
                    Ok(Function {
                        name: string(&mut f, "name")?,
                        arguments: any(&mut f, "arguments"),
                    })
                })
                .transpose()?,
        })
    }
}

#[derive(Debug, Default)]
pub(crate) struct Ollama {
    /// Tool calls seen so far: the next call's index.
    calls: u32,
}

impl Adapter for Ollama {
    fn on_message(&mut self, _event: &str, data: &str, out: &mut Vec<StreamEvent>) -> Result<()> {
        let line = parse_with("ollama line", &KEYS, data, Line::decode)?;
        if let Some(error) = &line.error {
            out.push(error_event(error));
            return Ok(());
        }
        push_text(out, line.thinking, true);
        push_text(out, line.response, false);
        if let Some(message) = line.message {
            push_text(out, message.thinking, true);
            push_text(out, message.content, false);
            for call in message.tool_calls.into_iter().flatten() {
                let (name, arguments) = match call.function {
                    Some(f) => (f.name, f.arguments.map(|a| a.to_string())),
                    None => (None, None),
                };
                out.push(StreamEvent::ToolCallDelta {
                    index: self.calls,
                    id: call.id,
                    name,
                    arguments: arguments.unwrap_or_default(),
                });
                self.calls += 1;
            }
        }
        if line.done {
            out.push(StreamEvent::Usage(Usage {
                input_tokens: line.prompt_eval_count,
                output_tokens: line.eval_count,
                reasoning_tokens: None,
                server_decode_ms: line.eval_duration.map(|ns| ns as f64 / NANOS_PER_MILLI),
                server_prefill_ms: line
                    .prompt_eval_duration
                    .map(|ns| ns as f64 / NANOS_PER_MILLI),
                cached_input_tokens: None,
            }));
            let reason = match line.done_reason.as_deref() {
                None | Some("stop") => FinishReason::Stop,
                Some("length") => FinishReason::Length,
                Some(other) => FinishReason::Other(other.to_owned()),
            };
            out.push(StreamEvent::Finish { reason });
            out.push(StreamEvent::Done);
        }
        Ok(())
    }

    fn on_end(&mut self, _out: &mut Vec<StreamEvent>) -> Result<()> {
        Err(CoreError::TruncatedStream {
            expected: "a line with \"done\": true",
        })
    }
}
