//! One finished request as the report stores it: one JSON line per request.

use serde::{Deserialize, Serialize};

use crate::event::FinishReason;
use crate::load::LoadLevel;
use crate::metrics::{RequestMetrics, TokenCountSource};
use crate::redact::Redactor;
use crate::timeline::{StreamErrorMark, Timeline};

/// Cap on a stored error message (characters). Messages may quote a server's body; a
/// misbehaving server must not be able to bloat every record.
pub const MAX_ERROR_MESSAGE_CHARS: usize = 1000;

/// Why a request failed, as a stable machine-readable class.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// HTTP 4xx other than 429.
    #[serde(rename = "http_4xx")]
    Http4xx,
    /// HTTP 5xx.
    #[serde(rename = "http_5xx")]
    Http5xx,
    /// HTTP 429 (see `retry_after_s`).
    RateLimited,
    /// The server answered with a redirect, which is never followed: the request's
    /// credential would go along to wherever the server points.
    Redirect,
    /// The server refused the TCP connection.
    ConnectRefused,
    /// The host name did not resolve.
    Dns,
    /// Any other failure to connect (TLS, reset, unreachable).
    Connect,
    /// The browser blocked the response: the server is reachable but its CORS headers do
    /// not allow the page's origin.
    Cors,
    /// No byte of the response arrived within the timeout.
    TimeoutFirstByte,
    /// The stream went silent mid-response for longer than the idle timeout.
    Stall,
    /// The stream ended before the protocol's end marker.
    Truncated,
    /// The server sent an error event inside the stream.
    StreamError,
    /// A payload that should be JSON was not.
    MalformedJson,
    /// A line or event exceeded its size cap.
    Oversized,
    /// The stream was not valid UTF-8.
    InvalidUtf8,
    /// The run was interrupted (Ctrl-C) while this request was in flight.
    Cancelled,
    /// Anything else.
    Other,
}

impl ErrorClass {
    /// Parses a class by its snake_case name.
    pub fn from_name(name: &str) -> Option<ErrorClass> {
        ErrorClass::ALL.into_iter().find(|c| c.as_str() == name)
    }
}

impl ErrorClass {
    /// Every class, in a stable order.
    pub const ALL: [ErrorClass; 17] = [
        ErrorClass::Http4xx,
        ErrorClass::Http5xx,
        ErrorClass::RateLimited,
        ErrorClass::Redirect,
        ErrorClass::ConnectRefused,
        ErrorClass::Dns,
        ErrorClass::Connect,
        ErrorClass::Cors,
        ErrorClass::TimeoutFirstByte,
        ErrorClass::Stall,
        ErrorClass::Truncated,
        ErrorClass::StreamError,
        ErrorClass::MalformedJson,
        ErrorClass::Oversized,
        ErrorClass::InvalidUtf8,
        ErrorClass::Cancelled,
        ErrorClass::Other,
    ];

    /// The snake_case name used in JSON, CSV and tables.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Http4xx => "http_4xx",
            ErrorClass::Http5xx => "http_5xx",
            ErrorClass::RateLimited => "rate_limited",
            ErrorClass::Redirect => "redirect",
            ErrorClass::ConnectRefused => "connect_refused",
            ErrorClass::Dns => "dns",
            ErrorClass::Connect => "connect",
            ErrorClass::Cors => "cors",
            ErrorClass::TimeoutFirstByte => "timeout_first_byte",
            ErrorClass::Stall => "stall",
            ErrorClass::Truncated => "truncated",
            ErrorClass::StreamError => "stream_error",
            ErrorClass::MalformedJson => "malformed_json",
            ErrorClass::Oversized => "oversized",
            ErrorClass::InvalidUtf8 => "invalid_utf8",
            ErrorClass::Cancelled => "cancelled",
            ErrorClass::Other => "other",
        }
    }
}

impl std::fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A classified failure of one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ErrorRecord {
    pub class: ErrorClass,
    /// Human-readable detail (for HTTP errors, an excerpt of the body). Never a secret: the
    /// caller must not put request headers here. Capped at [`MAX_ERROR_MESSAGE_CHARS`].
    pub message: String,
    pub http_status: Option<u16>,
    /// The server's `Retry-After`, in seconds, when it sent one.
    pub retry_after_s: Option<f64>,
}

