//! OpenAI Responses API (`/v1/responses`, `stream: true`): named events, no `[DONE]`.
//!
//! The event kind is read from the payload's `type` (which mirrors the SSE `event:` name;
//! the name is the fallback for proxies that drop one of them).
//! - `response.output_text.delta` → content;
//! - `response.reasoning_text.delta`, `response.reasoning_summary_text.delta` → reasoning;
//! - `response.output_item.added` with a `function_call` item → the call's id and name;
//!   `response.function_call_arguments.delta` → its argument fragments (`output_index` is
//!   the tool-call index);
//! - `response.completed` → usage, finish (`tool_calls` if the output holds a function call,
//!   else `stop`), done;
//! - `response.incomplete` → usage, finish with `incomplete_details.reason`, done: the
//!   stream ended cleanly, the output was cut by a limit;
//! - `response.failed`, `error` → error.

use crate::protocol::value::Value;

use crate::error::{CoreError, Result};
use crate::event::{FinishReason, StreamEvent, Usage};
use crate::protocol::json::{
    Fields, Keys, Shape, any, count, error_event, index, object, objects, parse_typed, string,
};
use crate::protocol::{Adapter, push_text};

const KNOWN: [&str; 9] = [
    "response.output_text.delta",
    "response.reasoning_text.delta",
    "response.reasoning_summary_text.delta",
    "response.output_item.added",
    "response.function_call_arguments.delta",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
];

#[derive(Debug)]
struct Event {
    kind: Option<String>,
    delta: Option<String>,
    output_index: Option<u32>,
    item: Option<Item>,
    response: Option<Response>,
    /// Top-level fields of the `error` event.
    code: Option<Value>,
    message: Option<String>,
    error: Option<Value>,
}

#[derive(Debug)]
struct Item {
    kind: Option<String>,
    call_id: Option<String>,
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Debug)]
struct Response {
    usage: Option<ResponseUsage>,
    error: Option<Value>,
    incomplete_details: Option<IncompleteDetails>,
    output: Option<Vec<OutputItem>>,
}

#[derive(Debug)]
struct ResponseUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    output_tokens_details: Option<OutputDetails>,
    /// `input_tokens_details.cached_tokens`: the input served from the prompt cache.
    cached_tokens: Option<u64>,
}

#[derive(Debug)]
struct OutputDetails {
    reasoning_tokens: Option<u64>,
}

#[derive(Debug)]
struct IncompleteDetails {
    reason: Option<String>,
}

#[derive(Debug)]
struct OutputItem {
    kind: Option<String>,
}

/// The keys this adapter reads (see `Keys`).
const KEYS: Keys = Keys {
    read: &[
        "type",
        "delta",
        "output_index",
        "item",
        "call_id",
        "name",
        "arguments",
        "response",
        "message",
        "usage",
        "input_tokens",
        "output_tokens",
        "output_tokens_details",
        "reasoning_tokens",
        "input_tokens_details",
        "cached_tokens",
        "incomplete_details",
        "reason",
        "output",
    ],
    whole: &["code", "error"],
};

impl Event {
    fn decode(mut f: Fields) -> Result<Event, Shape> {
        Ok(Event {
            kind: string(&mut f, "type")?,
            delta: string(&mut f, "delta")?,
            output_index: index(&mut f, "output_index")?,
            item: object(&mut f, "item")?
                .map(|mut i| {
                    Ok(Item {
                        kind: string(&mut i, "type")?,
                        call_id: string(&mut i, "call_id")?,
                        name: string(&mut i, "name")?,
                        arguments: string(&mut i, "arguments")?,
                    })
                })
                .transpose()?,
            response: object(&mut f, "response")?
                .map(Response::decode)
                .transpose()?,
            code: any(&mut f, "code"),
            message: string(&mut f, "message")?,
            error: any(&mut f, "error"),
        })
    }
}

