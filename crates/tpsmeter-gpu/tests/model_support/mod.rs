//! Shared by the whole-model tests: the model file and a GPU device from the environment,
//! failing when `TPSMETER_REQUIRE_ASSETS=1` and they are missing, else skipping.
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::Arc;

use tpsmeter_gpu::cpu::{CpuModel, CpuOptions};
use tpsmeter_gpu::engine::{Backend, Engine};
use tpsmeter_gpu::gpu::{ContextOptions, GpuContext};
use tpsmeter_model::config::ModelConfig;
use tpsmeter_model::generate::{CancelToken, GenerateParams, Generation};
use tpsmeter_model::gguf::{GgufFile, GgufWriter, MetadataValue};
use tpsmeter_model::options::ModelOptions;
use tpsmeter_model::sample::SamplerConfig;

/// Whether missing assets are failures (CI) rather than skips.
pub fn required() -> bool {
    std::env::var("TPSMETER_REQUIRE_ASSETS").as_deref() == Ok("1")
}

/// Reports a missing asset: panics when required, else prints why the test is skipped.
pub fn missing(test: &str, what: &str) {
    if required() {
        panic!("{test} needs {what}, and TPSMETER_REQUIRE_ASSETS=1");
    }
    eprintln!("skipping {test}: needs {what}");
}

/// The bytes of the GGUF at `TPSMETER_MODEL`.
pub fn model_bytes(test: &str) -> Option<Vec<u8>> {
    model_bytes_from(test, "TPSMETER_MODEL")
}

/// The bytes of the GGUF at the path in environment variable `var`.
pub fn model_bytes_from(test: &str, var: &str) -> Option<Vec<u8>> {
    let Some(path) = std::env::var_os(var) else {
        missing(test, &format!("{var} (a GGUF file)"));
        return None;
    };
    match std::fs::read(&path) {
        Ok(b) => Some(b),
        Err(e) => {
            missing(test, &format!("a readable model at {path:?} ({e})"));
            None
        }
    }
}

/// A device on the default adapter.
pub fn device(test: &str) -> Option<Arc<GpuContext>> {
    device_with(test, &ContextOptions::default())
}

/// A device on the default adapter with `opts` (e.g. a forced kernel profile).
pub fn device_with(test: &str, opts: &ContextOptions) -> Option<Arc<GpuContext>> {
    match GpuContext::new_blocking(opts) {
        Ok(c) => {
            eprintln!("adapter: {} ({:?})", c.info.name, c.info.device_type);
            Some(Arc::new(c))
        }
        Err(e) => {
            missing(test, &format!("a GPU adapter, e.g. lavapipe ({e})"));
            None
        }
    }
}

/// SmolLM2 (`TPSMETER_MODEL`) with `slots` sequences of `max_context` positions, or `None`
/// (a skip) without the model or a device: the batched and burst tests' engine.
pub fn load_slots(test: &str, max_context: usize, slots: usize) -> Option<Engine> {
    let bytes = model_bytes(test)?;
    let ctx = device(test)?;
    let opts = ModelOptions {
        max_context,
        slots,
        ..ModelOptions::default()
    };
    Some(Engine::load(ctx, &bytes, &opts).unwrap())
}

/// [`load_slots`] on the CPU backend: needs the model only.
pub fn load_cpu_slots(test: &str, max_context: usize, slots: usize) -> Option<Engine<CpuModel>> {
    let bytes = model_bytes(test)?;
    let opts = ModelOptions {
        max_context,
        slots,
        ..ModelOptions::default()
    };
    Some(Engine::load_cpu(&bytes, &opts, CpuOptions::default()).unwrap())
}

/// Relative L2 error `|got - want| / |want|`.
pub fn rel_l2(got: &[f32], want: &[f32]) -> f64 {
    assert_eq!(got.len(), want.len());
    let (mut num, mut den) = (0f64, 0f64);
    for (g, w) in got.iter().zip(want) {
        num += f64::from(g - w).powi(2);
        den += f64::from(*w).powi(2);
    }
    (num / den.max(f64::MIN_POSITIVE)).sqrt()
}

/// Indices of the largest and second largest logits.
pub fn top2(logits: &[f32]) -> (usize, usize) {
    let (mut a, mut b) = (0usize, usize::MAX);
    for i in 1..logits.len() {
        if logits[i] > logits[a] {
            b = a;
            a = i;
        } else if b == usize::MAX || logits[i] > logits[b] {
            b = i;
        }
    }
    (a, b)
}

