//! The local engine for JavaScript (the `gpu` feature): `EngineLoader` takes a GGUF file as
//! it downloads, `Engine` generates. Runs in a dedicated Worker (the npm package's
//! `tpsmeter/engine`), where awaiting the GPU never blocks a page.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tpsmeter_gpu::GpuError;
use tpsmeter_gpu::chat::ChatMessage;
use tpsmeter_gpu::engine::{Engine, EngineLoader, FileChecks, ModelOptions, StepCost};
use tpsmeter_gpu::generate::{CancelToken, GenerateParams, StopReason, TokenEvent};
use tpsmeter_gpu::gpu::context::{AdapterProfile, ContextOptions, GpuContext};
use tpsmeter_gpu::kernels::SamplerConfig;
use tpsmeter_gpu::probe::{ProbeOptions, probe};
use wasm_bindgen::prelude::*;

/// Most tokens one request may ask for.
const MAX_TOKENS_LIMIT: u32 = 1 << 16;
/// Most stop strings, and characters in each.
const MAX_STOPS: usize = 16;
const MAX_STOP_CHARS: usize = 256;

/// The global property where the panic hook leaves the last panic's message.
const PANIC_PROPERTY: &str = "__tpsmeterPanic";

/// The engine's panic hook: the message goes to the console and to
/// `globalThis.__tpsmeterPanic`. A panic ends in a trap, which reaches JS as a bare
/// `RuntimeError: unreachable`; the Worker reads the cause there, since calling back into a
/// trapped module is not safe.
pub(crate) fn set_panic_hook() {
    static SET: std::sync::Once = std::sync::Once::new();
    SET.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            console_error_panic_hook::hook(info);
            let _ = js_sys::Reflect::set(
                &js_sys::global(),
                &JsValue::from_str(PANIC_PROPERTY),
                &JsValue::from_str(&info.to_string()),
            );
        }));
    });
}

/// A JS `Error` whose `name` says what kind of failure it is. The engine's exports return
/// these rather than `JsError` (which is always named `Error`): the page branches on the
/// name (`InvalidModel`, `DeviceLost`, `OutOfMemory`, ... from [`GpuError::kind`];
/// `InvalidRequest` and `InvalidState` from here), and device loss must be told apart from a
/// bad request.
fn named(name: &str, message: &str) -> JsValue {
    let e = js_sys::Error::new(message);
    e.set_name(name);
    e.into()
}

fn gpu_err(e: GpuError) -> JsValue {
    named(e.kind(), &e.to_string())
}

/// `DeviceLost`, with what the caller can do about it.
fn lost_err(e: GpuError) -> JsValue {
    named(e.kind(), &format!("{e}; create the engine again"))
}

/// Resolves after the current task (a `setTimeout(0)`), so that events queued behind it
/// (such as a device's `lost`) have run.
async fn next_task() {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        let set_timeout = js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("setTimeout"))
            .ok()
            .and_then(|f| f.dyn_into::<js_sys::Function>().ok());
        match set_timeout {
            Some(f) => {
                let _ = f.call2(&JsValue::NULL, &resolve, &JsValue::from(0));
            }
            None => {
                let _ = resolve.call0(&JsValue::NULL);
            }
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

fn request_err(e: impl std::fmt::Display) -> JsValue {
    named("InvalidRequest", &e.to_string())
}

fn state_err(message: &str) -> JsValue {
    named("InvalidState", message)
}

/// How to create the device (camelCase in JS).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LoaderOptions {
    /// `"cpu"` (SwiftShader and other CPU rasterisers: barrier-free kernel shapes) or
    /// `"gpu"`; the page decides from `GPUAdapterInfo`, which wgpu does not expose.
    profile: Option<String>,
    /// Largest context in tokens (KV cache size); the model's own limit caps it.
    max_context: Option<usize>,
    /// Use the f32 path even where `shader-f16` exists.
    disable_f16: Option<bool>,
}

/// What the file must satisfy (camelCase in JS).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expectations {
    /// The file's length in bytes, when known: a header whose tensors need more is refused
    /// as soon as it is complete.
    size: Option<u64>,
    /// The SHA-256 the model must have (64 hex digits): `finish` refuses another with a
    /// `ChecksumMismatch`.
    sha256: Option<String>,
}

