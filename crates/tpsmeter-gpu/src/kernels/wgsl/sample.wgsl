// Sampling on the GPU so that only the chosen token id (4 bytes) is read back.
// One workgroup of WG invocations:
//   1. repetition penalty, in place on the logits, for each distinct token of the recent
//      window (llama.cpp's rule: positive logits are divided by the penalty, others multiplied);
//   2. temperature <= 0: argmax (ties: lowest id);
//   3. otherwise: the K = min(top_k or CAP, CAP) largest logits by exact radix select on their
//      order-preserving bit patterns, sorted (logit desc, id asc); then min-p, top-p and a
//      draw from a counter-based hash of (seed, step), done sequentially by invocation 0
//      over at most CAP candidates (the CPU twin repeats the same arithmetic).
// The chosen id goes to out[0] and into the recent window; state.step advances.

const CAP: u32 = 256u;
const SORT_N: u32 = 512u; // candidates kept before the final cut (ties at the threshold)

struct Params {
    vocab: u32,
    top_k: u32,
    window: u32,       // capacity of the recent-token ring (0: no penalty)
    seed_lo: u32,
    seed_hi: u32,
    temperature: f32,
    top_p: f32,
    min_p: f32,
    rep_penalty: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// state: [step, ring_len, ring_head, unused]
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> logits: array<f32>;
@group(0) @binding(2) var<storage, read_write> ring: array<u32>;
@group(0) @binding(3) var<storage, read_write> state: array<u32, 4>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;

var<workgroup> hist: array<atomic<u32>, 256>;
var<workgroup> red_v: array<f32, WG>;
var<workgroup> red_i: array<u32, WG>;
var<workgroup> cand_key: array<u32, SORT_N>;
var<workgroup> cand_idx: array<u32, SORT_N>;
var<workgroup> n_cand: atomic<u32>;
var<workgroup> sel: array<u32, 4>; // prefix, remaining k, shift mask helper

fn pcg_hash(v: u32) -> u32 {
    let state = v * 747796405u + 2891336453u;
    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

// Uniform in [0, 1) from (seed, step); the twin computes the same bits.
fn uniform01(step: u32) -> f32 {
    let h = pcg_hash(p.seed_lo ^ pcg_hash(p.seed_hi ^ pcg_hash(step)));
    return f32(h >> 8u) * (1.0 / 16777216.0);
}

// Order-preserving map of f32 bits to u32 (larger float, larger key).
fn key_of(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    if ((b & 0x80000000u) != 0u) {
        return ~b;
    }
    return b | 0x80000000u;
}
fn val_of(k: u32) -> f32 {
    if ((k & 0x80000000u) != 0u) {
        return bitcast<f32>(k & 0x7fffffffu);
    }
    return bitcast<f32>(~k);
}

// (key desc, idx asc): true when a comes before b.
fn before(ka: u32, ia: u32, kb: u32, ib: u32) -> bool {
    return ka > kb || (ka == kb && ia < ib);
}

fn finish(lid: u32, tok: u32) {
    if (lid == 0u) {
        out[0] = tok;
        if (p.window > 0u) {
            ring[state[2]] = tok;
            state[2] = (state[2] + 1u) % p.window;
            state[1] = min(state[1] + 1u, p.window);
        }
        state[0] = state[0] + 1u;
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32) {
    // 1. Repetition penalty: invocation j handles ring slot j unless an earlier slot holds
    // the same token (each distinct token is penalised once).
    if (p.rep_penalty != 1.0) {
        let len = state[1];
        for (var j = lid; j < len; j += WG) {
            let tok = ring[j];
            var dup = false;
            for (var k = 0u; k < j; k++) {
                if (ring[k] == tok) {
                    dup = true;
                }
            }
            if (!dup && tok < p.vocab) {
                let l = logits[tok];
                if (l > 0.0) {
                    logits[tok] = l / p.rep_penalty;
                } else {
                    logits[tok] = l * p.rep_penalty;
                }
            }
        }
    }
    storageBarrier();
    workgroupBarrier();

    if (p.temperature <= 0.0) {
        // 2. Argmax, lowest id on ties.
        var bv = -3.4e38;
        var bi = 0xffffffffu;
        for (var i = lid; i < p.vocab; i += WG) {
            let v = logits[i];
            if (v > bv || bi == 0xffffffffu) {
                bv = v;
                bi = i;
            }
        }
        red_v[lid] = bv;
        red_i[lid] = bi;
        workgroupBarrier();
        for (var st = WG / 2u; st > 0u; st >>= 1u) {
            if (lid < st) {
                let ov = red_v[lid + st];
                let oi = red_i[lid + st];
                if (oi != 0xffffffffu && (ov > red_v[lid] || (ov == red_v[lid] && oi < red_i[lid]) || red_i[lid] == 0xffffffffu)) {
                    red_v[lid] = ov;
                    red_i[lid] = oi;
                }
            }
            workgroupBarrier();
        }
        finish(lid, red_i[0]);
        return;
    }

    // 3a. Radix select of the K-th largest key, 8 bits at a time from the top.
    var k = CAP;
    if (p.top_k > 0u) {
        k = min(p.top_k, CAP);
    }
    k = min(k, p.vocab);
    if (lid == 0u) {
        sel[0] = 0u; // prefix of the threshold key decided so far
        sel[1] = k;  // how many of the remaining candidates to take
    }
    workgroupBarrier();
    for (var round = 0u; round < 4u; round++) {
        let shift = 24u - 8u * round;
        for (var i = lid; i < 256u; i += WG) {
            atomicStore(&hist[i], 0u);
        }
        workgroupBarrier();
        let prefix = sel[0];
        // Bits above the current digit must match the prefix (none in pass 0).
        var mask = 0u;
        if (round > 0u) {
            mask = 0xffffffffu << (shift + 8u);
        }
        for (var i = lid; i < p.vocab; i += WG) {
            let key = key_of(logits[i]);
            if ((key & mask) == prefix) {
                atomicAdd(&hist[(key >> shift) & 255u], 1u);
            }
        }
        workgroupBarrier();
        if (lid == 0u) {
            var need = sel[1];
            var d = 255u;
            loop {
                let c = atomicLoad(&hist[d]);
                if (c >= need || d == 0u) {
                    break;
                }
                need -= c;
                d -= 1u;
            }
            sel[0] = prefix | (d << shift);
            sel[1] = need;
        }
        workgroupBarrier();
    }
    let thr = sel[0];

    // 3b. Gather every key >= threshold (ties beyond SORT_N slots are dropped).
    if (lid == 0u) {
        atomicStore(&n_cand, 0u);
    }
    for (var i = lid; i < SORT_N; i += WG) {
        cand_key[i] = 0u;
        cand_idx[i] = 0xffffffffu;
    }
    workgroupBarrier();
    for (var i = lid; i < p.vocab; i += WG) {
        let key = key_of(logits[i]);
        if (key >= thr) {
            let slot = atomicAdd(&n_cand, 1u);
            if (slot < SORT_N) {
                cand_key[slot] = key;
                cand_idx[slot] = i;
            }
        }
    }
    workgroupBarrier();

    // 3c. Bitonic sort of SORT_N slots, (key desc, idx asc).
    for (var size = 2u; size <= SORT_N; size <<= 1u) {
        for (var stride = size / 2u; stride > 0u; stride >>= 1u) {
            for (var t = lid; t < SORT_N / 2u; t += WG) {
                let i = 2u * stride * (t / stride) + (t % stride);
                let j = i + stride;
                let desc = (i & size) == 0u;
                let a_first = before(cand_key[i], cand_idx[i], cand_key[j], cand_idx[j]);
                if (a_first != desc) {
                    let tk = cand_key[i];
                    let ti = cand_idx[i];
                    cand_key[i] = cand_key[j];
                    cand_idx[i] = cand_idx[j];
                    cand_key[j] = tk;
                    cand_idx[j] = ti;
                }
            }
            workgroupBarrier();
        }
    }

    // 3d. Sequential cut and draw over at most K sorted candidates.
    if (lid == 0u) {
        let n = min(k, min(atomicLoad(&n_cand), SORT_N));
        let m = val_of(cand_key[0]);
        let inv_t = 1.0 / p.temperature;
        // min-p relative to the top probability (which is exp(0) = 1 before normalising).
        var kept = n;
        for (var i = 1u; i < n; i++) {
            let e = exp((val_of(cand_key[i]) - m) * inv_t);
            if (e < p.min_p) {
                kept = i;
                break;
            }
        }
        var total = 0.0;
        for (var i = 0u; i < kept; i++) {
            total += exp((val_of(cand_key[i]) - m) * inv_t);
        }
        // top-p: smallest prefix whose mass reaches top_p of the kept mass.
        if (p.top_p < 1.0) {
            var cum = 0.0;
            for (var i = 0u; i < kept; i++) {
                cum += exp((val_of(cand_key[i]) - m) * inv_t);
                if (cum >= p.top_p * total) {
                    kept = i + 1u;
                    total = cum;
                    break;
                }
            }
        }
        let goal = uniform01(state[0]) * total;
        var pick = cand_idx[0];
        var cum = 0.0;
        for (var i = 0u; i < kept; i++) {
            cum += exp((val_of(cand_key[i]) - m) * inv_t);
            pick = cand_idx[i];
            if (cum > goal) {
                break;
            }
        }
        sel[2] = pick;
    }
    workgroupBarrier();
    finish(lid, sel[2]);
}
