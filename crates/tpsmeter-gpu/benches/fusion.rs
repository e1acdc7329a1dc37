//! What the decode fusions cost or save per kernel on this adapter: each stage of a
//! SmolLM2-135M token that the fused layer changed, as the separate dispatches it replaced
//! and as the fused ones, alternated within every run (so load changes hit them alike), in
//! µs per stage (20 stages per timed submit, medians of N runs) with the ratio to the
//! unfused form.
//!
//! Stages (Q4_1 layers, the Q8_0 head):
//! - `attn in`: RMSNorm, then q, k and v (4 dispatches); RMSNorm, then the fused QKV matrix
//!   (2); the fused matrix with the norm folded in (1).
//! - `ffn in`: RMSNorm, gate, up, the gated unit (4); RMSNorm, then gate/up with the gated
//!   unit in its epilogue (2); both fusions (1).
//! - `head`: RMSNorm, then the head (2); the norm folded in (1).
//!
//! `cargo bench -p tpsmeter-gpu --bench fusion` (TPSMETER_BENCH_RUNS sets N, default 9;
//! `TPSMETER_BENCH_PROFILE=gpu` forces the Gpu profile's kernel shapes on any adapter).
#![allow(clippy::unwrap_used)]

mod common;
use common::{context, median, runs, timed_pass, weights};

use tpsmeter_gpu::gpu::{AdapterProfile, DType, GpuContext};
use tpsmeter_gpu::kernels::{
    Dispatch, Glu, GluKind, MatVec, MatVecOptions, NormFold, QWeight, RmsNorm, Tensor, WeightFormat,
};

const REPEAT: usize = 20;
const DIM: usize = 576;
const FF: usize = 1536;
const KV: usize = 192;
const VOCAB: usize = 49152;
const EPS: f32 = 1e-5;

fn upload(ctx: &GpuContext, seed: &mut u64, f: WeightFormat, rows: usize) -> QWeight {
    QWeight::upload(ctx, "w", f, rows, DIM, &weights(seed, f, rows, DIM)).unwrap()
}

fn matvec(
    ctx: &GpuContext,
    w: &QWeight,
    x: &Tensor,
    y: &Tensor,
    o: MatVecOptions,
) -> Vec<Dispatch> {
    MatVec::new(ctx, w, x, y, o).unwrap().dispatches().to_vec()
}

/// A vector tensor of `len` values.
fn vector(ctx: &GpuContext, label: &str, len: usize, v: f32) -> Tensor {
    Tensor::from_f32(ctx, label, &vec![v; len], DType::F32).unwrap()
}

/// Seconds per run of `stage`, `REPEAT` times in one pass and one submit.
fn time(ctx: &GpuContext, stage: &[Dispatch]) -> f64 {
    timed_pass(ctx, REPEAT, |pass| {
        for d in stage {
            d.encode(pass);
        }
    })
}

