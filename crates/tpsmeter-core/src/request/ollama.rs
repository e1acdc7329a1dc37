//! Ollama native requests: `POST {base}/api/chat` and `{base}/api/generate`, NDJSON
//! responses, the output cap in `options.num_predict`. A key, if given (Ollama behind an
//! authenticating proxy), goes in `Authorization: Bearer`.

use serde_json::{Value, json};

use crate::error::Result;
use crate::request::url::{endpoint, normalise_base};
use crate::request::{HttpRequest, RequestSpec, bearer, temperature};

const NDJSON_ACCEPT: &str = "application/x-ndjson";

pub(super) fn chat(spec: &RequestSpec) -> Result<HttpRequest> {
    let mut messages = Vec::new();
    if let Some(system) = &spec.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    messages.extend(spec.json_messages());
    let body = json!({
        "model": spec.model,
        "messages": messages,
        "stream": true,
        "options": options(spec),
    });
    build(spec, "/chat", &body)
}

pub(super) fn generate(spec: &RequestSpec) -> Result<HttpRequest> {
    let mut body = json!({
        "model": spec.model,
        "prompt": spec.prompt_text(),
        "stream": true,
        "options": options(spec),
    });
    if let Some(system) = &spec.system {
        body["system"] = json!(system);
    }
    build(spec, "/generate", &body)
}

fn options(spec: &RequestSpec) -> Value {
    let mut options = json!({"num_predict": spec.max_tokens});
    if let Some(t) = spec.temperature {
        options["temperature"] = temperature(t);
    }
    options
}

fn build(spec: &RequestSpec, path: &str, body: &Value) -> Result<HttpRequest> {
    // `/v1` is Ollama's OpenAI-compatible prefix; the native API lives under `/api`.
    let base = normalise_base(&spec.base_url)?;
    let base = base.strip_suffix("/v1").unwrap_or(base);
    let url = endpoint(base, &["/api"], "/api", path)?;
    let mut request = HttpRequest::post_json(url, NDJSON_ACCEPT, body);
    bearer(&mut request, spec.api_key.as_ref());
    Ok(request)
}
