//! OpenAI chat completions (`/v1/chat/completions`, `stream: true`) and the many servers
//! that copy it (vLLM, llama.cpp, SGLang, TGI, OpenRouter, ...).
//!
//! Per chunk, in this order: reasoning (`delta.reasoning_content` or `delta.reasoning`),
//! content (`delta.content`), tool-call fragments (`delta.tool_calls[i]`), then
//! `finish_reason`, then `usage` / llama.cpp `timings`. The first chunk usually carries only
//! `role` (and sometimes `content: ""`): it yields nothing. With
//! `stream_options.include_usage` the last chunk has `choices: []` and the usage.
//! `data: [DONE]` ends the stream.

use crate::error::{CoreError, Result};
use crate::event::StreamEvent;
use crate::protocol::openai_common::{DONE_MARKER, finish_reason, open_chunk, push_usage};
use crate::protocol::{Adapter, push_text};

#[derive(Debug, Default)]
pub(crate) struct OpenaiChat;

impl Adapter for OpenaiChat {
    fn on_message(&mut self, event: &str, data: &str, out: &mut Vec<StreamEvent>) -> Result<()> {
        let Some(mut chunk) = open_chunk("openai chat chunk", event, data, out)? else {
            return Ok(());
        };
        for choice in chunk.choices.take().into_iter().flatten() {
            if let Some(delta) = choice.delta {
                push_text(out, delta.reasoning_content, true);
                push_text(out, delta.reasoning, true);
                if let Some(content) = delta.content {
                    let (text, reasoning) = content.split();
                    push_text(out, Some(reasoning), true);
                    push_text(out, Some(text), false);
                }
                for (position, call) in delta.tool_calls.into_iter().flatten().enumerate() {
                    let (name, arguments) = match call.function {
                        Some(f) => (f.name, f.arguments.unwrap_or_default()),
                        None => (None, String::new()),
                    };
                    out.push(StreamEvent::ToolCallDelta {
                        // Some servers omit `index` when there is one call per chunk.
                        index: call.index.unwrap_or(position as u32),
                        id: call.id,
                        name,
                        arguments,
                    });
                }
            }
            if let Some(reason) = choice.finish_reason {
                out.push(StreamEvent::Finish {
                    reason: finish_reason(reason),
                });
            }
        }
        push_usage(&chunk, out);
        Ok(())
    }

    fn on_end(&mut self, _out: &mut Vec<StreamEvent>) -> Result<()> {
        Err(CoreError::TruncatedStream {
            expected: DONE_MARKER,
        })
    }
}
