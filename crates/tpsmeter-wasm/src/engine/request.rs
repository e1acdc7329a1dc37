//! One generation: the request as JS sends it (checked and capped), the run with its
//! per-token callback, and the result as JSON text.

use serde::{Deserialize, Serialize};
use tpsmeter_gpu::engine::{Backend, Engine};
use tpsmeter_model::chat::ChatMessage;
use tpsmeter_model::generate::{CancelToken, GenerateParams, StopReason, TokenEvent};
use tpsmeter_model::sample::SamplerConfig;
use wasm_bindgen::prelude::*;

use super::loaded::Work;
use super::{gpu_err, performance_now, request_err};

/// Most tokens one request may ask for.
const MAX_TOKENS_LIMIT: u32 = 1 << 16;
/// Most stop strings, and characters in each.
const MAX_STOPS: usize = 16;
const MAX_STOP_CHARS: usize = 256;

/// One generation request (snake_case, as OpenAI's API names them).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct GenerateRequest {
    /// Chat messages, rendered with the model's template.
    messages: Option<Vec<Message>>,
    /// Or a raw prompt (completions).
    prompt: Option<String>,
    max_tokens: Option<u32>,
    temperature: Option<f32>,
    top_p: Option<f32>,
    top_k: Option<u32>,
    min_p: Option<f32>,
    repetition_penalty: Option<f32>,
    seed: Option<u64>,
    #[serde(default)]
    stop: Vec<String>,
    /// Keep going past end-of-generation tokens (benchmarks that need every token).
    #[serde(default)]
    ignore_eos: bool,
    /// Unix seconds for templates that print the date.
    now_unix_seconds: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Message {
    role: String,
    content: String,
}

/// What one generation did (JSON text to JS).
#[derive(Debug, Serialize)]
pub(super) struct GenerateResult {
    text: String,
    prompt_tokens: usize,
    reused_tokens: usize,
    completion_tokens: usize,
    tokens: Vec<u32>,
    token_times_ms: Vec<f64>,
    start_ms: f64,
    end_ms: f64,
    /// `stop`, `length`, `cancelled` or `context_full`.
    finish_reason: &'static str,
    /// What the backend did for this generation (filled in by the caller, which knows it).
    #[serde(flatten)]
    pub(super) work: Work,
}

/// One generation on an engine taken out of its slot.
pub(super) async fn run<M: Backend>(
    engine: &mut Engine<M>,
    req: &GenerateRequest,
    params: &GenerateParams,
    sampling: &SamplerConfig,
    cancel: &CancelToken,
    on_token: &js_sys::Function,
) -> Result<GenerateResult, JsValue> {
    let prompt = match (&req.messages, &req.prompt) {
        (Some(messages), None) => {
            let messages: Vec<ChatMessage> = messages
                .iter()
                .map(|m| ChatMessage::new(m.role.clone(), m.content.clone()))
                .collect();
            engine.encode_chat(&messages, req.now_unix_seconds)
        }
        (None, Some(prompt)) => engine.encode(prompt),
        _ => return Err(request_err("give exactly one of messages and prompt")),
    }
    .map_err(gpu_err)?;
    let now = performance_now()?;
    let mut clock = || now.call();
    let mut callback_error = None;
    let mut on_event = |ev: &TokenEvent| {
        let id = ev.token.map_or(JsValue::UNDEFINED, JsValue::from);
        let text = JsValue::from_str(&ev.text);
        if let Err(e) = on_token.call3(&JsValue::NULL, &text, &id, &JsValue::from(ev.time)) {
            callback_error.get_or_insert(e);
        }
    };
    let g = engine
        .generate_async(&prompt, params, sampling, cancel, &mut clock, &mut on_event)
        .await
        .map_err(gpu_err)?;
    // The page's callback threw: its own error, unchanged.
    if let Some(e) = callback_error {
        return Err(e);
    }
    let finish_reason = match g.stop {
        StopReason::EndOfGeneration { .. } | StopReason::StopString { .. } => "stop",
        StopReason::MaxTokens => "length",
        StopReason::Cancelled => "cancelled",
        StopReason::ContextFull => "context_full",
    };
    Ok(GenerateResult {
        text: g.text,
        prompt_tokens: g.prompt_tokens,
        reused_tokens: g.reused_tokens,
        completion_tokens: g.tokens.len(),
        tokens: g.tokens,
        token_times_ms: g.token_times,
        start_ms: g.start,
        end_ms: g.end,
        finish_reason,
        work: Work::default(),
    })
}

/// Generation and sampling settings from a request, with OpenAI's defaults (temperature 1,
/// top_p 1) and every value range-checked.
pub(super) fn parse_request(
    req: &GenerateRequest,
) -> Result<(GenerateParams, SamplerConfig), JsValue> {
    let max_tokens = req.max_tokens.unwrap_or(256);
    if max_tokens == 0 || max_tokens > MAX_TOKENS_LIMIT {
        return Err(request_err(format!(
            "max_tokens must be 1 to {MAX_TOKENS_LIMIT}"
        )));
    }
    if req.stop.len() > MAX_STOPS
        || req
            .stop
            .iter()
            .any(|s| s.is_empty() || s.chars().count() > MAX_STOP_CHARS)
    {
        return Err(request_err(format!(
            "stop takes up to {MAX_STOPS} non-empty strings of up to {MAX_STOP_CHARS} characters"
        )));
    }
    let in_range = |name: &str, v: Option<f32>, lo: f32, hi: f32| -> Result<Option<f32>, JsValue> {
        match v {
            Some(x) if !(x.is_finite() && (lo..=hi).contains(&x)) => {
                Err(request_err(format!("{name} must be within {lo} to {hi}")))
            }
            other => Ok(other),
        }
    };
    let mut sampling = SamplerConfig {
        temperature: 1.0,
        top_k: 0,
        top_p: 1.0,
        min_p: 0.0,
        ..SamplerConfig::default()
    };
    if let Some(t) = in_range("temperature", req.temperature, 0.0, 2.0)? {
        sampling.temperature = t;
    }
    if let Some(p) = in_range("top_p", req.top_p, 0.0, 1.0)? {
        sampling.top_p = p;
    }
    if let Some(p) = in_range("min_p", req.min_p, 0.0, 1.0)? {
        sampling.min_p = p;
    }
    if let Some(p) = in_range("repetition_penalty", req.repetition_penalty, 0.0, 10.0)? {
        sampling.repetition_penalty = p;
    }
    if let Some(k) = req.top_k {
        sampling.top_k = k;
    }
    if let Some(seed) = req.seed {
        sampling.seed = seed;
    }
    let params = GenerateParams {
        max_tokens: max_tokens as usize,
        stop_strings: req.stop.clone(),
        stop_tokens: Vec::new(),
        ignore_eos: req.ignore_eos,
    };
    Ok((params, sampling))
}
