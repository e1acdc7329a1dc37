//! Protocol adapters: one per API, each mapping the framed messages of its wire format
//! (SSE events or NDJSON lines) onto [`StreamEvent`]s.
//!
//! Shared rules:
//! - unknown event types and unknown fields are ignored (APIs add both all the time);
//! - a payload that is not JSON, or a known event whose fields have the wrong type, is
//!   `CoreError::MalformedJson` with a capped excerpt;
//! - empty text deltas produce nothing (a role-only first chunk is not a token);
//! - an `Error` or `Done` event ends the stream: [`crate::stream::StreamParser`] ignores
//!   anything after it, and `finish()` does not also report truncation after an `Error`.

mod anthropic;
mod decoder;
mod gemini;
mod json;
mod ollama;
mod openai_chat;
mod openai_common;
mod openai_completions;
mod openai_responses;
mod value;
mod vercel_ui;

pub use decoder::{Decoder, Family};

use crate::error::Result;
use crate::event::StreamEvent;

/// Interprets one API's framed messages.
pub(crate) trait Adapter: Send {
    /// One framed message: an SSE event (its type and data) or an NDJSON line (type `""`).
    fn on_message(&mut self, event: &str, data: &str, out: &mut Vec<StreamEvent>) -> Result<()>;

    /// The body ended before any `Done`/`Error`: either emits the closing events of a
    /// protocol without an end marker (Gemini) or returns `CoreError::TruncatedStream`.
    fn on_end(&mut self, out: &mut Vec<StreamEvent>) -> Result<()>;
}

/// Pushes a text delta unless it is empty.
fn push_text(out: &mut Vec<StreamEvent>, text: Option<String>, reasoning: bool) {
    match text {
        Some(text) if !text.is_empty() => out.push(if reasoning {
            StreamEvent::ReasoningDelta { text }
        } else {
            StreamEvent::ContentDelta { text }
        }),
        _ => {}
    }
}
