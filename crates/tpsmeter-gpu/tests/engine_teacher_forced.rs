//! Teacher forcing on the native engine (SmolLM2): fed its own greedy continuation, it picks
//! that continuation at every position with a zero gap; fed another continuation, the gaps
//! say how far each forced token is from the pick; and the next generation, whose KV cache the
//! forcing overwrote, gives the greedy tokens again.
#![allow(clippy::unwrap_used)]

mod model_support;

use model_support::{device, generate, model_bytes};
use tpsmeter_gpu::engine::Engine;
use tpsmeter_model::options::ModelOptions;
use tpsmeter_model::sample::SamplerConfig;

fn greedy(engine: &mut Engine, prompt: &[u32], n: usize) -> Vec<u32> {
    let sampling = SamplerConfig {
        temperature: 0.0,
        ..SamplerConfig::default()
    };
    generate(engine, prompt, n, &sampling).tokens
}

#[test]
fn teacher_forcing_reports_the_greedy_pick_and_leaves_generation_intact() {
    let test = "teacher_forcing_reports_the_greedy_pick_and_leaves_generation_intact";
    let Some(bytes) = model_bytes(test) else {
        return;
    };
    let Some(ctx) = device(test) else { return };
    let mut engine = Engine::load(ctx, &bytes, &ModelOptions::default()).unwrap();
    let prompt = engine.encode("The capital of France is").unwrap();
    let own = greedy(&mut engine, &prompt, 12);

    let steps = pollster::block_on(engine.teacher_forced(&prompt, &own)).unwrap();
    assert_eq!(steps.len(), own.len());
    for (i, (s, &t)) in steps.iter().zip(&own).enumerate() {
        assert_eq!(s.argmax, t, "position {i}: {s:?}");
        assert_eq!(s.gap_to_forced, 0.0, "position {i}: {s:?}");
        assert!(s.top2_gap >= 0.0, "position {i}: {s:?}");
    }

    // Another continuation: the picks follow it (they differ from the free-running ones) and
    // each forced token lies at or below the pick.
    let other = engine
        .encode(" a city of lights and bread, said the baker")
        .unwrap();
    let steps = pollster::block_on(engine.teacher_forced(&prompt, &other)).unwrap();
    assert!(
        steps
            .iter()
            .all(|s| s.gap_to_forced >= 0.0 && s.top2_gap >= 0.0)
    );
    assert!(
        steps.iter().any(|s| s.gap_to_forced > 0.5),
        "some forced token is not what the model would say: {steps:?}"
    );
    assert_ne!(
        steps.iter().map(|s| s.argmax).collect::<Vec<_>>(),
        own[..steps.len()]
    );

    // The forcing overwrote the KV cache; generation must not reuse it as the old prompt.
    assert_eq!(greedy(&mut engine, &prompt, 12), own);

    let too_long = vec![1u32; engine.model().max_context()];
    let err = pollster::block_on(engine.teacher_forced(&prompt, &too_long)).unwrap_err();
    assert_eq!(err.kind(), "ContextFull", "{err}");
}
