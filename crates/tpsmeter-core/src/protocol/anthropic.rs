//! Anthropic Messages (`/v1/messages`, `stream: true`).
//!
//! - `message_start` → usage (`input_tokens`, the first `output_tokens`); with prompt
//!   caching, Anthropic's `input_tokens` counts only what follows the last cache breakpoint,
//!   so our input is it plus `cache_creation_input_tokens` and `cache_read_input_tokens`,
//!   and the cached input is `cache_read_input_tokens`;
//! - `content_block_start`: a `tool_use` (or `server_tool_use`) block → tool-call delta with
//!   its id and name (the block `index` is the tool-call index); text/thinking blocks that
//!   start with non-empty text → that text;
//! - `content_block_delta`: `text_delta` → content, `thinking_delta` → reasoning,
//!   `input_json_delta` → tool-call arguments, `signature_delta` (an integrity signature,
//!   not model output) ignored;
//! - `message_delta` → usage (cumulative: later reports supersede) and finish;
//! - `message_stop` → done; `ping`, `content_block_stop` ignored; `error` → error.

use crate::protocol::value::Value;

use crate::error::{CoreError, Result};
use crate::event::{FinishReason, StreamEvent, Usage};
use crate::protocol::json::{
    Fields, Keys, Shape, any, count, error_event, index, object, parse_typed, string,
};
use crate::protocol::{Adapter, push_text};

const KNOWN: [&str; 6] = [
    "message_start",
    "content_block_start",
    "content_block_delta",
    "message_delta",
    "message_stop",
    "error",
];

#[derive(Debug)]
struct Event {
    kind: Option<String>,
    index: Option<u32>,
    message: Option<Message>,
    content_block: Option<Block>,
    delta: Option<Delta>,
    usage: Option<AnthropicUsage>,
    error: Option<Value>,
}

#[derive(Debug)]
struct Message {
    usage: Option<AnthropicUsage>,
}

#[derive(Debug)]
struct Block {
    kind: Option<String>,
    id: Option<String>,
    name: Option<String>,
    text: Option<String>,
    thinking: Option<String>,
}

/// Both `content_block_delta.delta` and `message_delta.delta`.
#[derive(Debug)]
struct Delta {
    kind: Option<String>,
    text: Option<String>,
    thinking: Option<String>,
    partial_json: Option<String>,
    stop_reason: Option<String>,
}

#[derive(Debug)]
struct AnthropicUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

/// The keys this adapter reads (see `Keys`).
const KEYS: Keys = Keys {
    read: &[
        "type",
        "index",
        "message",
        "usage",
        "content_block",
        "id",
        "name",
        "text",
        "thinking",
        "delta",
        "partial_json",
        "stop_reason",
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    ],
    whole: &["error"],
};

impl Event {
    fn decode(mut f: Fields) -> Result<Event, Shape> {
        Ok(Event {
            kind: string(&mut f, "type")?,
            index: index(&mut f, "index")?,
            message: object(&mut f, "message")?
                .map(|mut m| {
                    Ok(Message {
                        usage: object(&mut m, "usage")?.map(usage_fields).transpose()?,
                    })
                })
                .transpose()?,
            content_block: object(&mut f, "content_block")?
                .map(|mut b| {
                    Ok(Block {
                        kind: string(&mut b, "type")?,
                        id: string(&mut b, "id")?,
                        name: string(&mut b, "name")?,
                        text: string(&mut b, "text")?,
                        thinking: string(&mut b, "thinking")?,
                    })
                })
                .transpose()?,
            delta: object(&mut f, "delta")?
                .map(|mut d| {
                    Ok(Delta {
                        kind: string(&mut d, "type")?,
                        text: string(&mut d, "text")?,
                        thinking: string(&mut d, "thinking")?,
                        partial_json: string(&mut d, "partial_json")?,
                        stop_reason: string(&mut d, "stop_reason")?,
                    })
                })
                .transpose()?,
            usage: object(&mut f, "usage")?.map(usage_fields).transpose()?,
            error: any(&mut f, "error"),
        })
    }
}

