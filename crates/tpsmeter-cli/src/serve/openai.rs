//! OpenAI-compatible request parsing and response bodies for `/v1/chat/completions` and
//! `/v1/completions` (streamed as server-sent events, or whole).

use serde_json::{Value, json};
use tpsmeter_model::ModelError;
use tpsmeter_model::request::{self, GenerationRequest, Shape};

use super::api_error::ApiError;
use super::worker::Summary;
use crate::run::stop_name;

pub use tpsmeter_model::request::{DEFAULT_MAX_TOKENS, MAX_STOP_BYTES, MAX_STOP_STRINGS};

/// Which endpoint a request came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Chat,
    Completions,
}

/// Parses a request body for `api` with the one request reader the browser engine uses too
/// (`tpsmeter_model::request`: its defaults, its ranges), each refusal an OpenAI error
/// naming the field it concerns.
pub fn parse(api: Api, body: &[u8]) -> Result<GenerationRequest, ApiError> {
    let shape = match api {
        Api::Chat => Shape::Chat,
        Api::Completions => Shape::Completions,
    };
    request::parse(shape, body).map_err(|e| match e {
        ModelError::BadRequest {
            param: Some(param),
            message,
        } => ApiError::field(param, message),
        ModelError::BadRequest {
            param: None,
            message,
        } => ApiError::invalid(message).with_code("invalid_json"),
        other => ApiError::invalid(other.to_string()),
    })
}

/// Identity and clock of one response, shared by all its chunks.
#[derive(Debug, Clone)]
pub struct Meta {
    pub api: Api,
    pub id: String,
    pub created: u64,
    pub model: String,
}

fn usage(s: &Summary) -> Value {
    json!({
        "prompt_tokens": s.prompt_tokens,
        "completion_tokens": s.completion_tokens,
        "total_tokens": s.prompt_tokens + s.completion_tokens,
    })
}

/// Server-side speed, in llama-server's `timings` shape so clients can compare the two.
fn timings(s: &Summary) -> Value {
    let f = &s.figures;
    let decode_ms = f.mean_itl_s.map_or(0.0, |i| {
        i * 1e3 * (f.generated_tokens.saturating_sub(1)) as f64
    });
    json!({
        // As llama-server counts: `prompt_n` the prompt tokens evaluated, `cache_n` those a
        // slot's cache already held (a repeated prompt's or a chat's earlier turns).
        "prompt_n": f.prompt_tokens.saturating_sub(s.reused_tokens),
        "cache_n": s.reused_tokens,
        "prompt_ms": f.ttft_s * 1e3,
        "prompt_per_second": f.prefill_tps,
        "predicted_n": f.generated_tokens,
        "predicted_ms": decode_ms,
        "predicted_per_second": f.decode_tps,
        // Not in llama-server's shape: the wait for a free slot, before prompt_ms.
        "queue_ms": s.queued_s * 1e3,
    })
}

