//! The sampler on the CPU: the CPU backend's, and the twin of the GPU's `sample.wgsl` (its
//! tolerance tests compare against it): the same penalty, candidate order and f32
//! arithmetic, so the same inputs and seed give the same token on either backend.

use crate::sample::{SAMPLE_CAP, SamplerConfig};

fn pcg_hash(v: u32) -> u32 {
    let state = v.wrapping_mul(747_796_405).wrapping_add(2_891_336_453);
    let word = ((state >> ((state >> 28) + 4)) ^ state).wrapping_mul(277_803_737);
    (word >> 22) ^ word
}

/// The sampler's uniform draw for `step` (same bits as the kernel's `uniform01`).
pub fn uniform01(seed: u64, step: u32) -> f32 {
    let h = pcg_hash((seed as u32) ^ pcg_hash(((seed >> 32) as u32) ^ pcg_hash(step)));
    (h >> 8) as f32 * (1.0 / 16_777_216.0)
}

/// Picks a token from `logits` (penalised in place like the kernel) given the recent
/// window (oldest first) and the step counter.
pub fn sample(cfg: &SamplerConfig, logits: &mut [f32], recent: &[u32], step: u32) -> u32 {
    if cfg.repetition_penalty != 1.0 {
        let w = cfg.penalty_window as usize;
        let window = &recent[recent.len().saturating_sub(w)..];
        let mut seen = std::collections::HashSet::new();
        for &t in window {
            if seen.insert(t) && (t as usize) < logits.len() {
                let l = &mut logits[t as usize];
                *l = if *l > 0.0 {
                    *l / cfg.repetition_penalty
                } else {
                    *l * cfg.repetition_penalty
                };
            }
        }
    }
    if cfg.temperature <= 0.0 {
        let mut best = 0usize;
        for (i, &v) in logits.iter().enumerate() {
            if v > logits[best] {
                best = i;
            }
        }
        return best as u32;
    }
    let k = if cfg.top_k > 0 {
        (cfg.top_k as usize).min(SAMPLE_CAP)
    } else {
        SAMPLE_CAP
    }
    .min(logits.len());
    let mut order: Vec<u32> = (0..logits.len() as u32).collect();
    // total_cmp agrees with the kernel's order-preserving key for every non-NaN value. The
    // order is total (ties go to the lower id), so selecting the first k and sorting only
    // them gives exactly the first k of a full sort, at a fraction of its cost (the CPU
    // backend samples with this twin).
    let by_rank = |&a: &u32, &b: &u32| {
        logits[b as usize]
            .total_cmp(&logits[a as usize])
            .then(a.cmp(&b))
    };
    if k < order.len() {
        order.select_nth_unstable_by(k, by_rank);
    }
    order[..k].sort_by(by_rank);
    let cand = &order[..k];
    let m = logits[cand[0] as usize];
    let inv_t = 1.0 / cfg.temperature;
    let e = |i: usize| ((logits[cand[i] as usize] - m) * inv_t).exp();
    let mut kept = k;
    for i in 1..k {
        if e(i) < cfg.min_p {
            kept = i;
            break;
        }
    }
    let mut total = 0f32;
    for i in 0..kept {
        total += e(i);
    }
    if cfg.top_p < 1.0 {
        let mut cum = 0f32;
        let mut cut = kept;
        for i in 0..kept {
            cum += e(i);
            if cum >= cfg.top_p * total {
                cut = i + 1;
                total = cum;
                break;
            }
        }
        kept = cut;
    }
    let target = uniform01(cfg.seed, step) * total;
    let mut pick = cand[0];
    let mut cum = 0f32;
    for (i, &c) in cand.iter().enumerate().take(kept) {
        cum += e(i);
        pick = c;
        if cum > target {
            break;
        }
    }
    pick
}
