//! Routing a request to an API and reading what the emulator needs from its body.

use hyper::Method;
use serde_json::Value;
use tpsmeter_core::Api;

/// Request bodies larger than this are refused (413): prompts in benchmarks are kilobytes, and
/// the emulator must not buffer whatever a misbehaving client sends.
pub const MAX_REQUEST_BYTES: usize = 8 * 1024 * 1024;

/// What a request asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamRequest {
    /// The wire format to answer in.
    pub api: Api,
    /// The model name, echoed back.
    pub model: String,
    /// The client's output cap, in the API's own field.
    pub max_tokens: Option<u32>,
    /// OpenAI `stream_options.include_usage`.
    pub include_usage: bool,
    /// A rough prompt size for the usage fields: one token per 4 bytes of body.
    pub prompt_tokens: u32,
}

/// Where a request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// A streaming endpoint of this API (Gemini: with the model taken from the path).
    Stream(Api, Option<String>),
    /// `GET /v1/models`: the one model, so peers that discover models find it.
    Models,
    /// `GET /health`, `/v1/health`, `/`: liveness for peers and browser tests that probe.
    Health,
    /// A path the emulator does not serve.
    NotFound,
    /// A known path with the wrong method.
    MethodNotAllowed,
}

/// The streaming path the emulator names for `api` when it starts (Gemini's for a model
/// called `emulator`): one `match`, so a new API cannot be left without one.
pub fn path_of(api: Api) -> &'static str {
    match api {
        Api::OpenaiChat => "/v1/chat/completions",
        Api::OpenaiCompletions => "/v1/completions",
        Api::OpenaiResponses => "/v1/responses",
        Api::Anthropic => "/v1/messages",
        Api::Gemini => "/v1beta/models/emulator:streamGenerateContent?alt=sse",
        Api::OllamaChat => "/api/chat",
        Api::OllamaGenerate => "/api/generate",
        Api::VercelUi => "/api/ui-chat",
        // Not served over HTTP; its stream is OpenAI chat's.
        Api::Local => "/v1/chat/completions",
    }
}

/// Maps method + path to a route.
pub fn route(method: &Method, path: &str) -> Route {
    let stream = |api: Api, model: Option<String>| {
        if method == Method::POST {
            Route::Stream(api, model)
        } else {
            Route::MethodNotAllowed
        }
    };
    // Every fixed path is its API's `path_of` (Gemini's carries the model, below).
    if let Some(api) = Api::ALL
        .into_iter()
        .find(|&a| a != Api::Gemini && path_of(a) == path)
    {
        return stream(api, None);
    }
    match path {
        // A UI message stream has no standard path and clients use the URL as given, so a
        // POST to the bare base URL gets one too; `GET /` stays a health probe.
        "/" if method == Method::POST => Route::Stream(Api::VercelUi, None),
        "/v1/models" | "/models" => Route::Models,
        "/" | "/health" | "/v1/health" | "/health/ready" => Route::Health,
        _ => match path
            .strip_prefix("/v1beta/models/")
            .and_then(|rest| rest.strip_suffix(":streamGenerateContent"))
        {
            Some(model) if !model.is_empty() => stream(Api::Gemini, Some(model.to_owned())),
            _ => Route::NotFound,
        },
    }
}