/// 64 hex digits as the 32 bytes of a SHA-256.
fn parse_sha256(hex: &str) -> Result<[u8; 32], JsValue> {
    let bad = || request_err("sha256 must be 64 hexadecimal digits");
    if hex.len() != 64 || !hex.is_ascii() {
        return Err(bad());
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    Ok(out)
}

/// A GGUF file on its way into GPU memory.
#[wasm_bindgen(js_name = EngineLoader)]
#[derive(Debug)]
pub struct JsEngineLoader {
    inner: Option<EngineLoader>,
    /// Lowercase hex SHA-256 of the model's bytes, once the loader has finished.
    sha256: Option<String>,
    /// The model's bytes among those pushed, as of the last call.
    model_bytes: u64,
}

#[wasm_bindgen(js_class = EngineLoader)]
impl JsEngineLoader {
    /// Requests the adapter and device. `options`: `{ profile?, maxContext?, disableF16? }`.
    pub async fn create(options: JsValue) -> Result<JsEngineLoader, JsValue> {
        let opts: LoaderOptions = if options.is_undefined() || options.is_null() {
            LoaderOptions::default()
        } else {
            serde_wasm_bindgen::from_value(options).map_err(request_err)?
        };
        let profile = parse_profile(opts.profile.as_deref())?;
        let ctx = GpuContext::new(&ContextOptions {
            adapter_name: None,
            profile,
            disable_f16: opts.disable_f16.unwrap_or(false),
        })
        .await
        .map_err(gpu_err)?;
        let mut model = ModelOptions::default();
        if let Some(n) = opts.max_context {
            model.max_context = n;
        }
        // The engine's API shares the context as `Arc` (natively across threads); on the web
        // wgpu's handles are not `Send`, and everything runs on the Worker's one thread.
        #[allow(clippy::arc_with_non_send_sync)]
        let ctx = Arc::new(ctx);
        let mut loader = EngineLoader::new(ctx, model);
        // The digest is always taken: the model cache records it.
        loader
            .set_checks(FileChecks {
                sha256: true,
                ..FileChecks::default()
            })
            .map_err(gpu_err)?;
        Ok(JsEngineLoader {
            inner: Some(loader),
            sha256: None,
            model_bytes: 0,
        })
    }

    /// What the file must satisfy, before the first `push`: `{ size?, sha256? }` (its
    /// length when known, and the SHA-256 it must have).
    pub fn expect(&mut self, options: JsValue) -> Result<(), JsValue> {
        let e: Expectations = serde_wasm_bindgen::from_value(options).map_err(request_err)?;
        let checks = FileChecks {
            len: e.size,
            sha256: true,
            expect_sha256: e.sha256.as_deref().map(parse_sha256).transpose()?,
        };
        self.loader()?.set_checks(checks).map_err(gpu_err)
    }

    /// The next bytes of the file. Resolves to how many bytes of the file so far are the
    /// model's (see `modelBytes`).
    pub fn push(&mut self, chunk: &[u8]) -> Result<f64, JsValue> {
        let loader = self.loader()?;
        loader.push(chunk).map_err(gpu_err)?;
        self.model_bytes = loader.model_bytes();
        Ok(self.model_bytes as f64)
    }

    /// How many bytes at the start of the file are known to be the model's: none until the
    /// header is complete, then all that arrived up to the end of the last tensor. What a
    /// cache should keep; bytes pushed past it are not read.
    #[wasm_bindgen(getter, js_name = modelBytes)]
    pub fn model_bytes(&self) -> f64 {
        self.model_bytes as f64
    }

    /// Whether more of the file can belong to the model: false once the end of its last
    /// tensor has arrived, when the download should stop.
    #[wasm_bindgen(getter, js_name = wantsMore)]
    pub fn wants_more(&self) -> bool {
        self.inner.as_ref().is_some_and(EngineLoader::wants_more)
    }

    /// The model's length in bytes, once the header is complete.
    #[wasm_bindgen(getter, js_name = modelLength)]
    pub fn model_length(&self) -> Option<f64> {
        self.inner
            .as_ref()
            .and_then(EngineLoader::model_len)
            .map(|n| n as f64)
    }

    /// Lowercase hex SHA-256 of the model's bytes, once [`JsEngineLoader::finish`]
    /// succeeded.
    #[wasm_bindgen(getter)]
    pub fn sha256(&self) -> Option<String> {
        self.sha256.clone()
    }

    /// The file ended: checks it was whole (and its SHA-256, when `create` was given one)
    /// and returns the engine. `modelBytes` is final from here on, even when this fails.
    pub fn finish(&mut self) -> Result<JsEngine, JsValue> {
        let loader = self.loader()?;
        loader.flush().map_err(gpu_err)?;
        self.model_bytes = loader.model_bytes();
        let loader = self
            .inner
            .take()
            .ok_or_else(|| state_err("the loader has finished"))?;
        let mut engine = loader.finish().map_err(gpu_err)?;
        // `Instant` panics on wasm32: the engine times its steps on the scope's clock.
        engine.model_mut().set_clock(performance_now_ms);
        self.sha256 = engine.sha256().map(str::to_owned);
        Ok(JsEngine {
            slot: Rc::new(RefCell::new(Slot::Idle(Box::new(engine)))),
            cancel: CancelToken::new(),
        })
    }
}

impl JsEngineLoader {
    fn loader(&mut self) -> Result<&mut EngineLoader, JsValue> {
        self.inner
            .as_mut()
            .ok_or_else(|| state_err("the loader has finished"))
    }
}

/// Measures this scope's WebGPU adapter (see `tpsmeter_gpu::probe`): streaming-read GB/s,
/// per-dispatch cost, submit + readback latency, as JSON text. `options`: `{ profile?,
/// mib? }` (MiB read per dispatch, default 64). Takes a few seconds; its own device.
#[wasm_bindgen(js_name = probeAdapter)]
pub async fn probe_adapter(options: JsValue) -> Result<String, JsValue> {
    #[derive(Debug, Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Options {
        profile: Option<String>,
        mib: Option<u64>,
    }
    let opts: Options = if options.is_undefined() || options.is_null() {
        Options::default()
    } else {
        serde_wasm_bindgen::from_value(options).map_err(request_err)?
    };
    let ctx = GpuContext::new(&ContextOptions {
        adapter_name: None,
        profile: parse_profile(opts.profile.as_deref())?,
        disable_f16: false,
    })
    .await
    .map_err(gpu_err)?;
    let mut probe_opts = ProbeOptions::default();
    if let Some(mib) = opts.mib {
        probe_opts.bytes = mib.clamp(1, 1024) << 20;
    }
    let now = performance_now()?;
    let mut clock = || now.call();
    let report = probe(&ctx, &mut clock, &probe_opts)
        .await
        .map_err(gpu_err)?;
    serde_json::to_string(&report).map_err(request_err)
}

