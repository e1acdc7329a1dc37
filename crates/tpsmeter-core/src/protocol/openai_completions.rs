//! OpenAI legacy completions (`/v1/completions`, `stream: true`): the text arrives in
//! `choices[].text`; otherwise the stream is the chat stream's (usage chunk with
//! `choices: []`, llama.cpp `timings`, `data: {"error": ...}`, `data: [DONE]`).

use crate::error::{CoreError, Result};
use crate::event::StreamEvent;
use crate::protocol::openai_common::{DONE_MARKER, finish_reason, open_chunk, push_usage};
use crate::protocol::{Adapter, push_text};

#[derive(Debug, Default)]
pub(crate) struct OpenaiCompletions;

impl Adapter for OpenaiCompletions {
    fn on_message(&mut self, event: &str, data: &str, out: &mut Vec<StreamEvent>) -> Result<()> {
        let Some(mut chunk) = open_chunk("openai completions chunk", event, data, out)? else {
            return Ok(());
        };
        for choice in chunk.choices.take().into_iter().flatten() {
            push_text(out, choice.text, false);
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
