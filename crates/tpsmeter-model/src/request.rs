//! The one reader of an OpenAI-shaped generation request (`/v1/chat/completions`,
//! `/v1/completions`, and the browser engine's `chat.completions.create` /
//! `completions.create`): the JSON body to a prompt, [`GenerateParams`] and a
//! [`SamplerConfig`], with one set of defaults and one set of ranges, so that the same request
//! samples the same way from `tpsmeter serve` and from the engine in a browser Worker.
//!
//! Defaults: OpenAI's where OpenAI names the field (`temperature` 1, `top_p` 1), llama.cpp's
//! for its extensions (`top_k` 40, `min_p` 0.05, `repeat_penalty` 1, which vLLM and
//! Hugging Face spell `repetition_penalty`: both are read). Fields neither uses are ignored,
//! as OpenAI clients send many (`model`, `user`, `logit_bias`, ...).
//!
//! Not here: the response shapes (the server's and the npm package's own), and whether the
//! prompt fits the context (the backend knows that once it is encoded).

use serde::Deserialize;

use crate::chat::ChatMessage;
use crate::error::{ModelError, Result};
use crate::generate::GenerateParams;
use crate::sample::SamplerConfig;

/// Tokens generated when a request names no limit (llama-server's default is unlimited; a
/// bound keeps a forgotten `max_tokens` from occupying the model for minutes).
pub const DEFAULT_MAX_TOKENS: usize = 512;

/// Most stop strings a request may give, and most bytes in one: each generated piece is
/// checked against every stop string, so their number and size are what a client could
/// otherwise inflate without bound (OpenAI allows 4).
pub const MAX_STOP_STRINGS: usize = 16;
pub const MAX_STOP_BYTES: usize = 1024;

/// Which fields carry the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `messages` (chat completions).
    Chat,
    /// `prompt` (completions).
    Completions,
    /// Exactly one of the two (the browser engine's one entry point for both).
    Either,
}

/// What to run the model on.
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    /// Rendered with the model's chat template.
    Chat(Vec<ChatMessage>),
    /// Tokenized as it is.
    Text(String),
}

