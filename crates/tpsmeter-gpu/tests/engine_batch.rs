//! Batched decoding (SmolLM2): sequences decoded together in slots of one KV cache give, token
//! for token, what each gives run alone through `Engine::generate`, greedy and sampled, while
//! others join and leave the batch around them (so batch sizes 1 to 4 all occur), in slots
//! other than 0 and with prompts of unequal lengths (different positions in one step).
#![allow(clippy::unwrap_used)]

mod model_support;

use model_support::{generate, load_slots as load};
use tpsmeter_gpu::engine::Engine;
use tpsmeter_model::sample::SamplerConfig;

const STEPS: usize = 24;

fn sampling(i: usize) -> SamplerConfig {
    // Every other request sampled (seeded), the rest greedy.
    if i % 2 == 1 {
        SamplerConfig {
            temperature: 0.9,
            top_k: 40,
            top_p: 0.95,
            seed: 1234 + i as u64,
            ..SamplerConfig::default()
        }
    } else {
        SamplerConfig {
            temperature: 0.0,
            ..SamplerConfig::default()
        }
    }
}

fn alone(engine: &mut Engine, prompt: &[u32], sampling: &SamplerConfig) -> Vec<u32> {
    engine.forget_cache();
    generate(engine, prompt, STEPS, sampling).tokens
}

#[test]
fn batched_sequences_equal_each_run_alone() {
    let Some(mut engine) = load("batched_sequences_equal_each_run_alone", 512, 4) else {
        return;
    };
    let texts = [
        "The capital of France is",
        "Write a short poem about the sea and the wind that carries ships across it.",
        "1, 2, 3, 4,",
        "Explain in one sentence why the sky is blue during the day and red at sunset, \
         as a physicist would to a curious child who keeps asking why.",
    ];
    let prompts: Vec<Vec<u32>> = texts.iter().map(|t| engine.encode(t).unwrap()).collect();
    let want: Vec<Vec<u32>> = prompts
        .iter()
        .enumerate()
        .map(|(i, p)| alone(&mut engine, p, &sampling(i)))
        .collect();

    // Requests 0 and 2 again on the engine, each prompt all but its last token kept in the
    // cache: that token runs alone through the one-token graph.
    let mut again = |i: usize| {
        let _ = alone(&mut engine, &prompts[i], &sampling(i));
        let g = generate(&mut engine, &prompts[i], STEPS, &sampling(i));
        assert_eq!(g.reused_tokens, prompts[i].len() - 1);
        g.tokens
    };
    let (again, again_2) = (again(0), again(2));

    // Request i joins at step 3 * i in slot 3 - i (slot 0 last), and leaves after STEPS ids.
    let (_, model) = engine.split_mut();
    let slot_of = |i: usize| 3 - i;
    let mut got: Vec<Vec<u32>> = vec![Vec::new(); prompts.len()];
    let mut sizes = Vec::new();
    for step in 0.. {
        for (i, p) in prompts.iter().enumerate() {
            if step == 3 * i {
                model
                    .submit_slot_prompt(slot_of(i), p, 0, &sampling(i), true)
                    .unwrap();
                got[i].extend(model.read_slots_blocking().unwrap());
            }
        }
        let running: Vec<usize> = (0..prompts.len())
            .filter(|&i| !got[i].is_empty() && got[i].len() < STEPS)
            .collect();
        if running.is_empty() {
            if got.iter().all(|g| g.len() == STEPS) {
                break;
            }
            continue;
        }
        let steps: Vec<(usize, u32)> = running
            .iter()
            .map(|&i| (slot_of(i), *got[i].last().unwrap()))
            .collect();
        sizes.push(steps.len());
        model.submit_slots(&steps).unwrap();
        let ids = model.read_slots_blocking().unwrap();
        assert_eq!(ids.len(), steps.len());
        for (&i, id) in running.iter().zip(ids) {
            got[i].push(id);
        }
    }
    for n in 1..=4 {
        assert!(sizes.contains(&n), "no step of {n} sequences: {sizes:?}");
    }
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "request {i} ({:?}) batched vs alone", texts[i]);
    }
    // The slot's history is its prompt and every id fed back.
    let slot = slot_of(0);
    assert_eq!(model.slot_history(slot).len(), prompts[0].len() + STEPS - 1);
    // Request 0 again in its slot, reusing all of its prompt but the last token, as the
    // engine did.
    let keep = tpsmeter_model::generate::reusable_prefix(model.slot_history(slot), &prompts[0]);
    assert_eq!(keep, prompts[0].len() - 1);
    model
        .submit_slot_prompt(slot, &prompts[0][keep..], keep, &sampling(0), true)
        .unwrap();
    let mut reused = model.read_slots_blocking().unwrap();
    while reused.len() < STEPS {
        model
            .submit_slots(&[(slot, *reused.last().unwrap())])
            .unwrap();
        reused.extend(model.read_slots_blocking().unwrap());
    }
    assert_eq!(reused, again, "request 0 with its prompt reused");

    // Requests 0 and 2 again, each prompt's last token joining one decode step (the slots
    // rewound to all but that token, as `tpsmeter serve` does for a repeated prompt), then
    // decoded together: each equals its run alone.
    let pair = [(slot_of(0), 0), (slot_of(2), 2)];
    for &(slot, i) in &pair {
        let keep = prompts[i].len() - 1;
        assert!(model.slot_history(slot).starts_with(&prompts[i][..keep]));
        model.rewind_slot(slot, keep, &sampling(i)).unwrap();
        assert_eq!(model.slot_history(slot), &prompts[i][..keep]);
    }
    let mut joined: Vec<Vec<u32>> = vec![Vec::new(); 2];
    let mut next: Vec<(usize, u32)> = pair
        .iter()
        .map(|&(slot, i)| (slot, *prompts[i].last().unwrap()))
        .collect();
    while joined[0].len() < STEPS {
        model.submit_slots(&next).unwrap();
        let ids = model.read_slots_blocking().unwrap();
        for (k, id) in ids.into_iter().enumerate() {
            joined[k].push(id);
            next[k].1 = id;
        }
    }
    assert_eq!(
        joined[0], again,
        "request 0, its last prompt token in a decode step"
    );
    assert_eq!(
        joined[1], again_2,
        "request 2, its last prompt token in a decode step"
    );
}

