//! Warm from the first answer (`runtime/warm.rs`, SmolLM2 on lavapipe): loading compiles every
//! pipeline generation, every prompt-chunk size and batched steps use, so that running them
//! compiles nothing more; the priming pass changes no result; progress is reported and a
//! cancel through it stops the compilation with `AbortError`.
#![allow(clippy::unwrap_used)]

mod model_support;

use std::sync::Arc;

use model_support::{device, generate, model_bytes};
use tpsmeter_gpu::GpuError;
use tpsmeter_gpu::engine::Engine;
use tpsmeter_gpu::gpu::GpuContext;
use tpsmeter_gpu::runtime::{CompileProgress, GpuModel, StepPart};
use tpsmeter_model::gguf::GgufFile;
use tpsmeter_model::options::ModelOptions;
use tpsmeter_model::sample::SamplerConfig;

/// A prompt of exactly `n` tokens.
fn prompt(engine: &Engine, n: usize) -> Vec<u32> {
    let text = "The sea and the sky were grey that morning, and the boats stayed in. ".repeat(20);
    let mut ids = engine.encode(&text).unwrap();
    assert!(ids.len() >= n);
    ids.truncate(n);
    ids
}

#[test]
fn the_first_answer_compiles_nothing() {
    const TEST: &str = "the_first_answer_compiles_nothing";
    let (Some(bytes), Some(ctx)) = (model_bytes(TEST), device(TEST)) else {
        return;
    };
    let mut engine = Engine::load(ctx.clone(), &bytes, &ModelOptions::default()).unwrap();
    let report = engine.model().compile_report().unwrap();
    eprintln!("{report:?}");
    assert_eq!(report.pipelines, ctx.pipelines_built());
    assert!(report.shader_modules <= report.pipelines && report.shader_modules > 0);
    // The decode step's graph and one per prompt-chunk size, 64 down to 1.
    assert_eq!(report.graphs, 1 + 7);
    assert!(report.compile_ms > 0.0 && report.prime_ms > 0.0);
    // The priming pass is the load's, not a step's.
    assert_eq!(engine.model().stats().submits, 0);
    let built = ctx.pipelines_built();

    // A prompt of 127 tokens runs every chunk size (64 + 32 + ... + 1); decoding past 256
    // positions switches to the split attention graph; sampling changes the sampler.
    let ids = prompt(&engine, 127);
    generate(&mut engine, &ids, 8, &SamplerConfig::default());
    let seeded = SamplerConfig {
        temperature: 0.8,
        seed: 7,
        ..SamplerConfig::default()
    };
    let long = prompt(&engine, 250);
    generate(&mut engine, &long, 12, &seeded);
    assert_eq!(
        ctx.pipelines_built(),
        built,
        "generation compiled a pipeline"
    );
}

#[test]
fn batched_steps_are_compiled_at_load() {
    const TEST: &str = "batched_steps_are_compiled_at_load";
    let (Some(bytes), Some(ctx)) = (model_bytes(TEST), device(TEST)) else {
        return;
    };
    let opts = ModelOptions {
        max_context: 256,
        slots: 4,
        step_tokens: 12,
        ..ModelOptions::default()
    };
    let mut engine = Engine::load(ctx.clone(), &bytes, &opts).unwrap();
    let report = engine.model().compile_report().unwrap();
    // Decode, 7 chunk sizes, batches of 2..=4, the 8 sizes up to 12 that are not powers of
    // two, and heads for 1..=4 sampling rows.
    assert_eq!(report.graphs, 1 + 7 + 3 + 8 + 4);
    let built = ctx.pipelines_built();
    let a = prompt(&engine, 5);
    let b = prompt(&engine, 9);
    let greedy = SamplerConfig::default();
    let m = engine.model_mut();
    m.submit_slot_prompt(0, &a, 0, &greedy, true).unwrap();
    let t0 = m.read_slots_blocking().unwrap()[0];
    m.submit_slot_prompt(1, &a, 0, &greedy, true).unwrap();
    let t1 = m.read_slots_blocking().unwrap()[0];
    // Two sequences decoding and a third's prompt in one mixed step of 11 tokens.
    let parts = [
        StepPart::Decode { slot: 0, token: t0 },
        StepPart::Decode { slot: 1, token: t1 },
        StepPart::Prompt {
            slot: 2,
            tokens: &b,
            start: 0,
            sampling: &greedy,
            sample: true,
        },
    ];
    assert_eq!(m.submit_mixed(&parts).unwrap(), 3);
    let ids = m.read_slots_blocking().unwrap();
    m.submit_slots(&[(0, ids[0]), (1, ids[1]), (2, ids[2])])
        .unwrap();
    assert_eq!(m.read_slots_blocking().unwrap().len(), 3);
    assert_eq!(
        ctx.pipelines_built(),
        built,
        "a batched step compiled a pipeline"
    );
}

