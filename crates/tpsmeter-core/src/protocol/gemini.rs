//! Google Gemini `models/{model}:streamGenerateContent?alt=sse`: every SSE event is one
//! `GenerateContentResponse`.
//!
//! - `candidates[].content.parts[]`: `text` → content, or reasoning when the part has
//!   `thought: true`; `functionCall {id?, name, args}` → one whole tool call (Gemini does not
//!   fragment arguments; the index counts calls in the stream, `args` re-serialised);
//! - `candidates[].finishReason` → finish (`STOP` becomes `tool_calls` when the stream held a
//!   function call); `promptFeedback.blockReason` (prompt blocked, no candidates) → finish
//!   `content_filter`;
//! - `usageMetadata` → usage: input `promptTokenCount`, output `candidatesTokenCount +
//!   thoughtsTokenCount` (our `output_tokens` includes reasoning, Gemini's
//!   `candidatesTokenCount` does not), reasoning `thoughtsTokenCount`, cached input
//!   `cachedContentTokenCount` (a part of `promptTokenCount`);
//! - `{"error": {...}}` → error.
//!
//! **End rule.** The stream has no end marker: the server just closes the body. A clean
//! end of body after at least one event that carried a `finishReason` (or a prompt block)
//! counts as `Done`; a body that ends before any finish reason was cut → `TruncatedStream`.

use crate::protocol::value::Value;

use crate::error::{CoreError, Result};
use crate::event::{FinishReason, StreamEvent, Usage};
use crate::protocol::json::{
    Fields, Keys, Shape, any, boolean, count, error_event, object, objects, parse_with, string,
};
use crate::protocol::{Adapter, push_text};

#[derive(Debug)]
struct Response {
    candidates: Option<Vec<Candidate>>,
    usage_metadata: Option<UsageMetadata>,
    prompt_feedback: Option<PromptFeedback>,
    error: Option<Value>,
}

#[derive(Debug)]
struct Candidate {
    content: Option<Content>,
    finish_reason: Option<String>,
}

#[derive(Debug)]
struct Content {
    parts: Option<Vec<Part>>,
}

#[derive(Debug)]
struct Part {
    text: Option<String>,
    thought: Option<bool>,
    function_call: Option<FunctionCall>,
}

#[derive(Debug)]
struct FunctionCall {
    id: Option<String>,
    name: Option<String>,
    args: Option<Value>,
}

#[derive(Debug)]
struct UsageMetadata {
    prompt_token_count: Option<u64>,
    candidates_token_count: Option<u64>,
    thoughts_token_count: Option<u64>,
    cached_content_token_count: Option<u64>,
}

#[derive(Debug)]
struct PromptFeedback {
    block_reason: Option<String>,
}

/// The keys this adapter reads (see `Keys`).
const KEYS: Keys = Keys {
    read: &[
        "candidates",
        "usageMetadata",
        "promptTokenCount",
        "candidatesTokenCount",
        "thoughtsTokenCount",
        "cachedContentTokenCount",
        "promptFeedback",
        "blockReason",
        "content",
        "parts",
        "finishReason",
        "text",
        "thought",
        "functionCall",
        "id",
        "name",
    ],
    whole: &["error", "args"],
};

impl Response {
    fn decode(mut f: Fields) -> Result<Response, Shape> {
        Ok(Response {
            candidates: objects(&mut f, "candidates", Candidate::decode)?,
            usage_metadata: object(&mut f, "usageMetadata")?
                .map(|mut u| {
                    Ok(UsageMetadata {
                        prompt_token_count: count(&mut u, "promptTokenCount")?,
                        candidates_token_count: count(&mut u, "candidatesTokenCount")?,
                        thoughts_token_count: count(&mut u, "thoughtsTokenCount")?,
                        cached_content_token_count: count(&mut u, "cachedContentTokenCount")?,
                    })
                })
                .transpose()?,
            prompt_feedback: object(&mut f, "promptFeedback")?
                .map(|mut p| {
                    Ok(PromptFeedback {
                        block_reason: string(&mut p, "blockReason")?,
                    })
                })
                .transpose()?,
            error: any(&mut f, "error"),
        })
    }
}