impl Meta {
    fn object(&self, stream: bool) -> &'static str {
        match (self.api, stream) {
            (Api::Chat, true) => "chat.completion.chunk",
            (Api::Chat, false) => "chat.completion",
            (Api::Completions, _) => "text_completion",
        }
    }

    fn chunk(&self, choice: Value) -> Value {
        json!({
            "id": self.id,
            "object": self.object(true),
            "created": self.created,
            "model": self.model,
            "choices": [choice],
        })
    }

    /// The first chunk of a chat stream carries only the role (as OpenAI and llama-server).
    pub fn role_chunk(&self) -> Option<Value> {
        (self.api == Api::Chat).then(|| {
            self.chunk(json!({"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}))
        })
    }

    /// A chunk with a piece of text.
    pub fn text_chunk(&self, text: &str) -> Value {
        match self.api {
            Api::Chat => {
                self.chunk(json!({"index": 0, "delta": {"content": text}, "finish_reason": null}))
            }
            Api::Completions => self
                .chunk(json!({"index": 0, "text": text, "logprobs": null, "finish_reason": null})),
        }
    }

    /// The chunk with the finish reason.
    pub fn finish_chunk(&self, s: &Summary) -> Value {
        let reason = stop_name(s.stop);
        match self.api {
            Api::Chat => self.chunk(json!({"index": 0, "delta": {}, "finish_reason": reason})),
            Api::Completions => self
                .chunk(json!({"index": 0, "text": "", "logprobs": null, "finish_reason": reason})),
        }
    }

    /// The usage chunk (`stream_options.include_usage`): no choices.
    pub fn usage_chunk(&self, s: &Summary) -> Value {
        json!({
            "id": self.id,
            "object": self.object(true),
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": usage(s),
            "timings": timings(s),
        })
    }

    /// The whole (non-streamed) response.
    pub fn full(&self, text: &str, s: &Summary) -> Value {
        let reason = stop_name(s.stop);
        let choice = match self.api {
            Api::Chat => json!({
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": reason,
            }),
            Api::Completions => {
                json!({"index": 0, "text": text, "logprobs": null, "finish_reason": reason})
            }
        };
        json!({
            "id": self.id,
            "object": self.object(false),
            "created": self.created,
            "model": self.model,
            "choices": [choice],
            "usage": usage(s),
            "timings": timings(s),
        })
    }
}

/// One server-sent event carrying `v`.
pub fn sse(v: &Value) -> String {
    format!("data: {v}\n\n")
}

/// The end of an OpenAI stream.
pub const SSE_DONE: &str = "data: [DONE]\n\n";

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tpsmeter_model::chat::ChatMessage;
    use tpsmeter_model::request::Prompt;

    #[test]
    fn chat_request_fields_reach_the_engine_settings() {
        let r = parse(
            Api::Chat,
            br#"{"model":"x","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],
                "max_tokens":7,"temperature":0,"seed":3,"stop":"END","stream":true,
                "stream_options":{"include_usage":true}}"#,
        )
        .unwrap();
        assert!(r.stream && r.include_usage);
        assert_eq!(r.params.max_tokens, 7);
        assert_eq!(r.params.stop_strings, vec!["END".to_string()]);
        assert_eq!(r.sampling.temperature, 0.0);
        assert_eq!(r.sampling.seed, 3);
        match r.prompt {
            Prompt::Chat(m) => assert_eq!(m, vec![ChatMessage::new("user", "hi")]),
            Prompt::Text(_) => panic!("chat request parsed as text"),
        }
    }

    #[test]
    fn completion_requests_need_one_prompt() {
        assert!(parse(Api::Completions, br#"{"prompt":["a","b"]}"#).is_err());
        assert!(parse(Api::Completions, br#"{"messages":[]}"#).is_err());
        let r = parse(Api::Completions, br#"{"prompt":"Once"}"#).unwrap();
        assert!(!r.stream);
        assert_eq!(r.params.max_tokens, DEFAULT_MAX_TOKENS);
    }

    #[test]
    fn absurd_values_are_refused_naming_their_field() {
        let chat = |extra: &str| {
            parse(
                Api::Chat,
                format!(r#"{{"messages":[{{"role":"user","content":"hi"}}]{extra}}}"#).as_bytes(),
            )
        };
        let cases = [
            (r#","temperature":-1"#, "temperature"),
            (r#","temperature":1e39"#, "temperature"),
            (r#","top_p":1.5"#, "top_p"),
            (r#","top_p":-0.1"#, "top_p"),
            (r#","min_p":2"#, "min_p"),
            (r#","repeat_penalty":0"#, "repeat_penalty"),
            (r#","max_tokens":0"#, "max_tokens"),
            (r#","n":2"#, "n"),
            (
                r#","stop":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]"#,
                "stop",
            ),
        ];
        for (extra, param) in cases {
            let e = chat(extra).unwrap_err();
            assert_eq!(e.param, Some(param), "{extra}: {e}");
            assert_eq!(e.status.as_u16(), 400);
            assert_eq!(e.body()["error"]["param"], param);
        }
        // Types serde refuses (negative counts, strings for numbers) are 400s too.
        for extra in [
            r#","max_tokens":-5"#,
            r#","temperature":"hot""#,
            r#","seed":-1"#,
        ] {
            let e = chat(extra).unwrap_err();
            assert_eq!(e.code, Some("invalid_json"), "{extra}: {e}");
        }
        assert_eq!(
            parse(Api::Chat, br#"{"messages":[]}"#).unwrap_err().param,
            Some("messages")
        );
        let long = format!(r#","stop":"{}""#, "x".repeat(MAX_STOP_BYTES + 1));
        assert_eq!(chat(&long).unwrap_err().param, Some("stop"));
        // At the edges: accepted; an empty stop string is dropped.
        let r =
            chat(r#","temperature":0,"top_p":1,"min_p":0,"max_tokens":1,"n":1,"stop":["","x"]"#)
                .unwrap();
        assert_eq!(r.params.stop_strings, vec!["x".to_string()]);
    }
}
