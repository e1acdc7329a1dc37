//! OpenAI-compatible request parsing and response bodies for `/v1/chat/completions` and
//! `/v1/completions` (streamed as server-sent events, or whole).

use serde::Deserialize;
use serde_json::{Value, json};
use tpsmeter_model::chat::ChatMessage;
use tpsmeter_model::generate::GenerateParams;
use tpsmeter_model::sample::SamplerConfig;

use super::api_error::ApiError;
use super::worker::{Prompt, Summary};
use crate::run::stop_name;

/// Tokens generated when a request names no limit (llama-server's default is unlimited; a
/// bound keeps a forgotten `max_tokens` from occupying the GPU for minutes).
pub const DEFAULT_MAX_TOKENS: usize = 512;

/// Most stop strings a request may give, and most bytes in one: each generated piece is
/// checked against every stop string, so their number and size are what a client could
/// otherwise inflate without bound (OpenAI allows 4).
pub const MAX_STOP_STRINGS: usize = 16;
pub const MAX_STOP_BYTES: usize = 1024;

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
    /// Choices per request: only 1 is served.
    n: Option<u64>,
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

/// Parses a request body for `api`: the JSON, then every value the engine would otherwise
/// misuse (a negative or non-finite temperature, `top_p` outside 0..=1, `max_tokens` of 0,
/// more or longer stop strings than the caps, `n` other than 1), each refused with the field
/// it concerns. Fields this server does not use are ignored, as OpenAI clients send many.
pub fn parse(api: Api, body: &[u8]) -> Result<Request, ApiError> {
    let raw: RawRequest = serde_json::from_slice(body).map_err(|e| {
        ApiError::invalid(format!("invalid JSON body: {e}")).with_code("invalid_json")
    })?;
    let prompt = match api {
        Api::Chat => {
            let msgs = raw
                .messages
                .ok_or_else(|| ApiError::field("messages", "`messages` is required"))?;
            if msgs.is_empty() {
                return Err(ApiError::field("messages", "`messages` must not be empty"));
            }
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
            let p = raw
                .prompt
                .ok_or_else(|| ApiError::field("prompt", "`prompt` is required"))?
                .into_vec();
            if p.len() != 1 {
                return Err(ApiError::field(
                    "prompt",
                    "`prompt` must be one string (batches are not supported)",
                ));
            }
            Prompt::Text(p.into_iter().collect())
        }
    };
    if raw.n.is_some_and(|n| n != 1) {
        return Err(ApiError::field(
            "n",
            "`n` must be 1 (one choice per request)",
        ));
    }
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
    // JSON has no NaN, but a number past f32's range parses as infinity.
    let checks: [(&'static str, f32, bool, &str); 4] = [
        (
            "temperature",
            sampling.temperature,
            sampling.temperature >= 0.0,
            "at least 0",
        ),
        (
            "top_p",
            sampling.top_p,
            (0.0..=1.0).contains(&sampling.top_p),
            "between 0 and 1",
        ),
        (
            "min_p",
            sampling.min_p,
            (0.0..=1.0).contains(&sampling.min_p),
            "between 0 and 1",
        ),
        (
            "repeat_penalty",
            sampling.repetition_penalty,
            sampling.repetition_penalty > 0.0,
            "above 0",
        ),
    ];
    for (param, value, ok, want) in checks {
        if !(ok && value.is_finite()) {
            return Err(ApiError::field(
                param,
                format!("`{param}` must be a finite number {want} (got {value})"),
            ));
        }
    }
    let max_tokens = raw
        .max_completion_tokens
        .or(raw.max_tokens)
        .unwrap_or(DEFAULT_MAX_TOKENS);
    if max_tokens == 0 {
        return Err(ApiError::field(
            "max_tokens",
            "`max_tokens` must be at least 1",
        ));
    }
    let stop_strings = raw.stop.map(OneOrMany::into_vec).unwrap_or_default();
    if stop_strings.len() > MAX_STOP_STRINGS {
        return Err(ApiError::field(
            "stop",
            format!(
                "at most {MAX_STOP_STRINGS} stop strings (got {})",
                stop_strings.len()
            ),
        ));
    }
    if stop_strings.iter().any(|s| s.len() > MAX_STOP_BYTES) {
        return Err(ApiError::field(
            "stop",
            format!("a stop string is at most {MAX_STOP_BYTES} bytes"),
        ));
    }
    let params = GenerateParams {
        max_tokens,
        // An empty stop string would end every answer before its first token.
        stop_strings: stop_strings.into_iter().filter(|s| !s.is_empty()).collect(),
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
