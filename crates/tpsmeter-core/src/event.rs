//! The one typed stream every protocol adapter produces.
//!
//! Adapters map each API's wire events onto these; everything downstream (timeline,
//! metrics, reports) only ever sees `StreamEvent`s, so a new API is one new adapter.

use serde::{Deserialize, Serialize};

/// One meaningful thing that arrived on a response stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StreamEvent {
    /// Answer text. May carry several tokens (one chunk, many tokens: speculative decoding,
    /// server-side batching of deltas).
    ContentDelta { text: String },
    /// Reasoning / thinking text, timed and counted apart from the answer.
    ReasoningDelta { text: String },
    /// A fragment of a tool call. `index` orders parallel calls; `id` and `name` usually come
    /// only with the first fragment of a call.
    ToolCallDelta {
        index: u32,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
    /// Token counts reported by the server. Later `Usage` events supersede earlier ones
    /// (Anthropic's `message_delta` usage is cumulative).
    Usage(Usage),
    /// The model stopped generating, with the reason the API gave.
    Finish { reason: FinishReason },
    /// An error the server sent inside the stream (often after HTTP 200).
    Error {
        /// The API's error type or code, when it gives one (`overloaded_error`, `429`, ...).
        code: Option<String>,
        message: String,
    },
    /// The protocol's explicit end of stream (`[DONE]`, `message_stop`, `response.completed`,
    /// Ollama `done: true`, the end of a Gemini stream). A stream that ends without it was cut.
    Done,
}

/// Server-reported token counts. Every field is optional: APIs report different subsets.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: Option<u64>,
    /// Output tokens including reasoning tokens, as most APIs count them.
    pub output_tokens: Option<u64>,
    /// Reasoning/thinking tokens, when the API breaks them out.
    pub reasoning_tokens: Option<u64>,
    /// Server-side decode duration in milliseconds (Ollama `eval_duration`, llama.cpp
    /// `timings.predicted_ms`), for comparing client-side with server-side speed.
    pub server_decode_ms: Option<f64>,
    /// Server-side prefill duration in milliseconds, when reported.
    pub server_prefill_ms: Option<f64>,
    /// Input tokens the server took from its prompt cache instead of prefilling them
    /// (OpenAI-style `usage.prompt_tokens_details.cached_tokens`, Responses'
    /// `input_tokens_details.cached_tokens`, llama.cpp `timings.cache_n`, Anthropic's
    /// `cache_read_input_tokens`, Gemini's `cachedContentTokenCount`).
    pub cached_input_tokens: Option<u64>,
}

impl Usage {
    /// Overlays the fields `newer` sets on `self` (cumulative usage reports).
    pub fn merge(&mut self, newer: &Usage) {
        fn pick<T: Copy>(old: &mut Option<T>, new: Option<T>) {
            if new.is_some() {
                *old = new;
            }
        }
        pick(&mut self.input_tokens, newer.input_tokens);
        pick(&mut self.output_tokens, newer.output_tokens);
        pick(&mut self.reasoning_tokens, newer.reasoning_tokens);
        pick(&mut self.server_decode_ms, newer.server_decode_ms);
        pick(&mut self.server_prefill_ms, newer.server_prefill_ms);
        pick(&mut self.cached_input_tokens, newer.cached_input_tokens);
    }
}

/// Why generation stopped, normalised across APIs; the raw string is kept for the rest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// Natural end or a stop sequence.
    Stop,
    /// The output token limit.
    Length,
    /// The model called a tool.
    ToolCalls,
    /// A content filter or safety stop.
    ContentFilter,
    /// Anything else, verbatim.
    Other(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_merge_keeps_fields_the_newer_report_omits() {
        let mut u = Usage {
            input_tokens: Some(10),
            output_tokens: Some(1),
            ..Usage::default()
        };
        u.merge(&Usage {
            output_tokens: Some(42),
            ..Usage::default()
        });
        assert_eq!(u.input_tokens, Some(10));
        assert_eq!(u.output_tokens, Some(42));
    }
}
