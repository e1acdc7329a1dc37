//! Mixed steps (SmolLM2): a burst of prompts prefilled together, several in one step and
//! under a small token budget (so prompts split into chunks of uneven lengths across steps),
//! with the decode tokens of the sequences already running in the same steps, gives each
//! sequence, token for token, what it gives run alone through `Engine::generate`.
//!
//! It fails when the tokens of a step get mixed: a row run at the wrong position or against
//! another sequence's cache rows, a sampled id handed to the wrong slot, or the head run on a
//! row that is not the one sampling. The same tests run on the GPU model and the CPU one
//! (`cpu_` tests), through the scheduler's interface ([`Batched`]).
#![allow(clippy::unwrap_used)]

mod model_support;

use model_support::{generate, load_cpu_slots, load_slots as load};
use tpsmeter_gpu::engine::{Backend, Batched, Engine};
use tpsmeter_gpu::runtime::{PREFILL_CHUNK, StepPart};
use tpsmeter_model::sample::SamplerConfig;

const STEPS: usize = 16;

fn sampling(i: usize) -> SamplerConfig {
    // Request 1 sampled (seeded), the rest greedy.
    if i == 1 {
        SamplerConfig {
            temperature: 0.9,
            top_k: 40,
            top_p: 0.95,
            seed: 99,
            ..SamplerConfig::default()
        }
    } else {
        SamplerConfig {
            temperature: 0.0,
            ..SamplerConfig::default()
        }
    }
}

/// What the burst driver saw: per step, (decode tokens, prompts with a chunk in it).
type Shapes = Vec<(usize, usize)>;

/// Runs `prompts` as `tpsmeter serve` schedules them: prompt `i` arrives before step
/// `arrive[i]` in slot `slot[i]`; every step carries the next token of each running
/// sequence, then chunks of the unfinished prompts, oldest first, within `budget` tokens.
fn burst(
    model: &mut impl Batched,
    prompts: &[Vec<u32>],
    arrive: &[usize],
    slot: &[usize],
    budget: usize,
) -> (Vec<Vec<u32>>, Shapes) {
    let n = prompts.len();
    let mut filled = vec![0; n];
    let mut got: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut shapes = Vec::new();
    for step in 0.. {
        let arrived = |i: usize| arrive[i] <= step;
        let decodes: Vec<usize> = (0..n)
            .filter(|&i| !got[i].is_empty() && got[i].len() < STEPS)
            .collect();
        let mut left = budget - decodes.len();
        let mut chunks = Vec::new();
        for i in (0..n).filter(|&i| arrived(i) && filled[i] < prompts[i].len()) {
            let take = (prompts[i].len() - filled[i]).min(left);
            if take == 0 {
                break;
            }
            left -= take;
            chunks.push((i, filled[i], take));
        }
        if decodes.is_empty() && chunks.is_empty() {
            if got.iter().all(|g| g.len() == STEPS) {
                break;
            }
            continue;
        }
        let samplings: Vec<SamplerConfig> = (0..n).map(sampling).collect();
        let mut parts: Vec<StepPart<'_>> = decodes
            .iter()
            .map(|&i| StepPart::Decode {
                slot: slot[i],
                token: *got[i].last().unwrap(),
            })
            .collect();
        for &(i, from, take) in &chunks {
            parts.push(StepPart::Prompt {
                slot: slot[i],
                tokens: &prompts[i][from..from + take],
                start: from,
                sampling: &samplings[i],
                sample: from + take == prompts[i].len(),
            });
        }
        shapes.push((decodes.len(), chunks.len()));
        let sampling_slots: Vec<usize> = parts
            .iter()
            .filter(|p| p.samples())
            .map(StepPart::slot)
            .collect();
        let ids = model.step_slots(&parts).unwrap();
        assert_eq!(ids.len(), sampling_slots.len());
        for &(i, from, take) in &chunks {
            filled[i] = from + take;
        }
        for (s, id) in sampling_slots.into_iter().zip(ids) {
            let i = slot.iter().position(|&x| x == s).unwrap();
            got[i].push(id);
        }
    }
    (got, shapes)
}

fn burst_equals_alone<M: Backend + Batched>(engine: Option<Engine<M>>) {
    let Some(mut engine) = engine else {
        return;
    };
    let texts = [
        "The capital of France is",
        "Write a short poem about the sea and the wind that carries ships across it.",
        "1, 2, 3, 4,",
        "Explain in one sentence why the sky is blue during the day and red at sunset.",
    ];
    let prompts: Vec<Vec<u32>> = texts.iter().map(|t| engine.encode(t).unwrap()).collect();
    let want: Vec<Vec<u32>> = prompts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            engine.forget_cache();
            generate(&mut engine, p, STEPS, &sampling(i)).tokens
        })
        .collect();
    // Three prompts at once, the fourth while they decode; slot 0 last (its rows are the
    // single-sequence path's too). A budget of 11 splits every prompt across steps, in
    // chunks that are not powers of two, and puts several prompts in one step.
    let (_, model) = engine.split_mut();
    let (got, shapes) = burst(model, &prompts, &[0, 0, 0, 4], &[3, 1, 2, 0], 11);
    assert!(
        shapes.iter().any(|&(_, p)| p >= 2),
        "no step with two prompts: {shapes:?}"
    );
    assert!(
        shapes.iter().any(|&(d, p)| d >= 1 && p >= 1),
        "no step with decode tokens and a prompt chunk: {shapes:?}"
    );
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "request {i} ({:?}) in a burst vs alone", texts[i]);
    }
}

