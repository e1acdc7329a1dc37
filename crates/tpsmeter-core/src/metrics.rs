//! The per-request latency and throughput metrics, each defined once, here.
//!
//! Every metric is derived from a [`Timeline`]; none is measured separately. Peer tools use
//! the same names for different quantities (vLLM's TPOT excludes TTFT, GuideLLM's includes
//! it; vLLM's ITL is per chunk, GenAI-Perf's per token); `docs/metrics.md` maps each of ours
//! to theirs. Times are milliseconds, rates tokens per second.
//!
//! Terms used below:
//! - *start*: the timeline's `request_start_ms` (the request was about to be sent).
//! - *output token*: a generated token of any kind, answer or reasoning (servers' `usage`
//!   counts both together). *Answer* output includes tool-call argument fragments.
//! - *first / last output*: the network reads that carried the first / last non-empty
//!   output delta of any kind. The decode phase runs from first to last output.
//! - *end*: the time passed to [`Timeline::finish`] (end marker, error or cancellation).
//! - *n*: the output token count, from the source [`TokenCountSource`] names.
//!
//! Metrics that are undefined for a request (no content, fewer than two tokens, no end) are
//! `None`, never NaN or infinity, so summaries simply leave that request out.

use serde::{Deserialize, Serialize};

use crate::paint::PaintMetrics;
use crate::timeline::Timeline;

/// Where a request's output token count came from, in order of preference.
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
pub enum TokenCountSource {
    /// The API's own `usage` report (`completion_tokens`, `output_tokens`, `eval_count`, ...).
    Usage,
    /// A tokenizer re-count of the received text (hook for a later tokenizer).
    Tokenizer,
    /// The number of non-empty delta events received: one token per event, which
    /// undercounts when a server packs several tokens into one event.
    Chunks,
}

/// The metrics of one request. See the module docs for the terms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RequestMetrics {
    /// Time to first byte: first non-empty body read − start.
    pub ttfb_ms: Option<f64>,
    /// Time to first token: first read carrying answer text − start. `None` when no answer
    /// text arrived (empty answer, error before content). Reasoning does not count.
    pub ttft_ms: Option<f64>,
    /// Time to first reasoning token: first read carrying reasoning text − start.
    pub ttft_reasoning_ms: Option<f64>,
    /// Time to first paint of text (browser only): first paint with characters − start.
    pub ttfp_ms: Option<f64>,
    /// End-to-end latency: end − start. `None` if the timeline was never finished.
    pub e2e_ms: Option<f64>,
    /// Output tokens (answer + reasoning), from `token_source`.
    pub output_tokens: u64,
    pub token_source: TokenCountSource,
    /// Non-empty output delta events received (answer + reasoning + tool-call fragments).
    pub chunk_tokens: u64,
    /// The server's usage output count minus `chunk_tokens`, when usage is present: how
    /// far chunk counting would have been off (positive: several tokens per event).
    pub usage_chunk_discrepancy: Option<i64>,
    /// Reasoning tokens: usage's breakdown when given, else reasoning delta events when any
    /// arrived, else `None`.
    pub reasoning_tokens: Option<u64>,
    /// Prompt tokens, from usage only.
    pub input_tokens: Option<u64>,
    /// Network reads that carried output of any kind.
    pub output_chunks: u64,
    /// Per-chunk inter-token latency: every gap between consecutive reads that carried
    /// output of any kind (vLLM's ITL list). A read carrying several tokens is one entry.
    pub itl_chunk_ms: Vec<f64>,
    /// Per-token inter-token latency over the decode phase: (last output − first output) /
    /// (n − 1). `None` when n < 2. 0 when all tokens arrived in one read.
    pub itl_token_ms: Option<f64>,
    /// Time per output token after the first, vLLM's definition: (end − first output) /
    /// (n − 1), i.e. (e2e − TTFT) / (n − 1) when no reasoning precedes the answer. Unlike
    /// `itl_token_ms` it includes the tail after the last token. `None` when n < 2 or no end.
    pub tpot_ms: Option<f64>,
    /// Per-request output speed including the wait for the first token: n / e2e.
    /// `None` when e2e is missing or not positive; 0 for an empty answer.
    pub output_tps: Option<f64>,
    /// Decode speed once tokens flow: (n − 1) / (last output − first output). `None` when
    /// n < 2 or the decode phase has zero length (all tokens in one read).
    pub decode_tps: Option<f64>,
    /// The server's own decode speed: usage output tokens / usage `server_decode_ms`
    /// (Ollama `eval_count / eval_duration`, llama.cpp `timings`). `None` unless both exist.
    pub server_decode_tps: Option<f64>,
    /// Perceived speed (browser runs with a render target): see [`crate::paint`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paint: Option<PaintMetrics>,
}