fn main() {
    // `cargo test --all-targets` (CI) runs bench binaries without `--bench`: stay quick there.
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("fusion bench: run with `cargo bench -p tpsmeter-gpu --bench fusion`");
        return;
    }
    let runs = runs();
    let forced = std::env::var("TPSMETER_BENCH_PROFILE")
        .is_ok_and(|p| p == "gpu")
        .then_some(AdapterProfile::Gpu);
    let Some(ctx) = context(forced) else {
        return;
    };
    println!(
        "adapter: {} ({:?}, {:?}, {:?} profile); µs per stage, median of {runs} runs",
        ctx.info.name, ctx.info.backend, ctx.info.device_type, ctx.profile
    );
    let mut seed = 0x51_7cc1_b727_220au64;
    let q4 = WeightFormat::Q4_1;
    let x = vector(&ctx, "x", DIM, 0.5);
    let g = vector(&ctx, "norm weight", DIM, 1.25);
    let h = vector(&ctx, "h", DIM, 0.0);
    let y = vector(&ctx, "y", 2 * FF, 0.0);
    let gate = vector(&ctx, "gate", FF, 0.0);
    let up = vector(&ctx, "up", FF, 0.0);
    let ffn = vector(&ctx, "ffn", FF, 0.0);
    let logits = vector(&ctx, "logits", VOCAB, 0.0);
    let fold = Some(NormFold {
        weight: &g,
        eps: EPS,
    });
    let plain = MatVecOptions::default();
    let swiglu = MatVecOptions {
        glu: Some(GluKind::SwiGlu),
        ..plain
    };
    let norm = RmsNorm::new(&ctx, &x, &g, &h, 1, DIM, EPS)
        .unwrap()
        .dispatch()
        .clone();

    let (wq, wk, wv) = (
        upload(&ctx, &mut seed, q4, DIM),
        upload(&ctx, &mut seed, q4, KV),
        upload(&ctx, &mut seed, q4, KV),
    );
    let wqkv = upload(&ctx, &mut seed, q4, DIM + 2 * KV);
    let (wg, wu) = (
        upload(&ctx, &mut seed, q4, FF),
        upload(&ctx, &mut seed, q4, FF),
    );
    let wgu = upload(&ctx, &mut seed, q4, 2 * FF);
    let whead = upload(&ctx, &mut seed, WeightFormat::Q8_0, VOCAB);
    let at = |t: &Tensor, len: usize| Tensor { len, ..t.clone() };

    let cat = |parts: Vec<Vec<Dispatch>>| parts.concat();
    let stages: Vec<(&str, &str, Vec<Dispatch>)> = vec![
        (
            "attn in",
            "norm, q, k, v",
            cat(vec![
                vec![norm.clone()],
                matvec(&ctx, &wq, &h, &at(&y, DIM), plain),
                matvec(&ctx, &wk, &h, &at(&gate, KV), plain),
                matvec(&ctx, &wv, &h, &at(&up, KV), plain),
            ]),
        ),
        (
            "attn in",
            "norm, qkv",
            cat(vec![
                vec![norm.clone()],
                matvec(&ctx, &wqkv, &h, &at(&y, DIM + 2 * KV), plain),
            ]),
        ),
        (
            "attn in",
            "norm+qkv",
            matvec(
                &ctx,
                &wqkv,
                &x,
                &at(&y, DIM + 2 * KV),
                MatVecOptions {
                    norm: fold,
                    ..plain
                },
            ),
        ),
        (
            "ffn in",
            "norm, gate, up, glu",
            cat(vec![
                vec![norm.clone()],
                matvec(&ctx, &wg, &h, &gate, plain),
                matvec(&ctx, &wu, &h, &up, plain),
                vec![
                    Glu::new(&ctx, GluKind::SwiGlu, &gate, &up, &ffn, FF)
                        .unwrap()
                        .dispatch()
                        .clone(),
                ],
            ]),
        ),
        (
            "ffn in",
            "norm, gate/up+glu",
            cat(vec![
                vec![norm.clone()],
                matvec(&ctx, &wgu, &h, &ffn, swiglu),
            ]),
        ),
        (
            "ffn in",
            "norm+gate/up+glu",
            matvec(
                &ctx,
                &wgu,
                &x,
                &ffn,
                MatVecOptions {
                    norm: fold,
                    ..swiglu
                },
            ),
        ),
        (
            "head",
            "norm, head",
            cat(vec![vec![norm], matvec(&ctx, &whead, &h, &logits, plain)]),
        ),
        (
            "head",
            "norm+head",
            matvec(
                &ctx,
                &whead,
                &x,
                &logits,
                MatVecOptions {
                    norm: fold,
                    ..plain
                },
            ),
        ),
    ];
    let mut samples = vec![Vec::with_capacity(runs); stages.len()];
    for run in 0..runs + 1 {
        for (i, (_, _, d)) in stages.iter().enumerate() {
            let t = time(&ctx, d);
            // The first run warms up (pipeline first use, page faults).
            if run > 0 {
                samples[i].push(t);
            }
        }
    }
    println!(
        "{:<8} {:<20} {:>5} {:>10} {:>9}",
        "stage", "dispatches", "n", "us", "vs first"
    );
    let mut first = (String::new(), 0.0);
    for ((stage, form, d), s) in stages.iter().zip(samples.iter_mut()) {
        let m = median(s);
        if first.0 != *stage {
            first = (stage.to_string(), m);
        }
        println!(
            "{:<8} {:<20} {:>5} {:>10.1} {:>8.2}x",
            stage,
            form,
            d.len(),
            m * 1e6,
            first.1 / m
        );
    }
}
