//! Incremental framing of response bodies: server-sent events and NDJSON, fed arbitrary
//! byte chunks, with streaming UTF-8 validation and every length capped.
//!
//! The decoders know nothing of any API; [`crate::protocol`] interprets what they frame.

pub mod limits;
mod lines;
pub mod ndjson;
pub mod sse;
mod utf8;

pub use limits::Limits;
pub use ndjson::NdjsonDecoder;
pub use sse::{SseDecoder, SseEvent};
