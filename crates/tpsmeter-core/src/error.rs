//! The one error type of this crate.

use crate::quoted::Quoted;

/// Everything that can go wrong while decoding or interpreting a stream, or building a
/// request. Variants carry the offending values so the message names the culprit.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CoreError {
    /// A single line (SSE or NDJSON) grew past its cap before its terminator arrived.
    #[error("line exceeds the limit of {limit} bytes")]
    LineTooLong { limit: usize },
    /// One SSE event's accumulated `data` grew past its cap.
    #[error("event data exceeds the limit of {limit} bytes")]
    EventTooLarge { limit: usize },
    /// Bytes that are not UTF-8 where the protocol requires UTF-8.
    #[error("invalid UTF-8 at byte {offset} of the stream")]
    InvalidUtf8 { offset: u64 },
    /// A payload that should be JSON is not, or has the wrong shape.
    #[error(
        "malformed JSON in {context}: {message}; payload starts {}",
        Quoted(excerpt)
    )]
    MalformedJson {
        context: &'static str,
        message: String,
        excerpt: String,
    },
    /// The stream ended before the protocol's end marker (`[DONE]`, `message_stop`, ...).
    #[error("stream ended before its end marker ({expected})")]
    TruncatedStream { expected: &'static str },
    /// A request option the chosen API cannot express, or a malformed base URL.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// A user-supplied specification (SLO list, concurrency list, ...) that does not parse.
    #[error("invalid {what} {}: {reason}", Quoted(input))]
    InvalidSpec {
        what: &'static str,
        input: String,
        reason: String,
    },
    /// A report written with a schema version this build does not read.
    #[error("report schema version {found} is not supported (this build reads {supported})")]
    UnsupportedSchemaVersion { found: u64, supported: u32 },
}

/// Shorthand used throughout the crate.
pub type Result<T, E = CoreError> = std::result::Result<T, E>;
