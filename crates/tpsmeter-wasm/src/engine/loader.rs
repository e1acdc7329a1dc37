//! Loading: `EngineLoader` takes a GGUF file as it downloads and makes an `Engine`, on the
//! GPU or the CPU; `probeAdapter` measures the adapter on its own device.

use std::cell::RefCell;
use std::rc::Rc;

use serde::Deserialize;
#[cfg(feature = "cpu")]
use tpsmeter_gpu::cpu::{CpuOptions, CpuTarget};
#[cfg(feature = "gpu")]
use tpsmeter_gpu::engine::GpuTarget;
use tpsmeter_gpu::engine::{EngineLoader, FileChecks, LoadTarget};
#[cfg(feature = "gpu")]
use tpsmeter_gpu::gpu::context::{AdapterProfile, ContextOptions, GpuContext};
#[cfg(feature = "gpu")]
use tpsmeter_gpu::probe::{ProbeOptions, probe};
use tpsmeter_model::generate::CancelToken;
use tpsmeter_model::options::ModelOptions;
use wasm_bindgen::prelude::*;

use super::loaded::{Loaded, with_engine};
#[cfg(feature = "gpu")]
use super::performance_now;
use super::{JsEngine, Slot, gpu_err, request_err, state_err};

/// How to create the device (camelCase in JS).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LoaderOptions {
    /// `"webgpu"` or `"cpu"`: which of this build's backends to load into (its only one
    /// when omitted, WebGPU where it has both).
    backend: Option<String>,
    /// WebGPU: `"cpu"` (SwiftShader and other CPU rasterisers: barrier-free kernel shapes)
    /// or `"gpu"`; the page decides from `GPUAdapterInfo`, which wgpu does not expose.
    /// The CPU backend has no use for it.
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    profile: Option<String>,
    /// Largest context in tokens (KV cache size); the model's own limit caps it.
    max_context: Option<usize>,
    /// Use the f32 path even where `shader-f16` exists (WebGPU).
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    disable_f16: Option<bool>,
    /// WebGPU: decode steps kept submitted ahead of the id read back (1 ..= 4; default the
    /// adapter's).
    in_flight: Option<usize>,
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

/// A loader for either backend.
#[derive(Debug)]
enum AnyLoader {
    #[cfg(feature = "gpu")]
    Gpu(EngineLoader<GpuTarget>),
    #[cfg(feature = "cpu")]
    Cpu(EngineLoader<CpuTarget>),
}

/// Runs `$body` with `$l` bound to the loader, whatever its backend.
macro_rules! with_loader {
    ($any:expr, $l:ident => $body:expr) => {
        match $any {
            #[cfg(feature = "gpu")]
            AnyLoader::Gpu($l) => $body,
            #[cfg(feature = "cpu")]
            AnyLoader::Cpu($l) => $body,
        }
    };
}

/// Sets the checks every load makes (the digest is always taken: the model cache records
/// it) on a new loader.
fn with_digest<T: LoadTarget>(mut loader: EngineLoader<T>) -> Result<EngineLoader<T>, JsValue> {
    loader
        .set_checks(FileChecks {
            sha256: true,
            ..FileChecks::default()
        })
        .map_err(gpu_err)?;
    Ok(loader)
}

/// A GGUF file on its way into GPU or CPU memory.
#[wasm_bindgen(js_name = EngineLoader)]
#[derive(Debug)]
pub struct JsEngineLoader {
    inner: Option<AnyLoader>,
    /// Lowercase hex SHA-256 of the model's bytes, once the loader has finished.
    sha256: Option<String>,
    /// The model's bytes among those pushed, as of the last call.
    model_bytes: u64,
}

#[wasm_bindgen(js_class = EngineLoader)]
impl JsEngineLoader {
    /// Requests the adapter and device (WebGPU), or readies the CPU backend. `options`:
    /// `{ backend?, profile?, maxContext?, disableF16?, inFlight? }`.
    pub async fn create(options: JsValue) -> Result<JsEngineLoader, JsValue> {
        let opts: LoaderOptions = if options.is_undefined() || options.is_null() {
            LoaderOptions::default()
        } else {
            serde_wasm_bindgen::from_value(options).map_err(request_err)?
        };
        let mut model = ModelOptions::default();
        if let Some(n) = opts.max_context {
            model.max_context = n;
        }
        if let Some(k) = opts.in_flight {
            if !(1..=tpsmeter_gpu::runtime::MAX_IN_FLIGHT).contains(&k) {
                return Err(request_err("inFlight must be a whole number from 1 to 4"));
            }
            model.in_flight = Some(k);
        }
        let default = if cfg!(feature = "gpu") {
            "webgpu"
        } else {
            "cpu"
        };
        let inner = match opts.backend.as_deref().unwrap_or(default) {
            #[cfg(feature = "gpu")]
            "webgpu" => AnyLoader::Gpu(with_digest(EngineLoader::with_target(
                gpu_target(&opts).await?,
                model,
            ))?),
            // Threads are the global pool's (the page starts it); one in a build without.
            #[cfg(feature = "cpu")]
            "cpu" => AnyLoader::Cpu(with_digest(EngineLoader::<CpuTarget>::cpu(
                CpuOptions::default(),
                model,
            ))?),
            other => {
                return Err(request_err(format!(
                    "backend {other:?} is not in this build (it has {})",
                    [
                        cfg!(feature = "gpu").then_some("\"webgpu\""),
                        cfg!(feature = "cpu").then_some("\"cpu\"")
                    ]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(" and ")
                )));
            }
        };
        Ok(JsEngineLoader {
            inner: Some(inner),
            sha256: None,
            model_bytes: 0,
        })
    }

