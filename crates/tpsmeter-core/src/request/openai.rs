//! OpenAI chat completions, legacy completions and Responses request bodies.
//!
//! The output cap is sent as `max_tokens` (chat, completions): every OpenAI-compatible
//! server accepts it, while `max_completion_tokens` is unknown to many of them. Responses
//! uses its own `max_output_tokens`.

use serde_json::{Value, json};

use crate::error::Result;
use crate::request::url::endpoint;
use crate::request::{HttpRequest, RequestSpec, SSE_ACCEPT, bearer, temperature};

const VERSIONS: [&str; 1] = ["/v1"];

pub(super) fn chat(spec: &RequestSpec) -> Result<HttpRequest> {
    let body = chat_body(spec);
    let url = endpoint(&spec.base_url, &VERSIONS, "/v1", "/chat/completions")?;
    Ok(finish(spec, url, &body))
}

/// The local engine takes the chat body as it is (its `chat.completions.create` is
/// OpenAI-shaped); there is no URL and no key to send.
pub(super) fn local(spec: &RequestSpec) -> Result<HttpRequest> {
    Ok(HttpRequest::post_json(
        LOCAL_URL.to_owned(),
        SSE_ACCEPT,
        &chat_body(spec),
    ))
}

/// The `url` of a local engine's requests (and of its report's run).
pub const LOCAL_URL: &str = "local:engine";

fn chat_body(spec: &RequestSpec) -> Value {
    let mut messages = Vec::new();
    if let Some(system) = &spec.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    messages.extend(spec.json_messages());
    let mut body = json!({
        "model": spec.model,
        "messages": messages,
        "max_tokens": spec.max_tokens,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    common_options(spec, &mut body, true);
    body
}

/// Legacy completions have no system role: a system text is prepended to the prompt,
/// separated by a blank line.
pub(super) fn completions(spec: &RequestSpec) -> Result<HttpRequest> {
    let prompt = match &spec.system {
        Some(system) => format!("{system}\n\n{}", spec.prompt_text()),
        None => spec.prompt_text(),
    };
    let mut body = json!({
        "model": spec.model,
        "prompt": prompt,
        "max_tokens": spec.max_tokens,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    common_options(spec, &mut body, true);
    let url = endpoint(&spec.base_url, &VERSIONS, "/v1", "/completions")?;
    Ok(finish(spec, url, &body))
}

/// Responses always reports usage in `response.completed`; it has no `ignore_eos`.
pub(super) fn responses(spec: &RequestSpec) -> Result<HttpRequest> {
    let mut body = json!({
        "model": spec.model,
        "input": responses_input(spec),
        "max_output_tokens": spec.max_tokens,
        "stream": true,
    });
    if let Some(system) = &spec.system {
        body["instructions"] = json!(system);
    }
    common_options(spec, &mut body, false);
    let url = endpoint(&spec.base_url, &VERSIONS, "/v1", "/responses")?;
    Ok(finish(spec, url, &body))
}

/// One user message is sent as a string (the common form); a conversation as an array of
/// `{role, content}` items, which Responses takes as prior turns.
fn responses_input(spec: &RequestSpec) -> Value {
    match spec.messages.as_slice() {
        [only] if only.role == crate::request::Role::User => json!(only.content),
        _ => json!(spec.json_messages()),
    }
}

fn common_options(spec: &RequestSpec, body: &mut Value, supports_ignore_eos: bool) {
    if let Some(t) = spec.temperature {
        body["temperature"] = temperature(t);
    }
    // Only when asked: OpenAI itself rejects unknown parameters.
    if spec.ignore_eos && supports_ignore_eos {
        body["ignore_eos"] = json!(true);
    }
}

fn finish(spec: &RequestSpec, url: String, body: &Value) -> HttpRequest {
    let mut request = HttpRequest::post_json(url, SSE_ACCEPT, body);
    bearer(&mut request, spec.api_key.as_ref());
    request
}
