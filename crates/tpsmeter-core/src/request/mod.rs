//! Request builders: the URL, headers and JSON body that start a streamed response, for
//! every API. No I/O: the caller sends the [`HttpRequest`] with its own HTTP client.
//!
//! Common to all: streaming is always on; OpenAI chat and completions ask for
//! `stream_options.include_usage` so the server reports token counts; keys travel only in
//! headers marked sensitive (`Authorization: Bearer`, Anthropic `x-api-key`, Gemini
//! `x-goog-api-key`, never in a URL); base URLs follow the rule in [`url`].
//!
//! Browser callers use [`build_browser_request`], which adds what a page needs on top
//! (Anthropic's `anthropic-dangerous-direct-browser-access: true`, its opt-in to a key held
//! by a page, which a native caller never sends).

mod anthropic;
mod gemini;
mod ollama;
mod openai;
mod per_request;
pub mod url;
mod vercel;

pub use crate::message::{Message, Role, transcript};
pub use crate::redact::{HeaderValue, MIN_SECRET_CHARS, REDACTED, Redactor, Secret};
pub use openai::LOCAL_URL;
pub use per_request::{PlannedRequest, RequestPlan};

use crate::api::Api;
use crate::error::Result;

/// What to ask a server for. `Debug` is safe: the key prints as `<redacted>`.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestSpec {
    pub api: Api,
    /// Server base URL, with or without a trailing `/` or version segment (see [`url`]).
    pub base_url: String,
    pub model: String,
    /// The conversation: one user message for a prompt, whole chats for datasets and
    /// multi-turn runs. Never empty when a request is built.
    pub messages: Vec<Message>,
    pub system: Option<String>,
    pub max_tokens: u32,
    pub temperature: Option<f32>,
    pub api_key: Option<Secret>,
    /// Best effort: ask the server to ignore end-of-sequence so every request produces
    /// exactly `max_tokens` (llama.cpp and vLLM `ignore_eos`). Sent only to the OpenAI-style
    /// APIs those servers implement; other APIs have no such option and ignore the flag.
    pub ignore_eos: bool,
}

impl RequestSpec {
    /// The conversation as one prompt string (see [`transcript`]).
    pub fn prompt_text(&self) -> String {
        transcript(&self.messages)
    }

    /// `messages` as OpenAI-style `{role, content}` objects.
    fn json_messages(&self) -> Vec<serde_json::Value> {
        self.messages
            .iter()
            .map(|m| serde_json::json!({"role": m.role.name(), "content": m.content}))
            .collect()
    }
}

/// A ready-to-send HTTP request.
#[derive(Clone, PartialEq)]
pub struct HttpRequest {
    pub method: &'static str,
    pub url: String,
    /// Lower-case names; values that carry secrets are `HeaderValue::Sensitive`.
    pub headers: Vec<(String, HeaderValue)>,
    /// UTF-8 JSON.
    pub body: Vec<u8>,
}

impl HttpRequest {
    /// The value of header `name` (case-insensitive), if set.
    pub fn header(&self, name: &str) -> Option<&HeaderValue> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }

    fn post_json(url: String, accept: &str, body: &serde_json::Value) -> Self {
        HttpRequest {
            method: "POST",
            url,
            headers: vec![
                plain("content-type", "application/json"),
                plain("accept", accept),
            ],
            body: body.to_string().into_bytes(),
        }
    }
}

impl std::fmt::Debug for HttpRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The body never holds a key (keys go in headers), so it is shown as text.
        f.debug_struct("HttpRequest")
            .field("method", &self.method)
            .field("url", &self.url)
            .field("headers", &self.headers)
            .field("body", &String::from_utf8_lossy(&self.body))
            .finish()
    }
}

/// Builds the streaming request `spec` describes.
pub fn build_request(spec: &RequestSpec) -> Result<HttpRequest> {
    match spec.api {
        Api::OpenaiChat => openai::chat(spec),
        Api::OpenaiCompletions => openai::completions(spec),
        Api::OpenaiResponses => openai::responses(spec),
        Api::Anthropic => anthropic::messages(spec),
        Api::Gemini => gemini::stream_generate_content(spec),
        Api::OllamaChat => ollama::chat(spec),
        Api::OllamaGenerate => ollama::generate(spec),
        Api::VercelUi => vercel::ui_chat(spec),
        Api::Local => openai::local(spec),
    }
}

/// [`build_request`] for a caller running in a web page: adds the headers that browsers'
/// cross-origin rules require of some APIs.
pub fn build_browser_request(spec: &RequestSpec) -> Result<HttpRequest> {
    let mut request = build_request(spec)?;
    if spec.api == Api::Anthropic {
        request
            .headers
            .push(plain("anthropic-dangerous-direct-browser-access", "true"));
    }
    Ok(request)
}

fn plain(name: &str, value: &str) -> (String, HeaderValue) {
    (name.to_owned(), HeaderValue::Plain(value.to_owned()))
}

fn sensitive(name: &str, value: String) -> (String, HeaderValue) {
    (name.to_owned(), HeaderValue::Sensitive(Secret::new(value)))
}

/// `Authorization: Bearer <key>` when a key is set.
fn bearer(request: &mut HttpRequest, key: Option<&Secret>) {
    if let Some(key) = key {
        request.headers.push(sensitive(
            "authorization",
            format!("Bearer {}", key.expose()),
        ));
    }
}

/// Temperature as JSON; `f32 → f64` through the shortest decimal so 0.7 stays 0.7.
fn temperature(t: f32) -> serde_json::Value {
    let t: f64 = t.to_string().parse().unwrap_or(f64::from(t));
    serde_json::json!(t)
}

const SSE_ACCEPT: &str = "text/event-stream";

impl Redactor {
    /// A redactor for every credential of `spec`: its key, and the userinfo (as written and
    /// as basic auth sends it) and secret-looking query values of its URL (Gemini's `?key=`).
    pub fn for_spec(spec: &RequestSpec) -> Redactor {
        let mut r = Redactor::new(spec.api_key.as_ref());
        for secret in crate::redact::url_secrets(&spec.base_url) {
            r.add(&secret);
        }
        r
    }
}

#[cfg(test)]
mod tests;