impl Candidate {
    fn decode(mut f: Fields) -> Result<Candidate, Shape> {
        Ok(Candidate {
            content: object(&mut f, "content")?
                .map(|mut c| {
                    Ok(Content {
                        parts: objects(&mut c, "parts", Part::decode)?,
                    })
                })
                .transpose()?,
            finish_reason: string(&mut f, "finishReason")?,
        })
    }
}

impl Part {
    fn decode(mut f: Fields) -> Result<Part, Shape> {
        Ok(Part {
            text: string(&mut f, "text")?,
            thought: boolean(&mut f, "thought")?,
            function_call: object(&mut f, "functionCall")?
                .map(|mut c| {
                    Ok(FunctionCall {
                        id: string(&mut c, "id")?,
                        name: string(&mut c, "name")?,
                        args: any(&mut c, "args"),
                    })
                })
                .transpose()?,
        })
    }
}

#[derive(Debug, Default)]
pub(crate) struct Gemini {
    /// Function calls seen so far: the next call's index.
    calls: u32,
    /// Whether a finish reason (or prompt block) arrived: the end-of-body rule.
    finished: bool,
}

impl Adapter for Gemini {
    fn on_message(&mut self, _event: &str, data: &str, out: &mut Vec<StreamEvent>) -> Result<()> {
        let response = parse_with("gemini response", &KEYS, data, Response::decode)?;
        if let Some(error) = &response.error {
            out.push(error_event(error));
            return Ok(());
        }
        for candidate in response.candidates.into_iter().flatten() {
            let parts = candidate.content.and_then(|c| c.parts);
            for part in parts.into_iter().flatten() {
                push_text(out, part.text, part.thought == Some(true));
                if let Some(call) = part.function_call {
                    out.push(StreamEvent::ToolCallDelta {
                        index: self.calls,
                        id: call.id,
                        name: call.name,
                        arguments: call.args.map(|a| a.to_string()).unwrap_or_default(),
                    });
                    self.calls += 1;
                }
            }
            if let Some(reason) = candidate.finish_reason {
                self.finished = true;
                out.push(StreamEvent::Finish {
                    reason: self.finish_reason(reason),
                });
            }
        }
        if let Some(reason) = response.prompt_feedback.and_then(|p| p.block_reason) {
            self.finished = true;
            out.push(StreamEvent::Finish {
                reason: if reason == "BLOCK_REASON_UNSPECIFIED" {
                    FinishReason::Other(reason)
                } else {
                    FinishReason::ContentFilter
                },
            });
        }
        if let Some(u) = response.usage_metadata {
            let output = match (u.candidates_token_count, u.thoughts_token_count) {
                (None, None) => None,
                (c, t) => Some(c.unwrap_or(0) + t.unwrap_or(0)),
            };
            out.push(StreamEvent::Usage(Usage {
                input_tokens: u.prompt_token_count,
                output_tokens: output,
                reasoning_tokens: u.thoughts_token_count,
                cached_input_tokens: u.cached_content_token_count,
                ..Usage::default()
            }));
        }
        Ok(())
    }

    fn on_end(&mut self, out: &mut Vec<StreamEvent>) -> Result<()> {
        if self.finished {
            out.push(StreamEvent::Done);
            Ok(())
        } else {
            Err(CoreError::TruncatedStream {
                expected: "a candidate with finishReason",
            })
        }
    }
}

impl Gemini {
    fn finish_reason(&self, reason: String) -> FinishReason {
        match reason.as_str() {
            "STOP" if self.calls > 0 => FinishReason::ToolCalls,
            "STOP" => FinishReason::Stop,
            "MAX_TOKENS" => FinishReason::Length,
            "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII"
            | "IMAGE_SAFETY" => FinishReason::ContentFilter,
            _ => FinishReason::Other(reason),
        }
    }
}