impl ErrorRecord {
    /// An error record with `message` capped at [`MAX_ERROR_MESSAGE_CHARS`].
    pub fn new(class: ErrorClass, message: &str) -> ErrorRecord {
        let message = crate::cap::cap_chars(message, MAX_ERROR_MESSAGE_CHARS);
        ErrorRecord {
            class,
            message,
            http_status: None,
            retry_after_s: None,
        }
    }

    /// [`ErrorRecord::new`] with the run's secrets taken out of `message` first: before the
    /// cap, so a key that straddles it is still seen whole.
    pub fn redacted(class: ErrorClass, message: &str, redactor: &Redactor) -> ErrorRecord {
        ErrorRecord::new(class, &redactor.redact(message))
    }

    /// The record of an error event the server sent inside the stream.
    pub fn of_stream_error(e: &StreamErrorMark, redactor: &Redactor) -> ErrorRecord {
        let message = match &e.code {
            Some(code) => format!("{code}: {}", e.message),
            None => e.message.clone(),
        };
        ErrorRecord::redacted(ErrorClass::StreamError, &message, redactor)
    }
}

/// One request of a run. Timestamps are ms on the run's clock (one origin per run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RequestRecord {
    /// Sequence number within the run, unique across levels.
    pub id: u64,
    /// The load this request ran under: on a shard (`tpsmeter bench --shard`), this
    /// machine's share of the run's level.
    pub level: LoadLevel,
    /// Position of the request's level in the run's `config.levels` (0-based): tells the
    /// levels apart where their loads are equal, as two shares of a shard can be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level_index: Option<u32>,
    /// Warm-up requests are recorded but excluded from every summary.
    pub warmup: bool,
    pub start_ms: f64,
    pub first_byte_ms: Option<f64>,
    /// First answer (content) token; reasoning tokens do not count.
    pub first_token_ms: Option<f64>,
    pub end_ms: f64,
    /// Arrival time of every read that carried output, when the run keeps them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_times_ms: Option<Vec<f64>>,
    pub output_tokens: u64,
    pub token_source: TokenCountSource,
    pub input_tokens: Option<u64>,
    pub reasoning_tokens: Option<u64>,
    pub finish_reason: Option<FinishReason>,
    pub http_status: Option<u16>,
    pub error: Option<ErrorRecord>,
    pub metrics: RequestMetrics,
    /// Open loop: when the schedule wanted the request sent (ms on the run's clock); the
    /// gap to `start_ms` is queueing in the client (the concurrency cap was reached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_ms: Option<f64>,
    /// Time the request waited inside the client before it went out, other than setting up
    /// its connection (`dns_ms`, `connect_ms`, `tls_ms`, where they are known). In the
    /// browser: behind the ~6 connections per host HTTP/1.1 allows (Resource Timing), and
    /// part of the measured TTFT and e2e, which count from the `fetch` call (the earliest
    /// stamp a page has); subtract it for the server's share. In the CLI: the connection
    /// pool and the client's own scheduling until its HTTP stack pulled the body to write
    /// it (on https, through reqwest, also the TCP and TLS set-up, which that client does
    /// not time apart); not part of TTFT and e2e, which count from that moment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_ms: Option<f64>,
    /// The negotiated HTTP version ("HTTP/1.1", "HTTP/2.0"; "http/1.1", "h2" in browsers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_version: Option<String>,
    /// Browser: the tab was hidden at some time while this request ran, so paint times
    /// (and possibly timers) were throttled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tab_hidden: Option<bool>,
    /// Input tokens the server took from its prompt cache, where its usage says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u64>,
    /// Multi-turn runs: the request's turn in its conversation (from 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// Multi-turn runs: its conversation (the id of the conversation's first request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<u64>,
    /// Name resolution this request waited for (0 on a reused connection or an IP address).
    /// Absent where the client cannot time it (the CLI's https client; a browser without
    /// `Timing-Allow-Origin` from the server). See docs/metrics.md, "Before the first byte".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns_ms: Option<f64>,
    /// The TCP handshake this request waited for (k6's `http_req_connecting`), 0 on a
    /// reused connection. A server whose listen backlog is full drops the handshake's SYN,
    /// and the client retries 1 s, 3 s, 7 s ... later: that stall is here, not in `wait_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_ms: Option<f64>,
    /// The TLS handshake this request waited for (k6's `http_req_tls_handshaking`), 0 on a
    /// reused connection; absent on plain http.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_ms: Option<f64>,
    /// Server wait (k6's `http_req_waiting`): from the request going out to the first byte
    /// of the response (its status line). A connection the server's kernel accepted but the
    /// server had not yet taken from its backlog waits here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<f64>,
}

