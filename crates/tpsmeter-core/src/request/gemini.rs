//! Gemini request: `POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse`, the key
//! in the `x-goog-api-key` header (never `?key=`: URLs end up in logs and reports).

use serde_json::json;

use crate::error::{CoreError, Result};
use crate::request::url::endpoint;
use crate::request::{HttpRequest, RequestSpec, Role, SSE_ACCEPT, sensitive, temperature};

pub(super) fn stream_generate_content(spec: &RequestSpec) -> Result<HttpRequest> {
    // Accept both `gemini-2.5-flash` and the resource name `models/gemini-2.5-flash`.
    let model = spec.model.strip_prefix("models/").unwrap_or(&spec.model);
    let model_ok = !model.is_empty()
        && model
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b));
    if !model_ok {
        return Err(CoreError::InvalidRequest(format!(
            "Gemini model name {model:?} may only hold letters, digits, '-', '.', '_'"
        )));
    }
    let mut generation_config = json!({"maxOutputTokens": spec.max_tokens});
    if let Some(t) = spec.temperature {
        generation_config["temperature"] = temperature(t);
    }
    let mut body = json!({
        "contents": contents(spec),
        "generationConfig": generation_config,
    });
    if let Some(system) = &spec.system {
        body["systemInstruction"] = json!({"parts": [{"text": system}]});
    }
    let path = format!("/models/{model}:streamGenerateContent?alt=sse");
    let url = endpoint(
        &spec.base_url,
        &["/v1beta", "/v1", "/v1alpha"],
        "/v1beta",
        &path,
    )?;
    let mut request = HttpRequest::post_json(url, SSE_ACCEPT, &body);
    if let Some(key) = &spec.api_key {
        request
            .headers
            .push(sensitive("x-goog-api-key", key.expose().to_owned()));
    }
    Ok(request)
}

/// The turns as Gemini `contents`, which calls the assistant `model`.
fn contents(spec: &RequestSpec) -> Vec<serde_json::Value> {
    spec.messages
        .iter()
        .map(|m| {
            let role = match m.role {
                Role::User => "user",
                Role::Assistant => "model",
            };
            json!({"role": role, "parts": [{"text": m.content}]})
        })
        .collect()
}