fn parse_profile(profile: Option<&str>) -> Result<Option<AdapterProfile>, JsValue> {
    match profile {
        None => Ok(None),
        Some("cpu") => Ok(Some(AdapterProfile::Cpu)),
        Some("gpu") => Ok(Some(AdapterProfile::Gpu)),
        Some(_) => Err(request_err("profile must be \"cpu\" or \"gpu\"")),
    }
}

/// One generation request (snake_case, as OpenAI's API names them).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GenerateRequest {
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
struct GenerateResult {
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
    /// Work the GPU did for this generation (prompt and decode), from the engine's counters.
    submits: u64,
    dispatches: u64,
    readback_bytes: u64,
    /// What the host did per decoded token of this generation (`null` when none was
    /// decoded): the engine's counters and median encode+submit time.
    per_token_cost: Option<StepCost>,
    /// The same per prompt chunk (`null` when the whole prompt was reused).
    prefill_cost: Option<StepCost>,
}

/// Where the engine is: a generation takes it out of the slot for its duration (no borrow
/// is held across an await), so calls meanwhile get a clear "busy" instead of a panic.
#[derive(Debug)]
enum Slot {
    Idle(Box<Engine>),
    Busy,
    Disposed,
}

/// A loaded model.
#[wasm_bindgen(js_name = Engine)]
#[derive(Debug)]
pub struct JsEngine {
    slot: Rc<RefCell<Slot>>,
    cancel: CancelToken,
}

