//! Shared by the kernel tests: one device per test binary, a seeded RNG, random GGUF blocks,
//! and a tolerance comparison that names the first failing index.
#![allow(dead_code, clippy::unwrap_used)]

use tpsmeter_gpu::gpu::{AdapterProfile, ContextOptions, DType, GpuContext};
use tpsmeter_gpu::kernels::WeightFormat;

/// The attribute of a kernel test (an `async fn`): natively it runs on pollster, in the browser
/// (`cargo xtask browser-test`) it is a `wasm_bindgen_test` on the page's WebGPU adapter.
#[cfg(not(target_arch = "wasm32"))]
pub use pollster::test as gpu_test;
#[cfg(target_arch = "wasm32")]
pub use wasm_bindgen_test::wasm_bindgen_test as gpu_test;

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// A monotonic clock in milliseconds (the probe's timer): `Instant` natively,
/// `performance.now()` in the browser.
#[cfg(not(target_arch = "wasm32"))]
pub fn now_ms() -> f64 {
    use std::sync::OnceLock;
    use std::time::Instant;
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e3
}

#[cfg(target_arch = "wasm32")]
pub fn now_ms() -> f64 {
    #[wasm_bindgen::prelude::wasm_bindgen]
    extern "C" {
        #[wasm_bindgen(js_namespace = performance, js_name = now)]
        fn performance_now() -> f64;
    }
    performance_now()
}

fn describe(c: &GpuContext) {
    let line = format!(
        "adapter: {} ({:?}, {:?}), f16: {}, subgroups: {}",
        c.info.name,
        c.info.backend,
        c.info.device_type,
        c.has_f16(),
        c.has_subgroups()
    );
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("{line}");
    #[cfg(target_arch = "wasm32")]
    wasm_bindgen_test::console_log!("{line}");
}

/// The device shared by every test of this binary (creating one on lavapipe takes a while).
/// Without an adapter: fails when `TPSMETER_REQUIRE_ASSETS=1` (CI, where lavapipe is
/// installed), else says why and returns `None` (the test skips).
#[cfg(not(target_arch = "wasm32"))]
pub async fn gpu(test: &str) -> Option<&'static GpuContext> {
    use std::sync::OnceLock;
    static CTX: OnceLock<Option<GpuContext>> = OnceLock::new();
    let ctx = CTX
        .get_or_init(
            || match GpuContext::new_blocking(&ContextOptions::default()) {
                Ok(c) => {
                    describe(&c);
                    Some(c)
                }
                Err(e) => {
                    eprintln!("no GPU device: {e}");
                    None
                }
            },
        )
        .as_ref();
    if ctx.is_none() {
        if std::env::var("TPSMETER_REQUIRE_ASSETS").as_deref() == Ok("1") {
            panic!(
                "{test} needs a GPU adapter (e.g. lavapipe: mesa-vulkan-drivers) and none was found"
            );
        }
        eprintln!("skipping {test}: needs a GPU adapter (e.g. lavapipe), none found");
    }
    ctx
}

/// In the browser: the page's WebGPU device, made once per test binary (tests run one at a
/// time on one thread). The browser tests are only run where WebGPU is expected (headless
/// Chromium with `--enable-unsafe-webgpu`), so no adapter is a failure.
#[cfg(target_arch = "wasm32")]
pub async fn gpu(test: &str) -> Option<&'static GpuContext> {
    use std::cell::Cell;
    thread_local! {
        static CTX: Cell<Option<&'static GpuContext>> = const { Cell::new(None) };
    }
    if let Some(c) = CTX.with(Cell::get) {
        return Some(c);
    }
    let c = GpuContext::new(&ContextOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{test} needs WebGPU in this browser: {e}"));
    describe(&c);
    let c: &'static GpuContext = Box::leak(Box::new(c));
    CTX.with(|cell| cell.set(Some(c)));
    Some(c)
}

/// SplitMix64: small, seedable, and the same on every platform.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo) as u64) as usize
    }
    /// Uniform in [-1, 1).
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
    pub fn vec(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n).map(|_| self.unit() * scale).collect()
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
    fn f16_bytes(&mut self, scale: f32) -> [u8; 2] {
        half::f16::from_f32(self.unit() * scale).to_le_bytes()
    }
}

