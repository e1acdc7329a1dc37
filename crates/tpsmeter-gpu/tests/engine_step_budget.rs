//! What one decoded token costs the device, counted on SmolLM2-135M: at most 7 dispatches per
//! layer plus 3 (embedding, head, sampling), in one compute pass and one submit, with 4 bytes
//! read back. On a real GPU these fixed costs, not bandwidth, set a small model's speed
//! (docs/performance.md); the fused layer is what keeps them down, and this test fails if a
//! change brings back an unfused op.
#![allow(clippy::unwrap_used)]

mod model_support;

use model_support::{device, model_bytes};
use tpsmeter_gpu::engine::Engine;
use tpsmeter_gpu::gpu::{AdapterProfile, ContextOptions};
use tpsmeter_model::options::ModelOptions;

/// Decodes 8 tokens after a prompt of `words` words and checks their cost.
fn check(engine: &mut Engine, what: &str, words: usize) {
    let layers = engine.model().config().n_layers;
    let budget = 7 * layers + 3;
    let text = "the capital of France is Paris and ".repeat(words.div_ceil(7));
    let prompt = engine.encode(&text).unwrap();
    let model = engine.model_mut();
    let mut id = model.step_blocking(&prompt, 0).unwrap();
    let at = prompt.len();
    let per_token = model.dispatches_per_token();
    assert!(
        per_token <= budget,
        "{what}: {per_token} dispatches per decoded token at position {at}, budget {budget}"
    );
    let before = model.stats();
    let steps = 8;
    for position in at..at + steps {
        id = model.step_blocking(&[id], position).unwrap();
    }
    let after = model.stats();
    let per = |a: u64, b: u64| (a - b) as f64 / steps as f64;
    assert_eq!(
        per(after.submits, before.submits),
        1.0,
        "{what}: submits per token"
    );
    assert_eq!(
        per(after.dispatches, before.dispatches),
        per_token as f64,
        "{what}: recorded dispatches per token"
    );
    assert_eq!(
        per(after.readback_bytes, before.readback_bytes),
        4.0,
        "{what}: bytes read back per token"
    );
    println!(
        "{what}: {per_token} dispatches per token at position {} ({layers} layers, budget {budget})",
        prompt.len()
    );
}

#[test]
fn a_decoded_token_costs_at_most_seven_dispatches_per_layer() {
    let test = "a_decoded_token_costs_at_most_seven_dispatches_per_layer";
    let Some(bytes) = model_bytes(test) else {
        return;
    };
    let Some(ctx) = device(test) else {
        return;
    };
    let mut engine = Engine::load(ctx, &bytes, &ModelOptions::default()).unwrap();
    // Short and long contexts: CPU-type attention splits a cache past
    // SINGLE_PASS_CONTEXT into two dispatches per layer.
    check(&mut engine, "adapter's own profile", 5);
    check(&mut engine, "adapter's own profile", 300);
    // The kernels real GPUs get, forced on this adapter.
    let gpu_opts = ContextOptions {
        profile: Some(AdapterProfile::Gpu),
        ..ContextOptions::default()
    };
    let Some(ctx) = model_support::device_with(test, &gpu_opts) else {
        return;
    };
    let mut engine = Engine::load(ctx, &bytes, &ModelOptions::default()).unwrap();
    check(&mut engine, "Gpu profile", 5);
}