#[test]
fn batched_decoding_rejects_misuse_with_typed_errors() {
    let Some(mut engine) = load("batched_decoding_rejects_misuse_with_typed_errors", 64, 2) else {
        return;
    };
    let prompt = engine.encode("Hello").unwrap();
    let (_, model) = engine.split_mut();
    let greedy = SamplerConfig::default();
    // A slot past the cache's, a step for a slot with no prompt, a slot twice in one step,
    // a read with nothing submitted, a prompt past the slot's positions.
    assert!(
        model
            .submit_slot_prompt(2, &prompt, 0, &greedy, true)
            .is_err()
    );
    assert!(model.submit_slots(&[(1, 5)]).is_err());
    assert!(model.read_slots_blocking().is_err());
    model
        .submit_slot_prompt(0, &prompt, 0, &greedy, true)
        .unwrap();
    let first = model.read_slots_blocking().unwrap()[0];
    assert!(model.submit_slots(&[(0, first), (0, first)]).is_err());
    // A rewind to nothing, or past what the slot holds.
    assert!(model.rewind_slot(0, 0, &greedy).is_err());
    assert!(model.rewind_slot(0, prompt.len() + 1, &greedy).is_err());
    let long = vec![prompt[0]; 65];
    let e = model
        .submit_slot_prompt(1, &long, 0, &greedy, true)
        .unwrap_err();
    assert_eq!(e.kind(), "ContextFull", "{e}");
    // After the errors, the slot still decodes.
    model.submit_slots(&[(0, first)]).unwrap();
    assert_eq!(model.read_slots_blocking().unwrap().len(), 1);
}