impl Response {
    fn decode(mut f: Fields) -> Result<Response, Shape> {
        Ok(Response {
            usage: object(&mut f, "usage")?
                .map(|mut u| {
                    Ok(ResponseUsage {
                        input_tokens: count(&mut u, "input_tokens")?,
                        output_tokens: count(&mut u, "output_tokens")?,
                        output_tokens_details: object(&mut u, "output_tokens_details")?
                            .map(|mut d| {
                                Ok(OutputDetails {
                                    reasoning_tokens: count(&mut d, "reasoning_tokens")?,
                                })
                            })
                            .transpose()?,
                        cached_tokens: object(&mut u, "input_tokens_details")?
                            .map(|mut d| count(&mut d, "cached_tokens"))
                            .transpose()?
                            .flatten(),
                    })
                })
                .transpose()?,
            error: any(&mut f, "error"),
            incomplete_details: object(&mut f, "incomplete_details")?
                .map(|mut d| {
                    Ok(IncompleteDetails {
                        reason: string(&mut d, "reason")?,
                    })
                })
                .transpose()?,
            output: objects(&mut f, "output", |mut o| {
                Ok(OutputItem {
                    kind: string(&mut o, "type")?,
                })
            })?,
        })
    }
}

#[derive(Debug, Default)]
pub(crate) struct OpenaiResponses;

impl Adapter for OpenaiResponses {
    fn on_message(&mut self, event: &str, data: &str, out: &mut Vec<StreamEvent>) -> Result<()> {
        let Some(ev) = parse_typed(
            "openai responses event",
            &KEYS,
            event,
            data,
            |k| KNOWN.contains(&k),
            Event::decode,
        )?
        else {
            return Ok(());
        };
        let kind = ev.kind.as_deref().unwrap_or(event);
        match kind {
            "response.output_text.delta" => push_text(out, ev.delta, false),
            "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => {
                push_text(out, ev.delta, true)
            }
            "response.output_item.added" => {
                if let Some(item) = ev.item
                    && item.kind.as_deref() == Some("function_call")
                {
                    out.push(StreamEvent::ToolCallDelta {
                        index: ev.output_index.unwrap_or(0),
                        id: item.call_id,
                        name: item.name,
                        arguments: item.arguments.unwrap_or_default(),
                    });
                }
            }
            "response.function_call_arguments.delta" => {
                if let Some(arguments) = ev.delta.filter(|d| !d.is_empty()) {
                    out.push(StreamEvent::ToolCallDelta {
                        index: ev.output_index.unwrap_or(0),
                        id: None,
                        name: None,
                        arguments,
                    });
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = ev.response;
                if let Some(u) = response.as_ref().and_then(|r| r.usage.as_ref()) {
                    out.push(StreamEvent::Usage(Usage {
                        input_tokens: u.input_tokens,
                        output_tokens: u.output_tokens,
                        reasoning_tokens: u
                            .output_tokens_details
                            .as_ref()
                            .and_then(|d| d.reasoning_tokens),
                        cached_input_tokens: u.cached_tokens,
                        ..Usage::default()
                    }));
                }
                let reason = if kind == "response.completed" {
                    completed_reason(response.as_ref())
                } else {
                    incomplete_reason(response)
                };
                out.push(StreamEvent::Finish { reason });
                out.push(StreamEvent::Done);
            }
            "response.failed" => {
                let error = ev.response.and_then(|r| r.error);
                out.push(match error {
                    Some(e) => error_event(&e),
                    None => StreamEvent::Error {
                        code: None,
                        message: "response failed".into(),
                    },
                });
            }
            "error" => out.push(match ev.error {
                Some(e) => error_event(&e),
                None => StreamEvent::Error {
                    code: ev.code.and_then(|c| match c {
                        Value::String(s) => Some(s),
                        Value::Number(n) => Some(n.to_string()),
                        _ => None,
                    }),
                    message: ev.message.unwrap_or_default(),
                },
            }),
            _ => {}
        }
        Ok(())
    }

    fn on_end(&mut self, _out: &mut Vec<StreamEvent>) -> Result<()> {
        Err(CoreError::TruncatedStream {
            expected: "response.completed",
        })
    }
}

fn completed_reason(response: Option<&Response>) -> FinishReason {
    let called_tool = response
        .and_then(|r| r.output.as_ref())
        .is_some_and(|o| o.iter().any(|i| i.kind.as_deref() == Some("function_call")));
    if called_tool {
        FinishReason::ToolCalls
    } else {
        FinishReason::Stop
    }
}

fn incomplete_reason(response: Option<Response>) -> FinishReason {
    let reason = response
        .and_then(|r| r.incomplete_details)
        .and_then(|d| d.reason);
    match reason.as_deref() {
        Some("max_output_tokens") => FinishReason::Length,
        Some("content_filter") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_owned()),
        None => FinishReason::Other("incomplete".into()),
    }
}
