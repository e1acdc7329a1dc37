//! Matvec kernel benchmark: µs per dispatch and GB/s of weights read for each kernel
//! variant at SmolLM2-135M's shapes, then one token's full set of matvecs (30 layers x
//! q, k, v, o, gate, up, down + the Q8_0 lm_head) recorded in one command buffer and
//! submitted once: ms per token. Medians of N runs.
//!
//! `cargo bench -p tpsmeter-gpu --bench kernels` (set TPSMETER_BENCH_RUNS to change N).
//!
//! `-- matmul`: the Gpu profile's prefill matmuls instead, at SmolLM2's shapes for one
//! 64-token chunk: the one-row kernel against the register-tiled one (f32 tiles, and f16
//! where the adapter has `shader-f16`) and the split-K one, alternated within each run, ms
//! per dispatch and the ratio to the one-row kernel.
#![allow(clippy::unwrap_used)]

mod common;
use common::{context, median, runs, timed_pass, weights};

use tpsmeter_gpu::gpu::{AdapterProfile, DType, GpuContext};
use tpsmeter_gpu::kernels::{
    GpuMatMul, MatMul, MatVec, MatVecOptions, MatVecVariant, QWeight, Tensor, WeightFormat,
};

fn time_dispatches(ctx: &GpuContext, ops: &[&MatVec], repeat: usize, runs: usize) -> f64 {
    let mut samples = Vec::with_capacity(runs);
    for i in 0..runs + 1 {
        let t = timed_pass(ctx, repeat, |pass| {
            for op in ops {
                op.encode(pass);
            }
        });
        // The first run warms up (pipeline first use, page faults).
        if i > 0 {
            samples.push(t * repeat as f64);
        }
    }
    median(&mut samples)
}

fn main() {
    // `cargo test --all-targets` (CI) runs bench binaries without `--bench`: stay quick there.
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!(
            "kernels bench: run with `cargo bench -p tpsmeter-gpu --bench kernels` to measure"
        );
        return;
    }
    let runs = runs();
    // The matmul comparison forces the Gpu profile (storage-buffer weights) on any adapter.
    let matmul = std::env::args().any(|a| a == "matmul");
    let Some(ctx) = context(matmul.then_some(AdapterProfile::Gpu)) else {
        return;
    };
    println!(
        "adapter: {} ({:?}, {:?}); median of {runs} runs",
        ctx.info.name, ctx.info.backend, ctx.info.device_type
    );
    if matmul {
        matmuls(&ctx, runs);
        return;
    }
    let variants = MatVecVariant::candidates(&ctx);
    let shapes = [
        ("576x576 Q4_1", WeightFormat::Q4_1, 576, 576),
        ("576->1536 Q4_1", WeightFormat::Q4_1, 1536, 576),
        ("1536->576 Q4_1", WeightFormat::Q4_1, 576, 1536),
        ("576->49152 Q8_0", WeightFormat::Q8_0, 49152, 576),
    ];
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let x = Tensor::from_f32(&ctx, "x", &vec![0.5; 1536], DType::F32).unwrap();
    let y = Tensor::zeros(&ctx, "y", 49152, DType::F32).unwrap();
    println!(
        "{:<18} {:<40} {:>10} {:>8}",
        "shape", "variant", "us/disp", "GB/s"
    );
    for (name, f, rows, cols) in shapes {
        let w = QWeight::upload(
            &ctx,
            name,
            f,
            rows,
            cols,
            &weights(&mut seed, f, rows, cols),
        )
        .unwrap();
        let xs = Tensor {
            len: cols,
            ..x.clone()
        };
        for v in &variants {
            let op = MatVec::new(
                &ctx,
                &w,
                &xs,
                &y,
                MatVecOptions {
                    accumulate: false,
                    variant: Some(*v),
                    ..MatVecOptions::default()
                },
            )
            .unwrap();
            let repeat = 20;
            let t = time_dispatches(&ctx, &[&op], repeat, runs) / repeat as f64;
            println!(
                "{:<18} {:<40} {:>10.1} {:>8.2}",
                name,
                format!("{v:?}"),
                t * 1e6,
                w.bytes() as f64 / t / 1e9
            );
        }
    }

    // One token's matvecs: SmolLM2-135M has 30 layers, dim 576, 3 KV heads of 64, FFN 1536.
    let layer_shapes = [
        (576, 576),
        (192, 576),
        (192, 576),
        (576, 576),
        (1536, 576),
        (1536, 576),
        (576, 1536),
    ];
    let mut mats = Vec::new();
    for _ in 0..30 {
        for (rows, cols) in layer_shapes {
            mats.push(
                QWeight::upload(
                    &ctx,
                    "layer",
                    WeightFormat::Q4_1,
                    rows,
                    cols,
                    &weights(&mut seed, WeightFormat::Q4_1, rows, cols),
                )
                .unwrap(),
            );
        }
    }
    mats.push(
        QWeight::upload(
            &ctx,
            "lm_head",
            WeightFormat::Q8_0,
            49152,
            576,
            &weights(&mut seed, WeightFormat::Q8_0, 49152, 576),
        )
        .unwrap(),
    );
    let total_bytes: u64 = mats.iter().map(QWeight::bytes).sum();
    for v in &variants {
        let ops: Vec<MatVec> = mats
            .iter()
            .map(|w| {
                let xs = Tensor {
                    len: w.cols,
                    ..x.clone()
                };
                MatVec::new(
                    &ctx,
                    w,
                    &xs,
                    &y,
                    MatVecOptions {
                        accumulate: false,
                        variant: Some(*v),
                        ..MatVecOptions::default()
                    },
                )
                .unwrap()
            })
            .collect();
        let refs: Vec<&MatVec> = ops.iter().collect();
        let t = time_dispatches(&ctx, &refs, 1, runs);
        println!(
            "token set ({} dispatches, {:.1} MB, 1 submit) {:<40} {:>8.2} ms/token {:>6.2} GB/s",
            refs.len(),
            total_bytes as f64 / 1e6,
            format!("{v:?}"),
            t * 1e3,
            total_bytes as f64 / t / 1e9
        );
    }
}

