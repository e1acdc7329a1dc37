//! Vercel AI SDK (v5) UI message stream: what a web app's chat route returns to `useChat`
//! (response header `x-vercel-ai-ui-message-stream: v1`). Every SSE event is one JSON part
//! whose `type` names it; `data: [DONE]` ends the stream.
//!
//! - `text-delta {id, delta}` → content; `reasoning-delta {id, delta}` → reasoning;
//! - `tool-input-start {toolCallId, toolName}` → a tool-call delta with the id and name,
//!   `tool-input-delta {toolCallId, inputTextDelta}` → its argument fragments; the tool-call
//!   index is the order in which each `toolCallId` first appeared (parts carry no index);
//! - `finish {finishReason?, messageMetadata?}` → usage when the app put usage in the metadata
//!   (see [`metadata_usage`]), then finish (`stop` when no reason is given: AI SDK 5.0 sends
//!   none); `message-metadata {messageMetadata}` → usage the same way;
//! - `error {errorText}` → error; `abort` (the app's stream was aborted) → error `abort`;
//! - `start`, `start-step`, `finish-step`, `text-start`/`-end`, `reasoning-start`/`-end`,
//!   `tool-input-available`, `tool-output-*`, `source-*`, `file`, `data-*` (the app's own
//!   parts) and every part type added later are ignored.

use std::hash::{DefaultHasher, Hash, Hasher};

use crate::protocol::value::Value;

use crate::cap::cap_chars;
use crate::decode::limits::MAX_ERROR_EXCERPT_CHARS;
use crate::error::{CoreError, Result};
use crate::event::{FinishReason, StreamEvent, Usage};
use crate::protocol::json::{Fields, Keys, Shape, any, parse_typed, string};
use crate::protocol::openai_common::DONE_MARKER;
use crate::protocol::{Adapter, push_text};

/// Part types whose fields this adapter reads: a wrong shape there is an error, while any
/// other part with an unexpected shape is ignored.
const KNOWN: [&str; 8] = [
    "text-delta",
    "reasoning-delta",
    "tool-input-start",
    "tool-input-delta",
    "finish",
    "message-metadata",
    "error",
    "abort",
];

/// Cap on distinct tool calls remembered per stream. The stream, not the parser, chooses
/// the ids, so the table must not grow with it; calls past the cap share the index
/// `MAX_TOOL_CALLS` (their fragments still count, only their order is lost).
const MAX_TOOL_CALLS: usize = 256;

#[derive(Debug)]
struct Part {
    kind: Option<String>,
    delta: Option<String>,
    tool_call_id: Option<String>,
    tool_name: Option<String>,
    input_text_delta: Option<String>,
    finish_reason: Option<String>,
    /// The app's own JSON (any shape): read leniently, never a reason to fail the stream.
    message_metadata: Option<Value>,
    error_text: Option<String>,
    /// Newer SDKs say why a stream was aborted.
    reason: Option<String>,
}

/// The keys this adapter reads (see `Keys`).
const KEYS: Keys = Keys {
    read: &[
        "type",
        "delta",
        "toolCallId",
        "toolName",
        "inputTextDelta",
        "finishReason",
        "errorText",
        "reason",
    ],
    whole: &["messageMetadata"],
};

impl Part {
    fn decode(mut f: Fields) -> Result<Part, Shape> {
        Ok(Part {
            kind: string(&mut f, "type")?,
            delta: string(&mut f, "delta")?,
            tool_call_id: string(&mut f, "toolCallId")?,
            tool_name: string(&mut f, "toolName")?,
            input_text_delta: string(&mut f, "inputTextDelta")?,
            finish_reason: string(&mut f, "finishReason")?,
            message_metadata: any(&mut f, "messageMetadata"),
            error_text: string(&mut f, "errorText")?,
            reason: string(&mut f, "reason")?,
        })
    }
}

#[derive(Debug, Default)]
pub(crate) struct VercelUi {
    /// Hashes of the tool-call ids seen, in order of first appearance: the position is the
    /// call's index. Hashes rather than the ids themselves keep memory at 8 bytes per call
    /// however long the ids are; a collision between two ids of one stream (2^-64) would
    /// only merge their indexes.
    tool_calls: Vec<u64>,
}