impl RequestRecord {
    /// Takes `output_tokens`, a tokenizer's count of the answer text, as the output count
    /// where the server reported none (usage still wins; see
    /// [`Timeline::metrics_with_tokenizer_count`]).
    pub fn recount(&mut self, timeline: &Timeline, output_tokens: u64) {
        let paint = self.metrics.paint.take();
        self.metrics = timeline.metrics_with_tokenizer_count(output_tokens);
        self.metrics.paint = paint;
        self.output_tokens = self.metrics.output_tokens;
        self.token_source = self.metrics.token_source;
    }

    /// Builds the record of a request from its timeline. `error` is the caller's
    /// classification of a transport or protocol failure; when it is `None` but the server
    /// sent an error event in the stream, that becomes a `stream_error`. An unfinished
    /// timeline ends at its last recorded stamp.
    pub fn from_timeline(
        id: u64,
        level: LoadLevel,
        warmup: bool,
        timeline: &Timeline,
        http_status: Option<u16>,
        error: Option<ErrorRecord>,
        keep_chunk_times: bool,
    ) -> RequestRecord {
        let metrics = timeline.metrics();
        let start = timeline.request_start_ms();
        let end_ms = timeline
            .end_ms()
            .unwrap_or_else(|| timeline.last_stamp_ms());
        let error = error.or_else(|| {
            timeline
                .stream_error()
                .map(|e| ErrorRecord::of_stream_error(e, &Redactor::default()))
        });
        RequestRecord {
            id,
            level,
            level_index: None,
            warmup,
            start_ms: start,
            first_byte_ms: timeline.first_byte_ms(),
            first_token_ms: timeline.content_chunks().first().map(|m| m.t_ms),
            end_ms,
            chunk_times_ms: keep_chunk_times.then(|| timeline.output_chunk_times().to_vec()),
            output_tokens: metrics.output_tokens,
            token_source: metrics.token_source,
            input_tokens: metrics.input_tokens,
            reasoning_tokens: metrics.reasoning_tokens,
            finish_reason: timeline.finish_reason().cloned(),
            http_status,
            error,
            metrics,
            scheduled_ms: None,
            queue_ms: timeline.queue_ms(),
            http_version: None,
            cached_input_tokens: timeline.usage().and_then(|u| u.cached_input_tokens),
            turn: None,
            conversation: None,
            tab_hidden: None,
            dns_ms: None,
            connect_ms: None,
            tls_ms: None,
            wait_ms: None,
        }
    }

    /// Takes the run's secrets out of every text in the record that a server chose: the
    /// error message (a body excerpt, a header, a stream error event) and a finish reason
    /// kept verbatim.
    pub fn redact(&mut self, redactor: &Redactor) {
        if redactor.is_empty() {
            return;
        }
        if let Some(e) = &mut self.error {
            redactor.redact_in_place(&mut e.message);
        }
        if let Some(FinishReason::Other(reason)) = &mut self.finish_reason {
            redactor.redact_in_place(reason);
        }
        if let Some(v) = &mut self.http_version {
            redactor.redact_in_place(v);
        }
    }

    /// Whether the request succeeded (no error of any class).
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }

    /// The record as one line of JSON, without the trailing newline: the JSONL form the CLI
    /// appends as each request finishes. (JSON escapes control characters inside strings,
    /// so the line never contains a raw newline.)
    pub fn to_json_line(&self) -> String {
        // Serialising plain data with finite-or-null floats cannot fail; serde_json writes
        // non-finite floats as null rather than erroring.
        serde_json::to_string(self).unwrap_or_else(|e| {
            format!(
                "{{\"id\":{},\"serialise_error\":{:?}}}",
                self.id,
                e.to_string()
            )
        })
    }
}
