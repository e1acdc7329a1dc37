//! One generation: the request as JS sends it (read by `tpsmeter_model::request`, as
//! `tpsmeter serve` reads it), the run with its per-token callback, and the result as JSON
//! text.

use serde::Serialize;
use tpsmeter_gpu::engine::{Backend, Engine};
use tpsmeter_model::generate::{CancelToken, StopReason, TokenEvent};
use tpsmeter_model::request::{GenerationRequest, Prompt};
use wasm_bindgen::prelude::*;

use super::gpu_err;
use super::loaded::Work;
use super::performance_now;

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
    req: &GenerationRequest,
    cancel: &CancelToken,
    on_token: &js_sys::Function,
) -> Result<GenerateResult, JsValue> {
    let prompt = match &req.prompt {
        Prompt::Chat(messages) => engine.encode_chat(messages, req.now_unix_seconds),
        Prompt::Text(prompt) => engine.encode(prompt),
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
        .generate_async(
            &prompt,
            &req.params,
            &req.sampling,
            cancel,
            &mut clock,
            &mut on_event,
        )
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
