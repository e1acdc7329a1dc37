//! Anthropic Messages request: `POST {base}/v1/messages` with `anthropic-version` and the
//! key in `x-api-key`.

use serde_json::json;

use crate::error::Result;
use crate::request::url::endpoint;
use crate::request::{HttpRequest, RequestSpec, SSE_ACCEPT, plain, sensitive, temperature};

/// The API version every request must name; 2023-06-01 is the current stable one.
const ANTHROPIC_VERSION: &str = "2023-06-01";

pub(super) fn messages(spec: &RequestSpec) -> Result<HttpRequest> {
    let mut body = json!({
        "model": spec.model,
        "max_tokens": spec.max_tokens,
        "messages": spec.json_messages(),
        "stream": true,
    });
    if let Some(system) = &spec.system {
        body["system"] = json!(system);
    }
    if let Some(t) = spec.temperature {
        body["temperature"] = temperature(t);
    }
    let url = endpoint(&spec.base_url, &["/v1"], "/v1", "/messages")?;
    let mut request = HttpRequest::post_json(url, SSE_ACCEPT, &body);
    request
        .headers
        .push(plain("anthropic-version", ANTHROPIC_VERSION));
    if let Some(key) = &spec.api_key {
        request
            .headers
            .push(sensitive("x-api-key", key.expose().to_owned()));
    }
    Ok(request)
}