/// Reads a request body. Anything that is not a JSON object is treated as an empty one: the
/// emulator measures clients, it does not validate them.
pub fn parse(api: Api, path_model: Option<String>, body: &[u8]) -> StreamRequest {
    let json: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let u32_at = |ptr: &str| {
        json.pointer(ptr)
            .and_then(Value::as_u64)
            .map(|v| v.min(u64::from(u32::MAX)) as u32)
    };
    let max_tokens = match api {
        Api::OpenaiChat | Api::Local => {
            u32_at("/max_completion_tokens").or_else(|| u32_at("/max_tokens"))
        }
        Api::OpenaiCompletions | Api::Anthropic => u32_at("/max_tokens"),
        Api::OpenaiResponses => u32_at("/max_output_tokens"),
        Api::Gemini => u32_at("/generationConfig/maxOutputTokens"),
        Api::OllamaChat | Api::OllamaGenerate => u32_at("/options/num_predict"),
        // Not part of `useChat`'s body: the field tpsmeter's request builder adds.
        Api::VercelUi => u32_at("/maxOutputTokens"),
    };
    let model = path_model
        .or_else(|| json.get("model").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| "emulator".to_owned());
    StreamRequest {
        api,
        model,
        max_tokens,
        include_usage: json
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        prompt_tokens: (body.len() / 4).max(1).min(u32::MAX as usize) as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every API of `Api::ALL` is served where the core's request builder sends it (from a
    /// bare base URL, as a user gives one) and where the emulator says it listens.
    #[test]
    fn every_api_is_routed_where_the_core_sends_it() {
        use tpsmeter_core::{Message, RequestSpec, build_request};
        for api in Api::ALL {
            let spec = RequestSpec {
                api,
                base_url: "http://127.0.0.1:9".into(),
                model: "m".into(),
                messages: vec![Message::user("hi")],
                system: None,
                max_tokens: 4,
                temperature: None,
                api_key: None,
                ignore_eos: false,
            };
            let url = build_request(&spec)
                .unwrap_or_else(|e| panic!("{api:?}: {e}"))
                .url;
            let path = url.strip_prefix("http://127.0.0.1:9").unwrap_or_default();
            let path = path.split('?').next().unwrap_or_default();
            let path = if path.is_empty() { "/" } else { path };
            assert!(
                matches!(route(&Method::POST, path), Route::Stream(a, _) if a == api),
                "{} is sent to {path}, which the emulator does not route to it",
                api.name()
            );
            let printed = path_of(api).split('?').next().unwrap_or_default();
            assert!(
                matches!(route(&Method::POST, printed), Route::Stream(a, _) if a == api),
                "{} is announced at {printed}",
                api.name()
            );
        }
    }

    #[test]
    fn every_api_has_its_path() {
        let paths = [
            ("/v1/chat/completions", Api::OpenaiChat),
            ("/v1/completions", Api::OpenaiCompletions),
            ("/v1/responses", Api::OpenaiResponses),
            ("/v1/messages", Api::Anthropic),
            ("/v1beta/models/gemini-x:streamGenerateContent", Api::Gemini),
            ("/api/chat", Api::OllamaChat),
            ("/api/generate", Api::OllamaGenerate),
            ("/api/ui-chat", Api::VercelUi),
            ("/", Api::VercelUi),
        ];
        for (path, api) in paths {
            assert!(
                matches!(route(&Method::POST, path), Route::Stream(a, _) if a == api),
                "{path}"
            );
        }
        assert_eq!(
            route(&Method::GET, "/v1/chat/completions"),
            Route::MethodNotAllowed
        );
        assert_eq!(
            route(&Method::POST, "/v1beta/models/:streamGenerateContent"),
            Route::NotFound
        );
        assert_eq!(route(&Method::POST, "/nope"), Route::NotFound);
        assert_eq!(route(&Method::GET, "/"), Route::Health);
        assert_eq!(route(&Method::GET, "/health"), Route::Health);
    }

    #[test]
    fn max_tokens_is_read_from_each_apis_field() {
        let cases = [
            (
                Api::OpenaiChat,
                r#"{"max_completion_tokens":7,"max_tokens":9}"#,
            ),
            (Api::OpenaiCompletions, r#"{"max_tokens":7}"#),
            (Api::OpenaiResponses, r#"{"max_output_tokens":7}"#),
            (Api::Anthropic, r#"{"max_tokens":7}"#),
            (Api::Gemini, r#"{"generationConfig":{"maxOutputTokens":7}}"#),
            (Api::OllamaChat, r#"{"options":{"num_predict":7}}"#),
            (Api::OllamaGenerate, r#"{"options":{"num_predict":7}}"#),
            (Api::VercelUi, r#"{"maxOutputTokens":7}"#),
        ];
        for (api, body) in cases {
            assert_eq!(
                parse(api, None, body.as_bytes()).max_tokens,
                Some(7),
                "{api}"
            );
        }
        let r = parse(
            Api::OpenaiChat,
            None,
            br#"{"model":"m","stream_options":{"include_usage":true}}"#,
        );
        assert!(r.include_usage);
        assert_eq!(r.model, "m");
        assert_eq!(parse(Api::Gemini, Some("g".into()), b"junk").model, "g");
    }
}
