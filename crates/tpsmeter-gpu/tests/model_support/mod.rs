//! Shared by the whole-model tests: the model file and a GPU device from the environment,
//! failing when `TPSMETER_REQUIRE_ASSETS=1` and they are missing, else skipping.
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::Arc;

use tpsmeter_gpu::gpu::{ContextOptions, GpuContext};

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
