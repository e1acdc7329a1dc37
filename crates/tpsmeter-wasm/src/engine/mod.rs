//! The local engine for JavaScript (the `gpu` feature: WebGPU; the `cpu` feature: wasm
//! SIMD): `EngineLoader` takes a GGUF file as it downloads, `Engine` generates. Runs in a
//! dedicated Worker (the npm package's `tpsmeter/engine`), where awaiting the GPU or
//! computing on the CPU never blocks a page. Both builds export the same classes.

use std::cell::RefCell;
use std::rc::Rc;

use tpsmeter_gpu::GpuError;
use tpsmeter_model::ModelError;
use tpsmeter_model::generate::CancelToken;
use tpsmeter_model::request::Shape;
use wasm_bindgen::prelude::*;

use crate::named::named;

mod loaded;
mod loader;
mod request;
#[cfg(feature = "threads")]
mod threads;

use loaded::{Loaded, with_engine};
pub use loader::JsEngineLoader;
use request::run;

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

fn gpu_err(e: GpuError) -> JsValue {
    named(e.kind(), &e.to_string())
}

/// A model floor's error (the tokenizer's, a template's), named as [`gpu_err`] names it.
fn model_err(e: ModelError) -> JsValue {
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

/// Resolves after a task posted through a `MessageChannel`: the event loop runs once (a
/// cancel message gets through), without `setTimeout`'s 4 ms clamp on nested timers. The
/// CPU backend awaits it after every forward pass, having nothing else to await.
#[cfg(feature = "cpu")]
fn yield_to_event_loop() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>> {
    Box::pin(async {
        let promise = js_sys::Promise::new(&mut |resolve, _| {
            let global = js_sys::global();
            let channel = js_sys::Reflect::get(&global, &JsValue::from_str("MessageChannel"))
                .ok()
                .and_then(|c| c.dyn_into::<js_sys::Function>().ok())
                .and_then(|c| js_sys::Reflect::construct(&c, &js_sys::Array::new()).ok());
            let posted = channel.is_some_and(|channel| {
                let port =
                    |name: &str| js_sys::Reflect::get(&channel, &JsValue::from_str(name)).ok();
                let (Some(port1), Some(port2)) = (port("port1"), port("port2")) else {
                    return false;
                };
                let post = js_sys::Reflect::get(&port2, &JsValue::from_str("postMessage"))
                    .ok()
                    .and_then(|f| f.dyn_into::<js_sys::Function>().ok());
                js_sys::Reflect::set(&port1, &JsValue::from_str("onmessage"), &resolve).is_ok()
                    && post.is_some_and(|post| post.call1(&port2, &JsValue::UNDEFINED).is_ok())
            });
            if !posted {
                let _ = resolve.call0(&JsValue::NULL);
            }
        });
        let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
    })
}

fn request_err(e: impl std::fmt::Display) -> JsValue {
    named("InvalidRequest", &e.to_string())
}

fn state_err(message: &str) -> JsValue {
    named("InvalidState", message)
}

/// Where the engine is: a generation takes it out of the slot for its duration (no borrow
/// is held across an await), so calls meanwhile get a clear "busy" instead of a panic.
#[derive(Debug)]
enum Slot {
    Idle(Loaded),
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
        self.with(|l| with_engine!(l, e => e.name().to_owned()))
    }

    /// The backend (`"webgpu"` or `"cpu"`), its adapter or threads and SIMD, limits and the
    /// per-token figures the roofline needs, as JSON.
    pub fn info(&self) -> Result<String, JsValue> {
        self.with(|l| l.info().to_string())
    }

    /// Token ids of `text` (with the model's BOS where it wants one).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, JsValue> {
        self.with(|l| with_engine!(l, e => e.encode(text)))?
            .map_err(gpu_err)
    }

    /// Generates for `request` (JSON text in OpenAI's shape, `{ messages | prompt,
    /// max_tokens, temperature, top_p, top_k, min_p, repetition_penalty, seed, stop,
    /// ignore_eos }`, read with `tpsmeter serve`'s defaults and ranges), calling
    /// `on_token(text, id, t_ms)` for each token as its text becomes showable (`id` is
    /// `undefined` for the final flush). Resolves to the result as JSON text. One at a time.
    pub async fn generate(
        &self,
        request: String,
        on_token: js_sys::Function,
    ) -> Result<String, JsValue> {
        let req =
            tpsmeter_model::request::parse(Shape::Either, request.as_bytes()).map_err(model_err)?;
        let mut engine = self.take()?;
        self.cancel.reset();
        let mark = engine.mark();
        let result = with_engine!(&mut engine, e => {
            run(e, &req, &self.cancel, &on_token).await
        });
        let result = match result {
            Ok(mut g) => {
                g.work = engine.work_since(&mark);
                serde_json::to_string(&g).map_err(request_err)
            }
            Err(e) => Err(e),
        };
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
        let result = with_engine!(&mut engine, e => async {
            let ids = e.encode(&prompt).map_err(gpu_err)?;
            let steps = e.teacher_forced(&ids, &forced).await.map_err(gpu_err)?;
            serde_json::to_string(&steps).map_err(request_err)
        }
        .await);
        self.put_back(engine, result).await
    }

    /// Prepares every graph the model can run and compiles and primes their pipelines
    /// (`tpsmeter_gpu::runtime::warm`), so that the first answer is as fast as later ones:
    /// call once, right after `EngineLoader.finish`. `on_progress(graphsDone, graphs,
    /// pipelines)` is called before each graph and after each pipeline the browser has
    /// compiled; returning `false` stops the compilation (an `AbortError`). Resolves to JSON
    /// `{ pipelines, shaderModules, graphs, compileMs, primeMs }` (all 0 on the CPU, which
    /// compiles nothing).
    pub async fn compile(&self, on_progress: js_sys::Function) -> Result<String, JsValue> {
        let mut engine = self.take()?;
        let result = match &mut engine {
            #[cfg(feature = "gpu")]
            Loaded::Gpu(e) => {
                let mut clock = performance_now_ms;
                let mut progress = |p: tpsmeter_gpu::runtime::CompileProgress| {
                    let go_on = on_progress.call3(
                        &JsValue::NULL,
                        &JsValue::from(p.graphs_done as f64),
                        &JsValue::from(p.graphs as f64),
                        &JsValue::from(p.pipelines as f64),
                    );
                    // Only an explicit `false` stops; a throwing callback stops too.
                    go_on.is_ok_and(|v| v.as_bool() != Some(false))
                };
                e.model_mut()
                    .compile(&mut clock, None, &mut progress)
                    .await
                    .map_err(gpu_err)
                    .and_then(|r| serde_json::to_string(&r).map_err(request_err))
            }
            #[cfg(feature = "cpu")]
            Loaded::Cpu(_) => {
                let _ = &on_progress;
                serde_json::to_string(&tpsmeter_gpu::runtime::CompileReport::default())
                    .map_err(request_err)
            }
        };
        self.put_back(engine, result).await
    }

    /// Stops the generation in flight after its current token.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Frees the model's memory (GPU buffers are destroyed when dropped). Later calls fail.
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
    fn take(&self) -> Result<Loaded, JsValue> {
        let previous = std::mem::replace(&mut *self.slot.borrow_mut(), Slot::Busy);
        match previous {
            Slot::Idle(engine) => match engine.lost() {
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
        engine: Loaded,
        mut result: Result<String, JsValue>,
    ) -> Result<String, JsValue> {
        if result.is_err() {
            next_task().await;
            if let Some(lost) = engine.lost() {
                result = Err(lost_err(lost));
            }
        }
        let mut slot = self.slot.borrow_mut();
        if !matches!(*slot, Slot::Disposed) {
            *slot = Slot::Idle(engine);
        }
        result
    }

    fn with<T>(&self, f: impl FnOnce(&Loaded) -> T) -> Result<T, JsValue> {
        match &*self.slot.borrow() {
            Slot::Idle(engine) => Ok(f(engine)),
            Slot::Busy => Err(state_err("the engine is busy with a generation")),
            Slot::Disposed => Err(state_err("the engine was disposed")),
        }
    }
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
