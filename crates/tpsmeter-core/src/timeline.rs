//! When each part of one streamed response arrived, from timestamps the caller supplies.
//!
//! The caller reads the network, stamps each read with its own clock (milliseconds from an
//! origin it chooses: `Instant` natively, `performance.now()` in the browser), decodes the
//! read into [`StreamEvent`]s and hands both here. The timeline owns no clock, so the same
//! code times native and browser runs; every metric is derived from it afterwards
//! ([`Timeline::metrics`]), never measured separately.
//!
//! Granularity: **one call to [`Timeline::on_chunk`] is one network read** (a "chunk"). A
//! read may carry several SSE events and each event several tokens; all of them get the
//! read's timestamp, because that is when the client could first see them.

use serde::{Deserialize, Serialize};

use crate::event::{FinishReason, StreamEvent, Usage};
use crate::metrics::RequestMetrics;

/// One network read that carried output text of one kind (answer or reasoning).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ChunkMark {
    /// When the read completed (caller's clock, ms).
    pub t_ms: f64,
    /// Characters (Unicode scalar values) of text of this kind in the read.
    pub chars: usize,
    /// Non-empty delta events of this kind in the read. Most servers send one token per
    /// event, so this is the chunk-based token count when no `usage` arrives.
    pub deltas: usize,
}

/// A browser paint that showed new text (first `requestAnimationFrame` after the DOM update).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PaintMark {
    pub t_ms: f64,
    /// Characters made visible by this paint.
    pub chars: usize,
}

/// An error the server sent inside the stream, and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamErrorMark {
    pub t_ms: f64,
    pub code: Option<String>,
    pub message: String,
}

/// The arrival record of one streamed request.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    request_start_ms: f64,
    /// Time between the caller's first stamp and the request's bytes going out, when the
    /// caller could see the latter ([`Timeline::on_sent`]).
    queue_ms: Option<f64>,
    first_byte_ms: Option<f64>,
    bytes: u64,
    /// Reads carrying answer text or tool-call arguments (the model's visible output).
    content: Vec<ChunkMark>,
    /// Reads carrying reasoning / thinking text, kept apart from the answer.
    reasoning: Vec<ChunkMark>,
    /// Every read that carried output of either kind, once per read. Kept separately rather
    /// than merged from the two lists by timestamp: a coarse clock (the browser's 100 µs)
    /// can give two different reads the same stamp, and both are real chunks.
    output_reads: Vec<f64>,
    paints: Vec<PaintMark>,
    usage: Option<Usage>,
    finish_reason: Option<FinishReason>,
    error: Option<StreamErrorMark>,
    saw_done: bool,
    end_ms: Option<f64>,
}

impl Timeline {
    /// Starts a timeline for a request sent at `request_start_ms` (just before the request
    /// is written to the connection).
    pub fn new(request_start_ms: f64) -> Timeline {
        Timeline {
            request_start_ms,
            queue_ms: None,
            first_byte_ms: None,
            bytes: 0,
            content: Vec::new(),
            reasoning: Vec::new(),
            output_reads: Vec::new(),
            paints: Vec::new(),
            usage: None,
            finish_reason: None,
            error: None,
            saw_done: false,
            end_ms: None,
        }
    }

    /// Records that `n` body bytes arrived at `t_ms`. The first non-empty read is the time
    /// to first byte; call this for every read, before [`Timeline::on_chunk`].
    pub fn on_bytes(&mut self, t_ms: f64, n: usize) {
        if n == 0 {
            return;
        }
        if self.first_byte_ms.is_none() {
            self.first_byte_ms = Some(t_ms);
        }
        self.bytes = self.bytes.saturating_add(n as u64);
    }

    /// Records the events decoded from one network read that completed at `t_ms`.
    ///
    /// Empty deltas (OpenAI's role-only first chunk, keep-alive deltas) are ignored so they
    /// cannot start the clock on the first token: vLLM's benchmark counts a role-only chunk
    /// as the first token, a known flaw we avoid. Tool-call argument fragments count as
    /// answer output: they are generated tokens the caller receives.
    pub fn on_chunk(&mut self, t_ms: f64, events: &[StreamEvent]) {
        let mut content = ChunkMark {
            t_ms,
            chars: 0,
            deltas: 0,
        };
        let mut reasoning = content;
        for event in events {
            match event {
                StreamEvent::ContentDelta { text } if !text.is_empty() => {
                    content.chars += text.chars().count();
                    content.deltas += 1;
                }
                StreamEvent::ToolCallDelta { arguments, .. } if !arguments.is_empty() => {
                    content.chars += arguments.chars().count();
                    content.deltas += 1;
                }
                StreamEvent::ReasoningDelta { text } if !text.is_empty() => {
                    reasoning.chars += text.chars().count();
                    reasoning.deltas += 1;
                }
                StreamEvent::Usage(u) => match &mut self.usage {
                    Some(old) => old.merge(u),
                    None => self.usage = Some(u.clone()),
                },
                StreamEvent::Finish { reason } => self.finish_reason = Some(reason.clone()),
                // The first error is the cause; later ones are usually consequences.
                StreamEvent::Error { code, message } if self.error.is_none() => {
                    self.error = Some(StreamErrorMark {
                        t_ms,
                        code: code.clone(),
                        message: message.clone(),
                    });
                }
                StreamEvent::Done => self.saw_done = true,
                _ => {}
            }
        }
        if content.deltas > 0 {
            self.content.push(content);
        }
        if reasoning.deltas > 0 {
            self.reasoning.push(reasoning);
        }
        if content.deltas > 0 || reasoning.deltas > 0 {
            self.output_reads.push(t_ms);
        }
    }