/// A checked request.
#[derive(Debug, Clone)]
pub struct GenerationRequest {
    pub prompt: Prompt,
    pub params: GenerateParams,
    pub sampling: SamplerConfig,
    /// Server-sent events rather than one body (the server's concern; the browser engine
    /// streams through its callback either way).
    pub stream: bool,
    /// `stream_options.include_usage`: a last chunk with the usage.
    pub include_usage: bool,
    /// Unix seconds for templates that print the date (the caller's clock when absent).
    pub now_unix_seconds: Option<i64>,
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

/// The fields this reader honours.
#[derive(Debug, Deserialize)]
struct RawRequest {
    messages: Option<Vec<Message>>,
    prompt: Option<OneOrMany>,
    max_tokens: Option<u64>,
    max_completion_tokens: Option<u64>,
    temperature: Option<f32>,
    top_p: Option<f32>,
    top_k: Option<u32>,
    min_p: Option<f32>,
    #[serde(alias = "repetition_penalty")]
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
    /// tpsmeter's extension: the date a template prints.
    now_unix_seconds: Option<i64>,
}

fn field(param: &'static str, message: impl Into<String>) -> ModelError {
    ModelError::BadRequest {
        param: Some(param),
        message: message.into(),
    }
}

/// The sampling settings a request gets for the fields it leaves out.
pub fn default_sampling() -> SamplerConfig {
    SamplerConfig {
        temperature: 1.0,
        top_p: 1.0,
        repetition_penalty: 1.0,
        seed: 0,
        ..SamplerConfig::default()
    }
}

/// Reads a request body of `shape`: the JSON, then every value a backend would otherwise
/// misuse (a negative or non-finite temperature, `top_p` or `min_p` outside 0..=1, a
/// repetition penalty of 0 or less, `max_tokens` of 0, more or longer stop strings than the
/// caps, `n` other than 1), each refused as [`ModelError::BadRequest`] naming its field.
pub fn parse(shape: Shape, body: &[u8]) -> Result<GenerationRequest> {
    let raw: RawRequest = serde_json::from_slice(body).map_err(|e| ModelError::BadRequest {
        param: None,
        message: format!("invalid JSON body: {e}"),
    })?;
    let messages = raw.messages.map(|msgs| {
        msgs.into_iter()
            .map(|m| {
                let content = match m.content {
                    None => String::new(),
                    Some(Content::Text(t)) => t,
                    Some(Content::Parts(p)) => p.into_iter().filter_map(|p| p.text).collect(),
                };
                ChatMessage::new(m.role, content)
            })
            .collect::<Vec<_>>()
    });
    let prompt = match (shape, messages, raw.prompt) {
        (Shape::Chat | Shape::Either, Some(m), None) | (Shape::Chat, Some(m), Some(_)) => {
            if m.is_empty() {
                return Err(field("messages", "`messages` must not be empty"));
            }
            Prompt::Chat(m)
        }
        (Shape::Completions | Shape::Either, None, Some(p))
        | (Shape::Completions, Some(_), Some(p)) => {
            let mut p = p.into_vec();
            if p.len() != 1 {
                return Err(field(
                    "prompt",
                    "`prompt` must be one string (batches are not supported)",
                ));
            }
            Prompt::Text(p.remove(0))
        }
        (Shape::Chat, None, _) => return Err(field("messages", "`messages` is required")),
        (Shape::Completions, _, None) => return Err(field("prompt", "`prompt` is required")),
        (Shape::Either, _, _) => {
            return Err(field(
                "messages",
                "give exactly one of `messages` and `prompt`",
            ));
        }
    };
    if raw.n.is_some_and(|n| n != 1) {
        return Err(field("n", "`n` must be 1 (one choice per request)"));
    }
    let defaults = default_sampling();
    let sampling = SamplerConfig {
        temperature: raw.temperature.unwrap_or(defaults.temperature),
        top_k: raw.top_k.unwrap_or(defaults.top_k),
        top_p: raw.top_p.unwrap_or(defaults.top_p),
        min_p: raw.min_p.unwrap_or(defaults.min_p),
        repetition_penalty: raw.repeat_penalty.unwrap_or(defaults.repetition_penalty),
        seed: raw.seed.unwrap_or(defaults.seed),
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
            return Err(field(
                param,
                format!("`{param}` must be a finite number {want} (got {value})"),
            ));
        }
    }
    let max_tokens = raw
        .max_completion_tokens
        .or(raw.max_tokens)
        .map_or(DEFAULT_MAX_TOKENS, |n| {
            usize::try_from(n).unwrap_or(usize::MAX)
        });
    if max_tokens == 0 {
        return Err(field("max_tokens", "`max_tokens` must be at least 1"));
    }
    let stop_strings = raw.stop.map(OneOrMany::into_vec).unwrap_or_default();
    if stop_strings.len() > MAX_STOP_STRINGS {
        return Err(field(
            "stop",
            format!(
                "at most {MAX_STOP_STRINGS} stop strings (got {})",
                stop_strings.len()
            ),
        ));
    }
    if stop_strings.iter().any(|s| s.len() > MAX_STOP_BYTES) {
        return Err(field(
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
    Ok(GenerationRequest {
        prompt,
        params,
        sampling,
        stream: raw.stream,
        include_usage: raw.stream_options.unwrap_or_default().include_usage,
        now_unix_seconds: raw.now_unix_seconds,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn param(r: Result<GenerationRequest>) -> Option<&'static str> {
        match r {
            Err(ModelError::BadRequest { param, .. }) => param,
            other => panic!("not a request error: {other:?}"),
        }
    }

    #[test]
    fn chat_request_fields_reach_the_engine_settings() {
        let r = parse(
            Shape::Chat,
            br#"{"model":"x","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],
                "max_tokens":7,"temperature":0,"seed":3,"stop":"END","stream":true,
                "stream_options":{"include_usage":true},"repetition_penalty":1.1}"#,
        )
        .unwrap();
        assert!(r.stream && r.include_usage);
        assert_eq!(r.params.max_tokens, 7);
        assert_eq!(r.params.stop_strings, vec!["END".to_string()]);
        assert_eq!(r.sampling.temperature, 0.0);
        assert_eq!(r.sampling.seed, 3);
        assert_eq!(r.sampling.repetition_penalty, 1.1);
        assert_eq!(r.prompt, Prompt::Chat(vec![ChatMessage::new("user", "hi")]));
    }

    #[test]
    fn one_set_of_defaults_whichever_shape_reads_it() {
        let chat = parse(
            Shape::Chat,
            br#"{"messages":[{"role":"user","content":"hi"}]}"#,
        )
        .unwrap();
        let either = parse(
            Shape::Either,
            br#"{"messages":[{"role":"user","content":"hi"}]}"#,
        )
        .unwrap();
        let text = parse(Shape::Completions, br#"{"prompt":"Once"}"#).unwrap();
        for r in [&chat, &either, &text] {
            assert_eq!(r.sampling, default_sampling());
            assert_eq!(r.params.max_tokens, DEFAULT_MAX_TOKENS);
        }
        let d = default_sampling();
        assert_eq!(
            (d.temperature, d.top_p, d.top_k, d.min_p),
            (1.0, 1.0, 40, 0.05)
        );
        assert_eq!(d.repetition_penalty, 1.0);
        // Both spellings of the penalty.
        for name in ["repeat_penalty", "repetition_penalty"] {
            let body = format!(r#"{{"prompt":"a","{name}":1.3}}"#);
            let r = parse(Shape::Either, body.as_bytes()).unwrap();
            assert_eq!(r.sampling.repetition_penalty, 1.3, "{name}");
        }
    }

    #[test]
    fn the_prompt_is_where_the_shape_says() {
        assert_eq!(
            param(parse(Shape::Completions, br#"{"prompt":["a","b"]}"#)),
            Some("prompt")
        );
        assert_eq!(
            param(parse(Shape::Completions, br#"{"messages":[]}"#)),
            Some("prompt")
        );
        assert_eq!(
            param(parse(Shape::Chat, br#"{"prompt":"a"}"#)),
            Some("messages")
        );
        assert_eq!(
            param(parse(Shape::Chat, br#"{"messages":[]}"#)),
            Some("messages")
        );
        assert_eq!(
            param(parse(
                Shape::Either,
                br#"{"prompt":"a","messages":[{"role":"user","content":"b"}]}"#
            )),
            Some("messages")
        );
        assert_eq!(param(parse(Shape::Either, br#"{}"#)), Some("messages"));
        let r = parse(Shape::Either, br#"{"prompt":["Once"]}"#).unwrap();
        assert_eq!(r.prompt, Prompt::Text("Once".into()));
    }

    #[test]
    fn absurd_values_are_refused_naming_their_field() {
        let chat = |extra: &str| {
            parse(
                Shape::Chat,
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
            (r#","repetition_penalty":-1"#, "repeat_penalty"),
            (r#","max_tokens":0"#, "max_tokens"),
            (r#","n":2"#, "n"),
            (
                r#","stop":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]"#,
                "stop",
            ),
        ];
        for (extra, want) in cases {
            assert_eq!(param(chat(extra)), Some(want), "{extra}");
        }
        // Types serde refuses (negative counts, strings for numbers): the JSON's error.
        for extra in [
            r#","max_tokens":-5"#,
            r#","temperature":"hot""#,
            r#","seed":-1"#,
        ] {
            assert_eq!(param(chat(extra)), None, "{extra}");
        }
        let long = format!(r#","stop":"{}""#, "x".repeat(MAX_STOP_BYTES + 1));
        assert_eq!(param(chat(&long)), Some("stop"));
        // At the edges: accepted; an empty stop string is dropped.
        let r =
            chat(r#","temperature":0,"top_p":1,"min_p":0,"max_tokens":1,"n":1,"stop":["","x"]"#)
                .unwrap();
        assert_eq!(r.params.stop_strings, vec!["x".to_string()]);
        let e = chat(r#","top_p":3"#).unwrap_err();
        assert_eq!(e.kind(), "InvalidRequest");
        assert!(e.to_string().contains("`top_p`"), "{e}");
    }
}