/// Random but well-formed GGUF bytes for a `rows x cols` matrix: quantized values are random
/// bytes, scales are finite f16s of realistic size (random bytes there would give NaN/inf).
pub fn random_weights(rng: &mut Rng, f: WeightFormat, rows: usize, cols: usize) -> Vec<u8> {
    let nblocks = rows * cols / f.block_len();
    let mut out = Vec::with_capacity(nblocks * f.block_bytes());
    for _ in 0..nblocks {
        match f {
            WeightFormat::F32 => out.extend_from_slice(&(rng.unit() * 0.5).to_le_bytes()),
            WeightFormat::F16 => out.extend_from_slice(&rng.f16_bytes(0.5)),
            WeightFormat::Q4_0 | WeightFormat::Q8_0 | WeightFormat::Q5_0 => {
                out.extend_from_slice(&rng.f16_bytes(0.05));
                out.extend(rng.bytes(f.block_bytes() - 2));
            }
            WeightFormat::Q4_1 => {
                out.extend_from_slice(&rng.f16_bytes(0.05));
                out.extend_from_slice(&rng.f16_bytes(0.2));
                out.extend(rng.bytes(16));
            }
            WeightFormat::Q4_K => {
                out.extend_from_slice(&rng.f16_bytes(0.01));
                out.extend_from_slice(&rng.f16_bytes(0.01));
                out.extend(rng.bytes(140));
            }
            WeightFormat::Q6_K => {
                out.extend(rng.bytes(208));
                out.extend_from_slice(&rng.f16_bytes(0.005));
            }
        }
    }
    out
}

/// Dequantizes GGUF bytes with the crate's CPU dequantizers (the twins' weights), which
/// quant_variants.rs checks against llama.cpp's own F32 expansion of real tensors.
pub fn dequantize(f: WeightFormat, bytes: &[u8], n: usize) -> Vec<f32> {
    let mut out = vec![0f32; n];
    tpsmeter_model::quant::dequantize(f.ggml_type(), bytes, &mut out).unwrap();
    out
}

/// Rounds through f16 (what an f16 tensor stores).
pub fn round_f16(v: &[f32]) -> Vec<f32> {
    v.iter().map(|&x| half::f16::from_f32(x).to_f32()).collect()
}

/// Asserts |got - want| <= atol + rtol * scale[i] for every i (scale defaults to |want|),
/// naming the first index that fails and how many do.
pub fn assert_close(
    what: &str,
    got: &[f32],
    want: &[f32],
    scale: Option<&[f32]>,
    rtol: f32,
    atol: f32,
) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let mut first = None;
    let mut bad = 0;
    for i in 0..got.len() {
        let s = scale.map_or(want[i].abs(), |s| s[i]);
        let tol = atol + rtol * s;
        let err = (got[i] - want[i]).abs();
        // Written so that NaN fails too.
        if err.is_nan() || err > tol {
            bad += 1;
            first.get_or_insert((i, err, tol));
        }
    }
    if let Some((i, err, tol)) = first {
        panic!(
            "{what}: {bad} of {} values out of tolerance; first at index {i}: got {}, want {}, |err| {err:e} > tol {tol:e}",
            got.len(),
            got[i],
            want[i]
        );
    }
}

/// The activation types to test here: f32, and f16 where the adapter has `shader-f16`.
pub fn dtypes(ctx: &GpuContext) -> Vec<DType> {
    if ctx.has_f16() {
        vec![DType::F32, DType::F16]
    } else {
        vec![DType::F32]
    }
}

/// Values as an f16 tensor stores them (identity for f32).
pub fn stored(v: Vec<f32>, dt: DType) -> Vec<f32> {
    if dt == DType::F16 { round_f16(&v) } else { v }
}

/// f32 kernels differ from the f64 twins by a few ulps of the values' scale; f16 outputs
/// add one rounding to 11 bits (4.9e-4 relative), doubled for margin.
pub fn tol(dt: DType) -> (f32, f32) {
    match dt {
        DType::F32 => (1e-5, 1e-6),
        DType::F16 => (1e-3, 1e-3),
    }
}

/// Both kernel shapes: every test runs each on whatever adapter it has.
pub const PROFILES: [AdapterProfile; 2] = [AdapterProfile::Cpu, AdapterProfile::Gpu];
