//! What the benchmarks share: weights of the right layout, medians, settings from the
//! environment, prompts.
#![allow(dead_code)]

use std::time::Instant;

use tpsmeter_gpu::gpu::{AdapterProfile, ContextOptions, GpuContext};
use tpsmeter_gpu::kernels::WeightFormat;

/// Random but finite GGUF blocks (the kernels' speed does not depend on the values).
pub fn weights(seed: &mut u64, f: WeightFormat, rows: usize, cols: usize) -> Vec<u8> {
    let n = rows * f.row_bytes(cols);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        out.extend_from_slice(&seed.to_le_bytes());
    }
    out.truncate(n);
    // Finite scales: overwrite every block's f16 scale fields with 0.01.
    let h = half::f16::from_f32(0.01).to_le_bytes();
    for b in out.chunks_exact_mut(f.block_bytes()) {
        match f {
            WeightFormat::Q4_1 => {
                b[..2].copy_from_slice(&h);
                b[2..4].copy_from_slice(&h);
            }
            WeightFormat::Q8_0 | WeightFormat::Q4_0 => b[..2].copy_from_slice(&h),
            _ => {}
        }
    }
    out
}

pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Seconds per repeat of what `encode` records, `repeat` times in one compute pass and one
/// submit, waited for (so fixed submit costs are spread over the repeats).
pub fn timed_pass(
    ctx: &GpuContext,
    repeat: usize,
    encode: impl Fn(&mut wgpu::ComputePass<'_>),
) -> f64 {
    let t = Instant::now();
    let mut enc = ctx.encoder("bench");
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        for _ in 0..repeat {
            encode(&mut pass);
        }
    }
    ctx.submit(enc);
    ctx.wait().unwrap();
    t.elapsed().as_secs_f64() / repeat.max(1) as f64
}

/// Runs per figure: `TPSMETER_BENCH_RUNS`, default 9.
pub fn runs() -> usize {
    std::env::var("TPSMETER_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(9)
}

/// The default adapter with `profile`'s kernel shapes forced where given, or `None` (said
/// on stderr) where there is no adapter: nothing to benchmark then.
pub fn context(profile: Option<AdapterProfile>) -> Option<GpuContext> {
    let opts = ContextOptions {
        profile,
        ..ContextOptions::default()
    };
    match GpuContext::new_blocking(&opts) {
        Ok(c) => Some(c),
        Err(e) => {
            eprintln!("no GPU adapter, nothing to benchmark: {e}");
            None
        }
    }
}

/// A `usize` from the environment, or `default`.
pub fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// (median, min, max).
pub fn stats(v: &[f64]) -> (f64, f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = if s.len() % 2 == 1 {
        s[s.len() / 2]
    } else {
        (s[s.len() / 2 - 1] + s[s.len() / 2]) / 2.0
    };
    (m, s[0], s[s.len() - 1])
}

/// Prompt ids that look like text to nobody but cost what text costs.
pub fn prompt(n: usize, vocab: usize) -> Vec<u32> {
    (0..n)
        .map(|i| (1000 + i * 7919 % 20000) as u32 % vocab as u32)
        .collect()
}
