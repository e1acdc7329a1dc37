//! Chained decode (SmolLM2): with 2, 3 or 4 decode steps in flight, each step's token read
//! from the sampler's output on the device, a generation gives exactly what one step at a
//! time gives: the same ids and text under greedy and seeded sampling, the same end at an
//! end-of-generation token, a stop string, `max_tokens` and a cancel, and the same next turn
//! after steps computed past the end were discarded.
//!
//! It fails when a chained step runs at the wrong position, feeds a stale id, when the sampler
//! state differs between the two loops, when a discarded step leaks into the next turn, or
//! when chaining does not happen at all (the counters must show steps in flight).
#![allow(clippy::unwrap_used)]

mod model_support;

use model_support::load_slots;
use tpsmeter_gpu::engine::Engine;
use tpsmeter_gpu::runtime::CostReport;
use tpsmeter_model::generate::{CancelToken, GenerateParams, Generation, StopReason};
use tpsmeter_model::sample::SamplerConfig;

fn greedy() -> SamplerConfig {
    SamplerConfig {
        temperature: 0.0,
        ..SamplerConfig::default()
    }
}

fn seeded() -> SamplerConfig {
    SamplerConfig {
        temperature: 0.9,
        top_k: 40,
        top_p: 0.95,
        repetition_penalty: 1.1,
        penalty_window: 64,
        seed: 1234,
        ..SamplerConfig::default()
    }
}

/// Generates from `prompt` with `depth` steps in flight (cache forgotten first unless
/// `keep`), cancelling once `cancel_after` events were streamed.
fn run(
    engine: &mut Engine,
    depth: usize,
    prompt: &[u32],
    params: &GenerateParams,
    sampling: &SamplerConfig,
    cancel_after: Option<usize>,
    keep: bool,
) -> (Generation, CostReport) {
    engine.model_mut().set_in_flight(depth);
    assert_eq!(engine.model().in_flight(), depth);
    if !keep {
        engine.forget_cache();
    }
    let mark = engine.model().cost_mark();
    let cancel = CancelToken::new();
    let mut events = 0;
    let g = engine
        .generate(prompt, params, sampling, &cancel, &mut || 0.0, &mut |e| {
            if e.token.is_some() {
                events += 1;
            }
            if Some(events) == cancel_after {
                cancel.cancel();
            }
        })
        .unwrap();
    (g, engine.model().cost_since(&mark))
}

fn same(a: &Generation, b: &Generation, what: &str) {
    assert_eq!(a.tokens, b.tokens, "{what}: ids");
    assert_eq!(a.text, b.text, "{what}: text");
    assert_eq!(a.stop, b.stop, "{what}: stop reason");
}

#[test]
fn chained_decode_equals_one_step_at_a_time() {
    let Some(mut engine) = load_slots("chained_decode_equals_one_step_at_a_time", 512, 1) else {
        return;
    };
    let prompt = engine
        .encode("The three most important inventions of the last century were")
        .unwrap();
    let exact = GenerateParams {
        max_tokens: 40,
        ignore_eos: true,
        ..GenerateParams::default()
    };
    for sampling in [greedy(), seeded()] {
        let (one, one_cost) = run(&mut engine, 1, &prompt, &exact, &sampling, None, false);
        assert_eq!(one.tokens.len(), 40);
        let one_cost = one_cost.decode.unwrap();
        assert_eq!(one_cost.in_flight, Some(1.0), "{one_cost:?}");
        for depth in 2..=4 {
            let (g, cost) = run(&mut engine, depth, &prompt, &exact, &sampling, None, false);
            same(&one, &g, &format!("depth {depth}, {sampling:?}"));
            let cost = cost.decode.unwrap();
            // Chaining happened: on average more than one step was queued at each read (the
            // last few reads of a generation drain the queue).
            assert!(
                cost.in_flight.unwrap() > depth as f64 - 0.5,
                "depth {depth}: {cost:?}"
            );
            // `max_tokens` is exact: no step past the 40th id was submitted.
            assert_eq!(cost.steps, one_cost.steps, "depth {depth}");
            assert_eq!(cost.dispatches, one_cost.dispatches, "depth {depth}");
        }
    }
}

#[test]
fn chained_decode_ends_where_one_step_at_a_time_ends() {
    let Some(mut engine) = load_slots("chained_decode_ends_where_one_step_at_a_time_ends", 512, 1)
    else {
        return;
    };
    let prompt = engine
        .encode("Once upon a time, in a small village,")
        .unwrap();
    let long = GenerateParams {
        max_tokens: 48,
        ignore_eos: true,
        ..GenerateParams::default()
    };
    let (full, _) = run(&mut engine, 1, &prompt, &long, &greedy(), None, false);
    // A stop string from the middle of the text: the loop sees it several steps before the
    // chained steps in flight finish.
    let text = full.text.clone();
    let mid = text
        .char_indices()
        .map(|(i, _)| i)
        .nth(text.chars().count() / 2)
        .unwrap();
    let stop: String = text[mid..].chars().take(6).collect();
    let stopping = GenerateParams {
        stop_strings: vec![stop.clone()],
        ..long.clone()
    };
    // An end-of-generation token where the model would not stop: its own id at step 10.
    let eos = GenerateParams {
        stop_tokens: vec![full.tokens[10]],
        ..long.clone()
    };
    let follow = engine.encode(" Then the story went on:").unwrap();
    for (what, params, cancel_after) in [
        ("stop string", &stopping, None),
        ("stop token", &eos, None),
        ("cancel", &long, Some(7)),
        (
            "max tokens",
            &GenerateParams {
                max_tokens: 5,
                ..long.clone()
            },
            None,
        ),
    ] {
        let (one, _) = run(
            &mut engine,
            1,
            &prompt,
            params,
            &greedy(),
            cancel_after,
            false,
        );
        // The next turn reuses the cache the first left: discarded steps must not show.
        let mut next: Vec<u32> = prompt.iter().chain(&one.tokens).copied().collect();
        next.extend_from_slice(&follow);
        let (one_next, _) = run(&mut engine, 1, &next, &long, &seeded(), None, true);
        for depth in [2, 4] {
            let (g, _) = run(
                &mut engine,
                depth,
                &prompt,
                params,
                &greedy(),
                cancel_after,
                false,
            );
            same(&one, &g, &format!("{what}, depth {depth}"));
            let (g_next, _) = run(&mut engine, depth, &next, &long, &seeded(), None, true);
            same(
                &one_next,
                &g_next,
                &format!("{what}, next turn, depth {depth}"),
            );
            assert!(
                g_next.reused_tokens > prompt.len(),
                "{what}: the cache was reused"
            );
        }
        match what {
            "stop string" => assert!(matches!(one.stop, StopReason::StopString { .. })),
            "stop token" => assert_eq!(one.tokens.last(), Some(&full.tokens[10])),
            "cancel" => {
                assert_eq!(one.stop, StopReason::Cancelled);
                assert_eq!(one.tokens.len(), 7);
            }
            _ => assert_eq!(one.tokens.len(), 5),
        }
    }
}