impl RequestMetrics {
    /// Derives the metrics from `timeline`; `tokenizer_count` is a re-count of the output
    /// text, used only when the API gave no usage output count.
    pub fn from_timeline(timeline: &Timeline, tokenizer_count: Option<u64>) -> RequestMetrics {
        let start = timeline.request_start_ms();
        let since_start = |t: Option<f64>| t.map(|t| t - start);

        let chunk_tokens: u64 = timeline
            .content_chunks()
            .iter()
            .chain(timeline.reasoning_chunks())
            .map(|m| m.deltas as u64)
            .sum();
        let usage = timeline.usage();
        let usage_output = usage.and_then(|u| u.output_tokens);
        let (output_tokens, token_source) = match (usage_output, tokenizer_count) {
            (Some(n), _) => (n, TokenCountSource::Usage),
            (None, Some(n)) => (n, TokenCountSource::Tokenizer),
            (None, None) => (chunk_tokens, TokenCountSource::Chunks),
        };
        let usage_chunk_discrepancy =
            usage_output.map(|u| clamp_i64(u as i128 - chunk_tokens as i128));

        let reasoning_deltas: u64 = timeline
            .reasoning_chunks()
            .iter()
            .map(|m| m.deltas as u64)
            .sum();
        let reasoning_tokens = usage
            .and_then(|u| u.reasoning_tokens)
            .or((reasoning_deltas > 0).then_some(reasoning_deltas));

        let times = timeline.output_chunk_times();
        let itl_chunk_ms: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();

        let first = timeline.first_output_ms();
        let last = timeline.last_output_ms();
        let end = timeline.end_ms();
        let e2e_ms = since_start(end);
        let steps = output_tokens.checked_sub(1).filter(|&s| s > 0);

        let itl_token_ms = match (first, last, steps) {
            (Some(f), Some(l), Some(s)) => Some((l - f) / s as f64),
            _ => None,
        };
        let tpot_ms = match (first, end, steps) {
            (Some(f), Some(e), Some(s)) => Some((e - f) / s as f64),
            _ => None,
        };
        let decode_tps = match (first, last, steps) {
            (Some(f), Some(l), Some(s)) if l > f => Some(s as f64 / (l - f) * 1000.0),
            _ => None,
        };
        let output_tps = e2e_ms
            .filter(|&e| e > 0.0)
            .map(|e| output_tokens as f64 / e * 1000.0);
        let server_decode_tps = match (usage_output, usage.and_then(|u| u.server_decode_ms)) {
            (Some(n), Some(ms)) if ms > 0.0 => Some(n as f64 / ms * 1000.0),
            _ => None,
        };
        let ttfp_ms = timeline
            .paints()
            .iter()
            .find(|p| p.chars > 0)
            .map(|p| p.t_ms - start);

        RequestMetrics {
            ttfb_ms: since_start(timeline.first_byte_ms()),
            ttft_ms: since_start(timeline.content_chunks().first().map(|m| m.t_ms)),
            ttft_reasoning_ms: since_start(timeline.reasoning_chunks().first().map(|m| m.t_ms)),
            ttfp_ms,
            e2e_ms,
            output_tokens,
            token_source,
            chunk_tokens,
            usage_chunk_discrepancy,
            reasoning_tokens,
            input_tokens: usage.and_then(|u| u.input_tokens),
            output_chunks: times.len() as u64,
            itl_chunk_ms,
            itl_token_ms,
            tpot_ms,
            output_tps,
            decode_tps,
            server_decode_tps,
            paint: PaintMetrics::from_timeline(timeline),
        }
    }

    /// The longest per-chunk gap (the worst stall the reader saw), `None` with < 2 chunks.
    pub fn max_itl_chunk_ms(&self) -> Option<f64> {
        self.itl_chunk_ms.iter().copied().reduce(f64::max)
    }
}

fn clamp_i64(v: i128) -> i64 {
    v.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}
