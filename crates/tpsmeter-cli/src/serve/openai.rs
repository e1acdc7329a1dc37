//! OpenAI-compatible request parsing and response bodies for `/v1/chat/completions` and
//! `/v1/completions` (streamed as server-sent events, or whole).

use serde::Deserialize;
use serde_json::{Value, json};
use tpsmeter_gpu::chat::ChatMessage;
use tpsmeter_gpu::generate::GenerateParams;
use tpsmeter_gpu::kernels::SamplerConfig;

use super::worker::{Prompt, Summary};
use crate::run::stop_name;

/// Tokens generated when a request names no limit (llama-server's default is unlimited; a
/// bound keeps a forgotten `max_tokens` from occupying the GPU for minutes).
pub const DEFAULT_MAX_TOKENS: usize = 512;

/// Which endpoint a request came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Chat,
    Completions,
}

#[derive(Debug, Deserialize)]
struct Message {
    role: String,
    content: Option<Content>,
}

/// Message content: a string, or OpenAI's array of parts (the text parts are used).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Debug, Deserialize)]
struct Part {
    text: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
}

/// The fields of both endpoints that this server honours (others are ignored).
#[derive(Debug, Deserialize)]
struct RawRequest {
    messages: Option<Vec<Message>>,
    prompt: Option<OneOrMany>,
    max_tokens: Option<usize>,
    max_completion_tokens: Option<usize>,
    temperature: Option<f32>,
    top_p: Option<f32>,
    top_k: Option<u32>,
    min_p: Option<f32>,
    repeat_penalty: Option<f32>,
    seed: Option<u64>,
    stop: Option<OneOrMany>,
    #[serde(default)]
    stream: bool,
    stream_options: Option<StreamOptions>,
    /// llama-server's extension: keep generating past end-of-generation tokens.
    #[serde(default)]
    ignore_eos: bool,
}

/// A parsed request.
#[derive(Debug)]
pub struct Request {
    pub prompt: Prompt,
    pub params: GenerateParams,
    pub sampling: SamplerConfig,
    pub stream: bool,
    pub include_usage: bool,
}

/// Parses a request body for `api`; the error is a message for a 400 response.
pub fn parse(api: Api, body: &[u8]) -> Result<Request, String> {
    let raw: RawRequest =
        serde_json::from_slice(body).map_err(|e| format!("invalid JSON body: {e}"))?;
    let prompt = match api {
        Api::Chat => {
            let msgs = raw.messages.ok_or("`messages` is required")?;
            Prompt::Chat(
                msgs.into_iter()
                    .map(|m| {
                        let content = match m.content {
                            None => String::new(),
                            Some(Content::Text(t)) => t,
                            Some(Content::Parts(p)) => {
                                p.into_iter().filter_map(|p| p.text).collect()
                            }
                        };
                        ChatMessage::new(m.role, content)
                    })
                    .collect(),
            )
        }
        Api::Completions => {
            let p = raw.prompt.ok_or("`prompt` is required")?.into_vec();
            if p.len() != 1 {
                return Err("`prompt` must be one string (batches are not supported)".into());
            }
            Prompt::Text(p.into_iter().collect())
        }
    };
    let defaults = SamplerConfig::default();
    // OpenAI's default temperature is 1.
    let sampling = SamplerConfig {
        temperature: raw.temperature.unwrap_or(1.0),
        top_k: raw.top_k.unwrap_or(defaults.top_k),
        top_p: raw.top_p.unwrap_or(1.0),
        min_p: raw.min_p.unwrap_or(defaults.min_p),
        repetition_penalty: raw.repeat_penalty.unwrap_or(1.0),
        seed: raw.seed.unwrap_or(0),
        ..defaults
    };
    let params = GenerateParams {
        max_tokens: raw
            .max_completion_tokens
            .or(raw.max_tokens)
            .unwrap_or(DEFAULT_MAX_TOKENS),
        stop_strings: raw.stop.map(OneOrMany::into_vec).unwrap_or_default(),
        stop_tokens: Vec::new(),
        ignore_eos: raw.ignore_eos,
    };
    Ok(Request {
        prompt,
        params,
        sampling,
        stream: raw.stream,
        include_usage: raw.stream_options.unwrap_or_default().include_usage,
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
        "prompt_n": f.prompt_tokens,
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
}
