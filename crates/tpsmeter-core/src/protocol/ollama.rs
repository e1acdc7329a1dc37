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

use serde::Deserialize;
use serde_json::Value;

use crate::error::{CoreError, Result};
use crate::event::{FinishReason, StreamEvent, Usage};
use crate::protocol::json::{error_event, parse};
use crate::protocol::{Adapter, push_text};

/// Ollama reports durations in nanoseconds; we use milliseconds.
const NANOS_PER_MILLI: f64 = 1e6;

#[derive(Debug, Deserialize)]
struct Line {
    message: Option<Message>,
    response: Option<String>,
    thinking: Option<String>,
    #[serde(default)]
    done: bool,
    done_reason: Option<String>,
    prompt_eval_count: Option<u64>,
    prompt_eval_duration: Option<u64>,
    eval_count: Option<u64>,
    eval_duration: Option<u64>,
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Message {
    content: Option<String>,
    thinking: Option<String>,
    tool_calls: Option<Vec<ToolCall>>,
}

#[derive(Debug, Deserialize)]
struct ToolCall {
    id: Option<String>,
    function: Option<Function>,
}

#[derive(Debug, Deserialize)]
struct Function {
    name: Option<String>,
    arguments: Option<Value>,
}

#[derive(Debug, Default)]
pub(crate) struct Ollama {
    /// Tool calls seen so far: the next call's index.
    calls: u32,
}

impl Adapter for Ollama {
    fn on_message(&mut self, _event: &str, data: &str, out: &mut Vec<StreamEvent>) -> Result<()> {
        let line: Line = parse("ollama line", data)?;
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