    /// Records a browser paint at `t_ms` that made `chars` new characters visible.
    pub fn on_paint(&mut self, t_ms: f64, chars: usize) {
        self.paints.push(PaintMark { t_ms, chars });
    }

    /// Records the end of the request at `t_ms`: the stream ended, failed or was cancelled.
    /// Only the first call counts.
    pub fn finish(&mut self, t_ms: f64) {
        if self.end_ms.is_none() {
            self.end_ms = Some(t_ms);
        }
    }

    pub fn request_start_ms(&self) -> f64 {
        self.request_start_ms
    }

    /// The request's bytes went out at `t_ms`, later than the start it was created with
    /// (the native client sees the moment its HTTP stack pulls the body to write it): the
    /// start moves there, and the wait before it (connection pool, TCP and TLS set-up, the
    /// client's own scheduling among many requests) is kept as [`Timeline::queue_ms`]. So
    /// TTFT and e2e count from the request leaving, and the client's own overhead at high
    /// concurrency is not charged to the server. Only the first call counts; a stamp
    /// earlier than the start, after the first byte, or not finite is ignored.
    pub fn on_sent(&mut self, t_ms: f64) {
        let valid = t_ms.is_finite() && t_ms >= self.request_start_ms;
        if valid && self.queue_ms.is_none() && self.first_byte_ms.is_none() {
            self.queue_ms = Some(t_ms - self.request_start_ms);
            self.request_start_ms = t_ms;
        }
    }

    /// See [`Timeline::on_sent`].
    pub fn queue_ms(&self) -> Option<f64> {
        self.queue_ms
    }

    pub fn first_byte_ms(&self) -> Option<f64> {
        self.first_byte_ms
    }

    /// Total body bytes seen.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Reads that carried answer text (or tool-call arguments), in arrival order.
    pub fn content_chunks(&self) -> &[ChunkMark] {
        &self.content
    }

    /// Reads that carried reasoning text, in arrival order.
    pub fn reasoning_chunks(&self) -> &[ChunkMark] {
        &self.reasoning
    }

    pub fn paints(&self) -> &[PaintMark] {
        &self.paints
    }

    /// Server-reported usage, merged over every usage event (later fields win).
    pub fn usage(&self) -> Option<&Usage> {
        self.usage.as_ref()
    }

    pub fn finish_reason(&self) -> Option<&FinishReason> {
        self.finish_reason.as_ref()
    }

    /// The first error event the server sent inside the stream.
    pub fn stream_error(&self) -> Option<&StreamErrorMark> {
        self.error.as_ref()
    }

    /// Whether the protocol's end marker arrived (a stream without it was cut).
    pub fn saw_done(&self) -> bool {
        self.saw_done
    }

    pub fn end_ms(&self) -> Option<f64> {
        self.end_ms
    }

    /// When the first output token of any kind (reasoning or answer) arrived: the start of
    /// the decode phase.
    pub fn first_output_ms(&self) -> Option<f64> {
        self.output_reads.first().copied()
    }

    /// When the last output token of any kind arrived.
    pub fn last_output_ms(&self) -> Option<f64> {
        self.output_reads.last().copied()
    }

    /// The latest stamp before the end: the last output, else the first byte, else the
    /// start. Where a timeline that was never finished is taken to end.
    pub fn last_stamp_ms(&self) -> f64 {
        [self.last_output_ms(), self.first_byte_ms]
            .into_iter()
            .flatten()
            .fold(self.request_start_ms, f64::max)
    }

    /// Arrival times of every read that carried output of any kind, in arrival order, one
    /// entry per read even when it carried both reasoning and answer text.
    pub fn output_chunk_times(&self) -> &[f64] {
        &self.output_reads
    }

    /// The metrics of this request. See [`RequestMetrics`] for every definition.
    pub fn metrics(&self) -> RequestMetrics {
        RequestMetrics::from_timeline(self, None)
    }

    /// The metrics, with the output token count from a tokenizer re-count of the text when
    /// the API reported no usage (usage still wins when present).
    pub fn metrics_with_tokenizer_count(&self, output_tokens: u64) -> RequestMetrics {
        RequestMetrics::from_timeline(self, Some(output_tokens))
    }
}