#[wasm_bindgen(js_class = Engine)]
impl JsEngine {
    /// The model's name (`general.name`).
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> Result<String, JsValue> {
        self.with(|e| e.name().to_owned())
    }

    /// Adapter, kernel profile, limits and the per-token figures the roofline needs, as JSON.
    pub fn info(&self) -> Result<String, JsValue> {
        self.with(|e| {
            let model = e.model();
            let ctx = model.context();
            serde_json::json!({
                "adapter": ctx.info.name,
                "backend": format!("{:?}", ctx.info.backend),
                "profile": match ctx.profile { AdapterProfile::Cpu => "cpu", AdapterProfile::Gpu => "gpu" },
                "shaderF16": ctx.has_f16(),
                "maxStorageBindingBytes": ctx.max_binding(),
                "maxContext": model.max_context(),
                "weightBytesPerToken": model.weight_bytes_per_token(),
                "dispatchesPerToken": model.dispatches_per_token(),
                "vocabSize": e.tokenizer().vocab_size(),
            })
            .to_string()
        })
    }

    /// Token ids of `text` (with the model's BOS where it wants one).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, JsValue> {
        self.with(|e| e.encode(text))?.map_err(gpu_err)
    }

    /// Generates for `request` (JSON text: `{ messages | prompt, max_tokens, temperature,
    /// top_p, top_k, min_p, repetition_penalty, seed, stop, ignore_eos }`), calling
    /// `on_token(text, id, t_ms)` for each token as its text becomes showable (`id` is
    /// `undefined` for the final flush). Resolves to the result as JSON text. One at a time.
    pub async fn generate(
        &self,
        request: String,
        on_token: js_sys::Function,
    ) -> Result<String, JsValue> {
        let req: GenerateRequest = serde_json::from_str(&request).map_err(request_err)?;
        let (params, sampling) = parse_request(&req)?;
        let mut engine = self.take()?;
        self.cancel.reset();
        let result = run(
            &mut engine,
            &req,
            &params,
            &sampling,
            &self.cancel,
            &on_token,
        )
        .await;
        self.put_back(engine, result).await
    }

    /// Teacher forcing, for checking this engine against another implementation: runs the
    /// raw `prompt` (encoded as `encode` does), then feeds `forced` one token at a time and
    /// resolves to JSON `[{ argmax, gap_to_forced, top2_gap }]`, one entry per forced token
    /// (what the model would have picked there, and how far the forced token's logit is below
    /// it). Leaves the sampler greedy and the KV cache treated as empty.
    #[wasm_bindgen(js_name = teacherForced)]
    pub async fn teacher_forced(
        &self,
        prompt: String,
        forced: Vec<u32>,
    ) -> Result<String, JsValue> {
        let mut engine = self.take()?;
        let result = async {
            let ids = engine.encode(&prompt).map_err(gpu_err)?;
            let steps = engine
                .teacher_forced(&ids, &forced)
                .await
                .map_err(gpu_err)?;
            serde_json::to_string(&steps).map_err(request_err)
        }
        .await;
        self.put_back(engine, result).await
    }

    /// Stops the generation in flight after its current token.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Frees the model's GPU memory (buffers are destroyed when dropped). Later calls fail.
    /// A generation in flight is cancelled and the model dropped when it returns.
    pub fn dispose(&self) {
        self.cancel.cancel();
        *self.slot.borrow_mut() = Slot::Disposed;
    }
}

impl JsEngine {
    /// Takes the engine out of its slot for one long call (the slot says `Busy` meanwhile).
    /// The slot's borrow ends before the other arms run: a `RefMut` held in a `match`
    /// scrutinee lives to the end of the match, and borrowing again there would panic.
    /// A lost device fails here, before any work: nothing on it can succeed.
    fn take(&self) -> Result<Box<Engine>, JsValue> {
        let previous = std::mem::replace(&mut *self.slot.borrow_mut(), Slot::Busy);
        match previous {
            Slot::Idle(engine) => match engine.model().context().lost() {
                Some(lost) => {
                    *self.slot.borrow_mut() = Slot::Idle(engine);
                    Err(lost_err(lost))
                }
                None => Ok(engine),
            },
            other => {
                let busy = matches!(other, Slot::Busy);
                *self.slot.borrow_mut() = other;
                Err(state_err(if busy {
                    "the engine is busy with another generation"
                } else {
                    "the engine was disposed"
                }))
            }
        }
    }