/// A copy of the GGUF `bytes` with metadata rewritten by `meta` (return `Some((key, value))`
/// to rename a key or replace its value) and `extra` tensors (name, ggml dims, f32 values)
/// appended; every other tensor is kept byte for byte. Tests use it to switch model features
/// on in a real model.
pub fn rewrite_gguf(
    bytes: &[u8],
    meta: impl Fn(&str, &MetadataValue) -> Option<(String, MetadataValue)>,
    extra: &[(String, Vec<u64>, Vec<f32>)],
) -> Vec<u8> {
    let file = GgufFile::parse(bytes).unwrap();
    let mut w = GgufWriter::new();
    w.alignment(file.header.alignment as u32);
    for (k, v) in file.header.metadata.iter() {
        if k != "general.alignment" {
            let (k, v) = meta(k, v).unwrap_or_else(|| (k.to_string(), v.clone()));
            w.metadata(&k, v);
        }
    }
    for t in &file.header.tensors {
        w.tensor(&t.name, &t.dims, t.ty, file.bytes_of(t).unwrap().to_vec())
            .unwrap();
    }
    for (name, dims, values) in extra {
        w.tensor_f32(name, dims, values).unwrap();
    }
    w.to_bytes()
}

/// Llama 3.x-style RoPE frequency factors for `n` pairs: 1 for the fastest pairs rising to
/// 8 for the slowest, as llama3 scaling makes them.
pub fn rope_factors(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| 1.0 + 7.0 * (i as f32 / n as f32).powi(2))
        .collect()
}

/// The Llama-architecture GGUF `bytes` relabelled as Qwen2 (metadata keys `llama.*` ->
/// `qwen2.*`, which also switches RoPE to the NEOX layout) with q/k/v biases added (small,
/// deterministic, different per layer and row). The text it writes is nonsense; the point
/// is that two implementations compute the same function of it.
pub fn as_qwen2(bytes: &[u8]) -> Vec<u8> {
    let cfg = ModelConfig::from_header(&GgufFile::parse(bytes).unwrap().header).unwrap();
    let bias = |l: usize, which: usize, n: usize| -> Vec<f32> {
        (0..n)
            .map(|i| 0.05 * ((i * 7 + l * 13 + which * 29) as f32 * 0.37).sin())
            .collect()
    };
    let mut extra = Vec::new();
    for l in 0..cfg.n_layers {
        for (which, (name, n)) in [
            ("attn_q.bias", cfg.q_dim()),
            ("attn_k.bias", cfg.k_dim()),
            ("attn_v.bias", cfg.v_dim()),
        ]
        .into_iter()
        .enumerate()
        {
            extra.push((format!("blk.{l}.{name}"), vec![n as u64], bias(l, which, n)));
        }
    }
    rewrite_gguf(
        bytes,
        |k, v| {
            if k == "general.architecture" {
                Some((k.to_string(), MetadataValue::String("qwen2".into())))
            } else {
                k.strip_prefix("llama.")
                    .map(|rest| (format!("qwen2.{rest}"), v.clone()))
            }
        },
        &extra,
    )
}

/// SmolLM2-style `bytes` with a `rope_freqs.weight` of [`rope_factors`] added, which switches
/// on Llama 3.x RoPE scaling in our engine, our reference and llama.cpp alike.
pub fn with_rope_freqs(bytes: &[u8]) -> Vec<u8> {
    let cfg = ModelConfig::from_header(&GgufFile::parse(bytes).unwrap().header).unwrap();
    let n = cfg.rope_dim / 2;
    rewrite_gguf(
        bytes,
        |_, _| None,
        &[("rope_freqs.weight".into(), vec![n as u64], rope_factors(n))],
    )
}

/// `n` tokens generated from `prompt` with `sampling`, end-of-generation ignored, on a zero
/// clock; keys and values of a prefix shared with the last call are reused.
pub fn generate<M: Backend>(
    engine: &mut Engine<M>,
    prompt: &[u32],
    n: usize,
    sampling: &SamplerConfig,
) -> Generation {
    let params = GenerateParams {
        max_tokens: n,
        ignore_eos: true,
        ..Default::default()
    };
    let mut clock = || 0.0;
    engine
        .generate(
            prompt,
            &params,
            sampling,
            &CancelToken::default(),
            &mut clock,
            &mut |_| {},
        )
        .unwrap()
}
