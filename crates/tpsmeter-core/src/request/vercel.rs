//! Vercel AI SDK UI message stream request: `POST` to the app's own chat route (the URL is
//! used as given: apps name their routes freely, so no path is appended), with the JSON body
//! AI SDK 5's `useChat` sends for a new user message. The answer is an SSE stream of UI
//! message parts.
//!
//! The model, output cap and temperature are not part of that body: they go as extra
//! top-level fields (`model`, `maxOutputTokens`, `temperature`), which a route may read and
//! otherwise ignores. A key, if given (an app behind an authenticating gateway), goes in
//! `Authorization: Bearer`.

use serde_json::json;

use crate::error::Result;
use crate::request::url::normalise_base;
use crate::request::{HttpRequest, RequestSpec, SSE_ACCEPT, bearer, temperature};

/// The chat id every request sends. Fixed, so that routes which persist chats by id keep
/// one conversation for a benchmark instead of one per request.
const CHAT_ID: &str = "tpsmeter-bench";

pub(super) fn ui_chat(spec: &RequestSpec) -> Result<HttpRequest> {
    let text = |text: &str| json!([{"type": "text", "text": text}]);
    let mut messages = Vec::new();
    if let Some(system) = &spec.system {
        messages.push(json!({"id": "m0", "role": "system", "parts": text(system)}));
    }
    // Ids m1, m2, … in order: one prompt sends m1 as before.
    for (i, m) in spec.messages.iter().enumerate() {
        messages.push(
            json!({"id": format!("m{}", i + 1), "role": m.role.name(), "parts": text(&m.content)}),
        );
    }
    let mut body = json!({
        "id": CHAT_ID,
        "messages": messages,
        "trigger": "submit-message",
        "model": spec.model,
        "maxOutputTokens": spec.max_tokens,
    });
    if let Some(t) = spec.temperature {
        body["temperature"] = temperature(t);
    }
    let url = normalise_base(&spec.base_url)?.to_owned();
    let mut request = HttpRequest::post_json(url, SSE_ACCEPT, &body);
    bearer(&mut request, spec.api_key.as_ref());
    Ok(request)
}