/// The Gpu profile's prefill kernels on one 64-token chunk of SmolLM2-135M (Q4_1): each
/// shape's dispatch timed for every kernel in turn within a run (so load changes hit them
/// alike), 10 dispatches per timed submit, medians of `runs`.
fn matmuls(ctx: &GpuContext, runs: usize) {
    const TOKENS: usize = 64;
    const REPEAT: usize = 10;
    let mut kernels = vec![
        GpuMatMul::Rows,
        GpuMatMul::Tiled(DType::F32),
        GpuMatMul::Split,
    ];
    if ctx.has_f16() {
        kernels.push(GpuMatMul::Tiled(DType::F16));
    }
    let shapes = [
        ("q/o 576x576", 576, 576),
        ("k/v 192x576", 192, 576),
        ("gate/up 1536x576", 1536, 576),
        ("down 576x1536", 576, 1536),
    ];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let x = Tensor::from_f32(ctx, "x", &vec![0.5; TOKENS * 1536], DType::F32).unwrap();
    let y = Tensor::zeros(ctx, "y", TOKENS * 1536, DType::F32).unwrap();
    println!("Gpu-profile matmul, {TOKENS} tokens, Q4_1, ms per dispatch (median of {runs})");
    println!(
        "{:<18} {:<16} {:>10} {:>10}",
        "shape", "kernel", "ms", "vs Rows"
    );
    for (name, rows, cols) in shapes {
        let f = WeightFormat::Q4_1;
        let w =
            QWeight::upload(ctx, name, f, rows, cols, &weights(&mut seed, f, rows, cols)).unwrap();
        let xs = Tensor {
            len: TOKENS * cols,
            ..x.clone()
        };
        let ys = Tensor {
            len: TOKENS * rows,
            ..y.clone()
        };
        let ops: Vec<MatMul> = kernels
            .iter()
            .map(|k| MatMul::with_gpu_kernel(ctx, *k, &w, &xs, &ys, TOKENS, false).unwrap())
            .collect();
        let mut samples = vec![Vec::with_capacity(runs); ops.len()];
        for run in 0..runs + 1 {
            for (i, op) in ops.iter().enumerate() {
                let t = timed_pass(ctx, REPEAT, |pass| {
                    for d in op.dispatches() {
                        d.encode(pass);
                    }
                });
                // The first run warms up (pipeline first use).
                if run > 0 {
                    samples[i].push(t);
                }
            }
        }
        let meds: Vec<f64> = samples.iter_mut().map(|v| median(v)).collect();
        for (k, m) in kernels.iter().zip(&meds) {
            println!(
                "{:<18} {:<16} {:>10.3} {:>9.2}x",
                name,
                format!("{k:?}"),
                m * 1e3,
                meds[0] / m
            );
        }
    }
}