/// A device and `GpuModel::load`, which prepares the decode step's graph only: a fresh
/// model for each call of `load`, or `None` (a skip) without the model or a device.
fn bare(test: &str) -> Option<(Arc<GpuContext>, impl Fn() -> GpuModel)> {
    let (bytes, ctx) = (model_bytes(test)?, device(test)?);
    let opts = ModelOptions {
        max_context: 128,
        ..ModelOptions::default()
    };
    let on = ctx.clone();
    let load =
        move || GpuModel::load(on.clone(), &GgufFile::parse(&bytes).unwrap(), &opts).unwrap();
    Some((ctx, load))
}

#[test]
fn priming_changes_no_result() {
    let Some((_, load)) = bare("priming_changes_no_result") else {
        return;
    };
    let ids: Vec<u32> = (0..37).map(|i| 100 + 13 * i).collect();
    let mut logits = Vec::new();
    for compile in [false, true] {
        let mut m = load();
        if compile {
            m.compile_blocking(None).unwrap();
        }
        m.step_blocking(&ids, 0).unwrap();
        let after_prompt = m.read_logits().unwrap();
        let next = m.step_blocking(&[7], ids.len()).unwrap();
        logits.push((after_prompt, next, m.read_logits().unwrap()));
    }
    assert!(
        logits[0] == logits[1],
        "a primed model computes what an unprimed one does, bit for bit"
    );
}

#[test]
fn progress_is_reported_and_a_cancel_stops_the_compilation() {
    let Some((ctx, load)) = bare("progress_is_reported_and_a_cancel_stops_the_compilation") else {
        return;
    };
    let mut m = load();
    let mut clock = || 0.0;
    // Stopped before the fourth graph.
    let mut seen: Vec<CompileProgress> = Vec::new();
    let stop = pollster::block_on(m.compile(&mut clock, None, &mut |p| {
        seen.push(p);
        p.graphs_done < 3
    }));
    let err = stop.unwrap_err();
    assert!(matches!(err, GpuError::Cancelled { .. }), "{err}");
    assert_eq!(err.kind(), "AbortError");
    let at_cancel = ctx.pipelines_built();
    assert!(m.compile_report().is_none());

    // Resumed: it ends with every graph, and the counts only grow.
    let mut seen: Vec<CompileProgress> = Vec::new();
    let report = pollster::block_on(m.compile(&mut clock, None, &mut |p| {
        seen.push(p);
        true
    }))
    .unwrap();
    assert!(
        ctx.pipelines_built() > at_cancel,
        "the cancel left graphs to make"
    );
    for w in seen.windows(2) {
        assert!(w[0].graphs_done <= w[1].graphs_done && w[0].pipelines <= w[1].pipelines);
    }
    let last = seen.last().unwrap();
    assert_eq!((last.graphs_done, last.graphs), (8, 8));
    assert_eq!(last.pipelines, report.pipelines);
    assert_eq!(m.compile_report(), Some(report));
}
