//! Caps on every length the stream decoders accept from the network.
//!
//! A server (or anything between it and us) controls these bytes; without caps a stream
//! with no line terminator would grow a buffer until the process runs out of memory.

/// Default cap on one line (SSE or NDJSON), terminator excluded: 4 MiB.
///
/// The largest legitimate lines are whole-response summaries: OpenAI Responses'
/// `response.completed` repeats the full output text, and long outputs with reasoning reach
/// a few hundred KiB. 4 MiB leaves an order of magnitude of headroom while bounding memory
/// per stream at high concurrency.
pub const DEFAULT_MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// Default cap on one SSE event's accumulated `data` (all its `data:` lines joined): 8 MiB.
///
/// Larger than one line because a server may split a payload over several `data:` lines.
pub const DEFAULT_MAX_EVENT_DATA_BYTES: usize = 8 * 1024 * 1024;

/// Cap, in characters, on the payload excerpt quoted in `MalformedJson` errors: enough to
/// recognise the payload in a log, short enough that an error never carries a whole body.
pub const MAX_ERROR_EXCERPT_CHARS: usize = 96;

/// The caps one decoder applies. `Limits::default()` uses the `DEFAULT_*` constants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest accepted line in bytes, terminator excluded; longer → `CoreError::LineTooLong`.
    pub max_line_bytes: usize,
    /// Largest accepted SSE event data in bytes; larger → `CoreError::EventTooLarge`.
    pub max_event_data_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            max_event_data_bytes: DEFAULT_MAX_EVENT_DATA_BYTES,
        }
    }
}
