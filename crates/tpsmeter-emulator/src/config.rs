//! What the emulator does per request: the token schedule and the fault to inject.

use std::time::Duration;

/// The token schedule of every streamed response.
///
/// All times count from the moment the request's headers arrived (its *arrival*), on absolute
/// deadlines, so scheduling jitter never accumulates along a stream: token `i` (0-based) is
/// due at `arrival + ttft + i * itl`. A chunk of `k` tokens
/// ([`EmulatorConfig::tokens_per_chunk`]) is sent when its first token is due, so chunk `j`
/// leaves at `arrival + ttft + j * k * itl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    /// Time to the first content token.
    pub ttft: Duration,
    /// Time between consecutive tokens.
    pub itl: Duration,
    /// Tokens per response; the request's own `max_tokens` (in each API's spelling) caps it,
    /// and then the response ends with the API's "length" finish reason.
    pub output_tokens: u32,
}

impl Default for Schedule {
    fn default() -> Self {
        Schedule {
            ttft: Duration::from_millis(50),
            itl: Duration::from_millis(20),
            output_tokens: 64,
        }
    }
}

/// A failure to inject into every response. Token positions count content tokens sent
/// before the fault strikes (`tokens: 0` strikes before the first one).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Fault {
    /// A well-formed stream.
    #[default]
    None,
    /// Answer at once with this HTTP status and body (`application/json`), no stream.
    Status {
        /// The HTTP status code (e.g. 500, 503, 400).
        code: u16,
        /// The response body, sent as is.
        body: String,
    },
    /// Answer 429 with a `Retry-After: retry_after_s` header and an OpenAI-style error body.
    RateLimited {
        /// Seconds written in `Retry-After`.
        retry_after_s: u32,
    },
    /// After `tokens` tokens, send nothing for `for_`, then go on (the rest of the schedule
    /// moves back by `for_`). Exercises the client's idle timeout.
    StallAfter {
        /// Tokens sent before the stall.
        tokens: u32,
        /// How long the stream stays silent.
        for_: Duration,
    },
    /// After `tokens` tokens, abort the connection: no end marker, no final HTTP chunk.
    CutAfter {
        /// Tokens sent before the cut.
        tokens: u32,
    },
    /// After `tokens` tokens, end the HTTP body cleanly but without the API's end marker
    /// (`[DONE]`, `message_stop`, `response.completed`, `done: true`, a finish reason).
    EndWithoutMarkerAfter {
        /// Tokens sent before the early end.
        tokens: u32,
    },
    /// After `tokens` tokens, send the API's in-stream error event (HTTP status stays 200),
    /// then end the stream.
    ErrorEventAfter {
        /// Tokens sent before the error event.
        tokens: u32,
    },
    /// After `tokens` tokens, send one event whose JSON is cut off, then go on normally.
    MalformedJsonAfter {
        /// Tokens sent before the malformed event.
        tokens: u32,
    },
    /// Before the first token, send one line of `bytes` bytes with no line end until its
    /// last byte (in 64 KiB writes), then go on normally. Exercises the client's line cap.
    OversizedLine {
        /// The line's length in bytes.
        bytes: usize,
    },
    /// After `tokens` tokens, send one content chunk whose text holds the bytes `FF FE`
    /// (never valid UTF-8), then go on normally.
    InvalidUtf8After {
        /// Tokens sent before the invalid chunk.
        tokens: u32,
    },
    /// Hold the response headers back this long; the whole schedule starts after them.
    SlowHeaders(Duration),
}

/// How the emulator behaves. Every request gets the same schedule and fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmulatorConfig {
    /// The token schedule.
    pub schedule: Schedule,
    /// The fault injected into every response.
    pub fault: Fault,
    /// Tokens per content chunk (at least 1; 0 is taken as 1). More than one models servers
    /// that send several tokens per event (speculative decoding, batching proxies).
    pub tokens_per_chunk: u32,
    /// The TCP port on 127.0.0.1; 0 picks a free one (see [`crate::Emulator::base_url`]).
    pub port: u16,
    /// Keep a [`crate::RequestRecord`] of each response's send times, for benchmarks that
    /// separate client error from server jitter. Off by default: it grows without bound.
    pub record: bool,
}

impl Default for EmulatorConfig {
    fn default() -> Self {
        EmulatorConfig {
            schedule: Schedule::default(),
            fault: Fault::None,
            tokens_per_chunk: 1,
            port: 0,
            record: false,
        }
    }
}