    /// The bytes of a synthetic model `NAME[:QUANT]` with weights from `seed` (a real model's
    /// exact shapes and tensor types, random weights: `tpsmeter_gpu::synthetic`), for this
    /// loader to be pushed: to measure a model's speed without downloading it, and for
    /// tests. Its text is noise, and `info.synthetic` says so.
    pub fn synthesize(&self, spec: &str, seed: u32) -> Result<Vec<u8>, JsValue> {
        let spec = tpsmeter_gpu::synthetic::SyntheticSpec::parse(spec).map_err(gpu_err)?;
        spec.build(u64::from(seed)).map_err(gpu_err)
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
        with_loader!(self.loader()?, l => l.set_checks(checks)).map_err(gpu_err)
    }

    /// The next bytes of the file. Resolves to how many bytes of the file so far are the
    /// model's (see `modelBytes`).
    pub fn push(&mut self, chunk: &[u8]) -> Result<f64, JsValue> {
        let loader = self.loader()?;
        self.model_bytes = with_loader!(loader, l => {
            l.push(chunk).map_err(gpu_err)?;
            l.model_bytes()
        });
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
        self.inner
            .as_ref()
            .is_some_and(|any| with_loader!(any, l => l.wants_more()))
    }

    /// The model's length in bytes, once the header is complete.
    #[wasm_bindgen(getter, js_name = modelLength)]
    pub fn model_length(&self) -> Option<f64> {
        self.inner
            .as_ref()
            .and_then(|any| with_loader!(any, l => l.model_len()))
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
        self.model_bytes = with_loader!(loader, l => {
            l.flush().map_err(gpu_err)?;
            l.model_bytes()
        });
        let loader = self
            .inner
            .take()
            .ok_or_else(|| state_err("the loader has finished"))?;
        let loaded = match loader {
            #[cfg(feature = "gpu")]
            AnyLoader::Gpu(l) => {
                let mut engine = l.finish().map_err(gpu_err)?;
                // `Instant` panics on wasm32: the engine times its steps on the scope's clock.
                engine.model_mut().set_clock(super::performance_now_ms);
                Loaded::Gpu(Box::new(engine))
            }
            #[cfg(feature = "cpu")]
            AnyLoader::Cpu(l) => {
                let mut engine = l.finish().map_err(gpu_err)?;
                engine
                    .model_mut()
                    .set_pause(tpsmeter_gpu::cpu::Pause::new(super::yield_to_event_loop));
                Loaded::Cpu(Box::new(engine))
            }
        };
        self.sha256 = with_engine!(&loaded, e => e.sha256().map(str::to_owned));
        Ok(JsEngine {
            slot: Rc::new(RefCell::new(Slot::Idle(loaded))),
            cancel: CancelToken::new(),
        })
    }
}

impl JsEngineLoader {
    fn loader(&mut self) -> Result<&mut AnyLoader, JsValue> {
        self.inner
            .as_mut()
            .ok_or_else(|| state_err("the loader has finished"))
    }
}

/// The WebGPU device `opts` asks for.
#[cfg(feature = "gpu")]
async fn gpu_target(opts: &LoaderOptions) -> Result<GpuTarget, JsValue> {
    let ctx = GpuContext::new(&ContextOptions {
        adapter_name: None,
        profile: parse_profile(opts.profile.as_deref())?,
        disable_f16: opts.disable_f16.unwrap_or(false),
        max_binding: None,
    })
    .await
    .map_err(gpu_err)?;
    // The engine's API shares the context as `Arc` (natively across threads); on the web
    // wgpu's handles are not `Send`, and everything runs on the Worker's one thread.
    #[allow(clippy::arc_with_non_send_sync)]
    Ok(GpuTarget(std::sync::Arc::new(ctx)))
}

/// Measures this scope's WebGPU adapter (see `tpsmeter_gpu::probe`): streaming-read GB/s,
/// per-dispatch cost, submit + readback latency, as JSON text. `options`: `{ profile?,
/// mib? }` (MiB read per dispatch, default 64). Takes a few seconds; its own device.
#[cfg(feature = "gpu")]
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
        max_binding: None,
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

#[cfg(feature = "gpu")]
fn parse_profile(profile: Option<&str>) -> Result<Option<AdapterProfile>, JsValue> {
    match profile {
        None => Ok(None),
        Some("cpu") => Ok(Some(AdapterProfile::Cpu)),
        Some("gpu") => Ok(Some(AdapterProfile::Gpu)),
        Some(_) => Err(request_err("profile must be \"cpu\" or \"gpu\"")),
    }
}