    /// Ends a long call taken with [`JsEngine::take`]: a failure on a lost device is reported
    /// as `DeviceLost` (the browser fails the pending readback a task before the device's
    /// `lost` event, so wait for it: the caller learns the cause, not a generic map failure),
    /// and the engine goes back to its slot, or is dropped, freeing its buffers, when it was
    /// disposed meanwhile.
    async fn put_back(
        &self,
        engine: Box<Engine>,
        mut result: Result<String, JsValue>,
    ) -> Result<String, JsValue> {
        if result.is_err() {
            next_task().await;
            if let Some(lost) = engine.model().context().lost() {
                result = Err(lost_err(lost));
            }
        }
        let mut slot = self.slot.borrow_mut();
        if !matches!(*slot, Slot::Disposed) {
            *slot = Slot::Idle(engine);
        }
        result
    }

    fn with<T>(&self, f: impl FnOnce(&Engine) -> T) -> Result<T, JsValue> {
        match &*self.slot.borrow() {
            Slot::Idle(engine) => Ok(f(engine)),
            Slot::Busy => Err(state_err("the engine is busy with a generation")),
            Slot::Disposed => Err(state_err("the engine was disposed")),
        }
    }
}

/// One generation on an engine taken out of its slot.
async fn run(
    engine: &mut Engine,
    req: &GenerateRequest,
    params: &GenerateParams,
    sampling: &SamplerConfig,
    cancel: &CancelToken,
    on_token: &js_sys::Function,
) -> Result<String, JsValue> {
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
    let before = engine.model().stats();
    let mark = engine.model().cost_mark();
    let g = engine
        .generate_async(&prompt, params, sampling, cancel, &mut clock, &mut on_event)
        .await
        .map_err(gpu_err)?;
    // The page's callback threw: its own error, unchanged.
    if let Some(e) = callback_error {
        return Err(e);
    }
    let after = engine.model().stats();
    let cost = engine.model().cost_since(&mark);
    let finish_reason = match g.stop {
        StopReason::EndOfGeneration { .. } | StopReason::StopString { .. } => "stop",
        StopReason::MaxTokens => "length",
        StopReason::Cancelled => "cancelled",
        StopReason::ContextFull => "context_full",
    };
    serde_json::to_string(&GenerateResult {
        text: g.text,
        prompt_tokens: g.prompt_tokens,
        reused_tokens: g.reused_tokens,
        completion_tokens: g.tokens.len(),
        tokens: g.tokens,
        token_times_ms: g.token_times,
        start_ms: g.start,
        end_ms: g.end,
        finish_reason,
        submits: after.submits - before.submits,
        dispatches: after.dispatches - before.dispatches,
        readback_bytes: after.readback_bytes - before.readback_bytes,
        per_token_cost: cost.decode,
        prefill_cost: cost.prefill,
    })
    .map_err(request_err)
}

/// Generation and sampling settings from a request, with OpenAI's defaults (temperature 1,
/// top_p 1) and every value range-checked.
fn parse_request(req: &GenerateRequest) -> Result<(GenerateParams, SamplerConfig), JsValue> {
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

#[wasm_bindgen]
extern "C" {
    /// `performance.now()` of the global scope (a Worker's or a window's): one import call,
    /// cheap enough to read twice per step.
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    fn performance_now_ms() -> f64;
}

/// `performance.now()` of the global scope (a Worker's or a window's).
struct Now {
    performance: JsValue,
    now: js_sys::Function,
}

impl Now {
    fn call(&self) -> f64 {
        self.now
            .call0(&self.performance)
            .ok()
            .and_then(|v| v.as_f64())
            .unwrap_or(f64::NAN)
    }
}

fn performance_now() -> Result<Now, JsValue> {
    let performance = js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("performance"))
        .map_err(|_| state_err("no performance object in this scope"))?;
    let now = js_sys::Reflect::get(&performance, &JsValue::from_str("now"))
        .ok()
        .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
        .ok_or_else(|| state_err("no performance.now() in this scope"))?;
    Ok(Now { performance, now })
}