impl VercelUi {
    /// The index of tool call `id`, assigned on its first appearance.
    fn tool_index(&mut self, id: Option<&str>) -> u32 {
        let mut hasher = DefaultHasher::new();
        id.unwrap_or_default().hash(&mut hasher);
        let key = hasher.finish();
        let index = match self.tool_calls.iter().position(|&k| k == key) {
            Some(i) => i,
            None if self.tool_calls.len() < MAX_TOOL_CALLS => {
                self.tool_calls.push(key);
                self.tool_calls.len() - 1
            }
            None => MAX_TOOL_CALLS,
        };
        // Lossless: the index is at most MAX_TOOL_CALLS.
        index as u32
    }
}

impl Adapter for VercelUi {
    fn on_message(&mut self, event: &str, data: &str, out: &mut Vec<StreamEvent>) -> Result<()> {
        if data.trim_ascii() == DONE_MARKER {
            out.push(StreamEvent::Done);
            return Ok(());
        }
        let Some(part) = parse_typed(
            "vercel ui message part",
            &KEYS,
            event,
            data,
            |k| KNOWN.contains(&k),
            Part::decode,
        )?
        else {
            return Ok(());
        };
        match part.kind.as_deref().unwrap_or(event) {
            "text-delta" => push_text(out, part.delta, false),
            "reasoning-delta" => push_text(out, part.delta, true),
            "tool-input-start" => out.push(StreamEvent::ToolCallDelta {
                index: self.tool_index(part.tool_call_id.as_deref()),
                id: part.tool_call_id,
                name: part.tool_name,
                arguments: String::new(),
            }),
            "tool-input-delta" => {
                if let Some(arguments) = part.input_text_delta.filter(|a| !a.is_empty()) {
                    out.push(StreamEvent::ToolCallDelta {
                        index: self.tool_index(part.tool_call_id.as_deref()),
                        id: None,
                        name: None,
                        arguments,
                    });
                }
            }
            "message-metadata" => {
                if let Some(usage) = part.message_metadata.as_ref().and_then(metadata_usage) {
                    out.push(StreamEvent::Usage(usage));
                }
            }
            "finish" => {
                if let Some(usage) = part.message_metadata.as_ref().and_then(metadata_usage) {
                    out.push(StreamEvent::Usage(usage));
                }
                out.push(StreamEvent::Finish {
                    reason: part.finish_reason.map_or(FinishReason::Stop, finish_reason),
                });
            }
            "error" => out.push(StreamEvent::Error {
                code: None,
                message: part
                    .error_text
                    .unwrap_or_else(|| cap_chars(data, MAX_ERROR_EXCERPT_CHARS)),
            }),
            "abort" => out.push(StreamEvent::Error {
                code: Some("abort".into()),
                message: part.reason.unwrap_or_else(|| "stream aborted".into()),
            }),
            _ => {}
        }
        Ok(())
    }

    fn on_end(&mut self, _out: &mut Vec<StreamEvent>) -> Result<()> {
        Err(CoreError::TruncatedStream {
            expected: DONE_MARKER,
        })
    }
}

/// Token counts an app put in its message metadata. The protocol defines no usage field,
/// so this reads the shapes the AI SDK's own docs forward: the `LanguageModelUsage` of the
/// whole run (`totalUsage`, preferred) or of the last step (`usage`), each with
/// `inputTokens`, `outputTokens` and `reasoningTokens`. Anything else gives no usage.
fn metadata_usage(metadata: &Value) -> Option<Usage> {
    let usage = metadata
        .get("totalUsage")
        .or_else(|| metadata.get("usage"))?;
    let count = |field: &str| usage.get(field).and_then(Value::as_u64);
    let usage = Usage {
        input_tokens: count("inputTokens"),
        output_tokens: count("outputTokens"),
        reasoning_tokens: count("reasoningTokens"),
        ..Usage::default()
    };
    (usage != Usage::default()).then_some(usage)
}

/// The AI SDK's finish reasons (`FinishReason` of `ai`, kebab-case).
fn finish_reason(reason: String) -> FinishReason {
    match reason.as_str() {
        "stop" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "tool-calls" => FinishReason::ToolCalls,
        "content-filter" => FinishReason::ContentFilter,
        _ => FinishReason::Other(reason),
    }
}