fn usage_fields(mut u: Fields) -> Result<AnthropicUsage, Shape> {
    Ok(AnthropicUsage {
        input_tokens: count(&mut u, "input_tokens")?,
        output_tokens: count(&mut u, "output_tokens")?,
        cache_creation_input_tokens: count(&mut u, "cache_creation_input_tokens")?,
        cache_read_input_tokens: count(&mut u, "cache_read_input_tokens")?,
    })
}

#[derive(Debug, Default)]
pub(crate) struct Anthropic;

impl Adapter for Anthropic {
    fn on_message(&mut self, event: &str, data: &str, out: &mut Vec<StreamEvent>) -> Result<()> {
        let Some(ev) = parse_typed(
            "anthropic event",
            &KEYS,
            event,
            data,
            |k| KNOWN.contains(&k),
            Event::decode,
        )?
        else {
            return Ok(());
        };
        match ev.kind.as_deref().unwrap_or(event) {
            "message_start" => {
                if let Some(u) = ev.message.and_then(|m| m.usage) {
                    out.push(usage(&u));
                }
            }
            "content_block_start" => {
                let Some(block) = ev.content_block else {
                    return Ok(());
                };
                match block.kind.as_deref() {
                    Some("tool_use" | "server_tool_use") => out.push(StreamEvent::ToolCallDelta {
                        index: ev.index.unwrap_or(0),
                        id: block.id,
                        name: block.name,
                        // The block's `input` is `{}` here; the arguments follow as deltas.
                        arguments: String::new(),
                    }),
                    Some("text") => push_text(out, block.text, false),
                    Some("thinking") => push_text(out, block.thinking, true),
                    _ => {}
                }
            }
            "content_block_delta" => {
                let Some(delta) = ev.delta else {
                    return Ok(());
                };
                match delta.kind.as_deref() {
                    Some("text_delta") => push_text(out, delta.text, false),
                    Some("thinking_delta") => push_text(out, delta.thinking, true),
                    Some("input_json_delta") => {
                        if let Some(arguments) = delta.partial_json.filter(|j| !j.is_empty()) {
                            out.push(StreamEvent::ToolCallDelta {
                                index: ev.index.unwrap_or(0),
                                id: None,
                                name: None,
                                arguments,
                            });
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(u) = &ev.usage {
                    out.push(usage(u));
                }
                if let Some(reason) = ev.delta.and_then(|d| d.stop_reason) {
                    out.push(StreamEvent::Finish {
                        reason: finish_reason(reason),
                    });
                }
            }
            "message_stop" => out.push(StreamEvent::Done),
            "error" => out.push(match ev.error {
                Some(e) => error_event(&e),
                None => StreamEvent::Error {
                    code: None,
                    message: data.to_owned(),
                },
            }),
            _ => {}
        }
        Ok(())
    }

    fn on_end(&mut self, _out: &mut Vec<StreamEvent>) -> Result<()> {
        Err(CoreError::TruncatedStream {
            expected: "message_stop",
        })
    }
}

fn usage(u: &AnthropicUsage) -> StreamEvent {
    // The whole prompt is the three parts; a report without `input_tokens` (a
    // `message_delta` that carries only the output count) leaves the input as it was.
    let input = u.input_tokens.map(|n| {
        n.saturating_add(u.cache_creation_input_tokens.unwrap_or(0))
            .saturating_add(u.cache_read_input_tokens.unwrap_or(0))
    });
    StreamEvent::Usage(Usage {
        input_tokens: input,
        output_tokens: u.output_tokens,
        cached_input_tokens: u.cache_read_input_tokens,
        ..Usage::default()
    })
}

fn finish_reason(reason: String) -> FinishReason {
    match reason.as_str() {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "refusal" => FinishReason::ContentFilter,
        _ => FinishReason::Other(reason),
    }
}