/// A cache of 128 positions: attention runs one pass on every adapter, in a mixed step as in
/// a decode step, so every sequence's tokens (greedy and sampled) must equal its run alone.
#[test]
fn burst_of_prompts_in_mixed_steps_equals_each_run_alone() {
    let test = "burst_of_prompts_in_mixed_steps_equals_each_run_alone";
    burst_equals_alone(load(test, 128, 4));
}

/// The CPU model's mixed steps: one forward pass over rows of several sequences' caches.
#[test]
fn cpu_burst_of_prompts_in_mixed_steps_equals_each_run_alone() {
    let test = "cpu_burst_of_prompts_in_mixed_steps_equals_each_run_alone";
    burst_equals_alone(load_cpu_slots(test, 512, 4));
}

/// A cache of 512 positions: on CPU-type adapters a decode step splits attention along the
/// keys, a mixed step does not (the same sums in another order); the tokens still equal.
#[test]
fn burst_with_split_decode_attention_equals_each_run_alone() {
    let test = "burst_with_split_decode_attention_equals_each_run_alone";
    burst_equals_alone(load(test, 512, 4));
}

#[test]
fn mixed_steps_reject_misuse_with_typed_errors() {
    reject_misuse(load("mixed_steps_reject_misuse_with_typed_errors", 64, 2));
}

#[test]
fn cpu_mixed_steps_reject_misuse_with_typed_errors() {
    let test = "cpu_mixed_steps_reject_misuse_with_typed_errors";
    reject_misuse(load_cpu_slots(test, 64, 2));
}

fn reject_misuse<M: Backend + Batched>(engine: Option<Engine<M>>) {
    let Some(mut engine) = engine else {
        return;
    };
    let prompt = engine.encode("Hello there").unwrap();
    let (_, model) = engine.split_mut();
    let greedy = SamplerConfig::default();
    let part = |slot, tokens, start| StepPart::Prompt {
        slot,
        tokens,
        start,
        sampling: &greedy,
        sample: true,
    };
    // Nothing, a slot twice, a slot past the cache's, more tokens than a step holds, a
    // prompt past the slot's positions, a decode for a slot with no prompt.
    assert!(model.step_slots(&[]).is_err());
    assert!(
        model
            .step_slots(&[part(0, &prompt, 0), part(0, &prompt, 0)])
            .is_err()
    );
    assert!(model.step_slots(&[part(2, &prompt, 0)]).is_err());
    let many = vec![prompt[0]; PREFILL_CHUNK + 1];
    let e = model
        .step_slots(&[part(0, &many[..PREFILL_CHUNK], 0), part(1, &many[..1], 0)])
        .unwrap_err();
    assert_eq!(e.kind(), "LimitExceeded", "{e}");
    let e = model.step_slots(&[part(1, &prompt, 60)]).unwrap_err();
    assert_eq!(e.kind(), "ContextFull", "{e}");
    let e = model
        .step_slots(&[part(0, &prompt, 0), StepPart::Decode { slot: 1, token: 5 }])
        .unwrap_err();
    assert_eq!(e.kind(), "InvalidRequest", "{e}");
    let e = model.rewind_slot(0, 1, &greedy).unwrap_err();
    assert_eq!(e.kind(), "InvalidRequest", "{e}");
    // A refused step changed nothing: both slots are empty, and they still run.
    assert!(model.slot_history(0).is_empty() && model.slot_history(1).is_empty());
    let ids = model
        .step_slots(&[part(0, &prompt, 0), part(1, &prompt, 0)])
        .unwrap();
    assert_eq!(ids.len(), 2);
    assert_eq!(ids[0], ids[1], "the same prompt, greedy, in two slots");
    // A rewound slot's last prompt token joins a decode step and samples what the prompt's
    // own step sampled.
    model.rewind_slot(1, prompt.len() - 1, &greedy).unwrap();
    let last = *prompt.last().unwrap();
    let again = model
        .step_slots(&[
            StepPart::Decode {
                slot: 0,
                token: ids[0],
            },
            StepPart::Decode {
                slot: 1,
                token: last,
            },
        ])
        .unwrap();
    assert_eq!(again[1], ids[1], "rewound slot");
    assert_eq!(model.slot_history(1), &prompt[..]);
}
