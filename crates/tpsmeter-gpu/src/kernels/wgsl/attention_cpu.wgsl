// Attention for CPU-type adapters: one invocation per (query head, token) and no workgroup
// barriers (a barrier costs 5-100x on lavapipe, and the tree reductions of attention.wgsl
// need several per key block). Each invocation streams its visible keys once with an online
// softmax: running max m, running sum l, and the weighted sum of values rescaled whenever m
// grows, so scores need no scratch. Reads are pairs of vec4s (one f16 texel: see
// kv_texture_f16.wgsl): head_dim is a multiple of 8.

// Keys and values come through k_pair / v_pair (kv_buffer.wgsl, kv_texture.wgsl or
// kv_texture_f16.wgsl).
@group(0) @binding(2) var<storage, read> q: array<vec4<act>>;
@group(0) @binding(6) var<storage, read_write> out: array<vec4<act>>;

// The vec4s of one head: WGSL needs a constant array size, so the op passes head_dim / 4 as
// BLOCK.
const HD4: u32 = BLOCK;

// The running softmax state of one invocation (module-scope private: the one-pass kernel
// and the split decode kernel share `attend`).
var<private> acc: array<vec4<f32>, HD4>;
var<private> m_run: f32;
var<private> l_run: f32;

// Rescales what `acc` summed under the old maximum `m` to the new one `mx`; returns the
// factor (exp(-inf) = 0 on the first key).
fn rescale(m: f32, mx: f32) -> f32 {
    let c = exp(m - mx);
    for (var d = 0u; d < HD4; d++) {
        acc[d] *= c;
    }
    return c;
}

// Streams keys [start, end) of kv head `kvh`, stored from cache row `row0` on, for the query
// at `qb` into acc / m_run / l_run.
fn attend(qb: u32, kvh: u32, row0: u32, start: u32, end: u32) {
    var qv: array<vec4<f32>, HD4>;
    for (var d = 0u; d < HD4; d++) {
        qv[d] = vec4<f32>(q[qb + d]) * p.scale;
        acc[d] = vec4<f32>(0.0);
    }
    var m = -3.0e38;
    var l = 0.0;
    let c0 = kvh * HD4;
    // Two keys per iteration: two independent gather streams in flight, and one rescale
    // test and one loop step for both.
    var j = start;
    for (; j + 1u < end; j += 2u) {
        var s0 = 0.0;
        var s1 = 0.0;
        for (var d = 0u; d < HD4; d += 2u) {
            let k0 = k_pair(row0 + j, (c0 + d) / 2u);
            let k1 = k_pair(row0 + j + 1u, (c0 + d) / 2u);
            s0 += dot(qv[d], k0[0]) + dot(qv[d + 1u], k0[1]);
            s1 += dot(qv[d], k1[0]) + dot(qv[d + 1u], k1[1]);
        }
        let mx = max(s0, s1);
        if (mx > m) {
            l *= rescale(m, mx);
            m = mx;
        }
        let e0 = exp(s0 - m);
        let e1 = exp(s1 - m);
        l += e0 + e1;
        for (var d = 0u; d < HD4; d += 2u) {
            let v0 = v_pair(row0 + j, (c0 + d) / 2u);
            let v1 = v_pair(row0 + j + 1u, (c0 + d) / 2u);
            acc[d] += e0 * v0[0] + e1 * v1[0];
            acc[d + 1u] += e0 * v0[1] + e1 * v1[1];
        }
    }
    if (j < end) {
        var s = 0.0;
        for (var d = 0u; d < HD4; d += 2u) {
            let kp = k_pair(row0 + j, (c0 + d) / 2u);
            s += dot(qv[d], kp[0]) + dot(qv[d + 1u], kp[1]);
        }
        if (s > m) {
            l *= rescale(m, s);
            m = s;
        }
        let e = exp(s - m);
        l += e;
        for (var d = 0u; d < HD4; d += 2u) {
            let vp = v_pair(row0 + j, (c0 + d) / 2u);
            acc[d] += e * vp[0];
            acc[d + 1u] += e * vp[1];
        }
    }
    m_run = m;
    l_run = l;
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.n_heads * p.n_tokens) {
        return;
    }
    let h = i % p.n_heads;
    let t = i / p.n_heads;
    let kvh = h / (p.n_heads / p.n_kv_heads);
    let keys = visible(t);
    let qb = (t * p.n_heads + h) * HD4;
    attend(qb, kvh, base_row(t), keys.x, keys.y);
    let inv = 1.0 / l_run;
    for (var d = 0u; d < HD4; d++) {
        out[qb + d] = vec4<act>(acc[d] * inv);
    }
}

// Decode over a long context, split along the keys (flash-decoding): `main` gives each
// query head one invocation, so a 2048-key context kept one of 2 cores and most SIMD lanes
// idle. `split` gives each (token, head, chunk of p.chunk keys) one invocation, writing its
// softmax state (max, sum, unnormalised weighted values) to `part`; `combine` rescales the
// chunks to their common maximum and normalises, one invocation per (token, head). For
// decode: each query token is the next token of its own sequence (one, or a batch of them).
@group(0) @binding(5) var<storage, read_write> part: array<vec4<f32>>;

fn chunks() -> u32 {
    return (p.max_ctx + p.chunk - 1u) / p.chunk;
}

@compute @workgroup_size(WG)
fn split(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let nch = chunks();
    let i = gid.x + gid.y * nwg.x * WG;
    if (i >= p.n_heads * nch * p.n_tokens) {
        return;
    }
    let h = i % p.n_heads;
    let c = (i / p.n_heads) % nch;
    let t = i / (p.n_heads * nch);
    let keys = visible(t);
    let start = keys.x + c * p.chunk;
    // Chunks past the visible keys are idle (the grid covers the whole cache: positions
    // advance on the GPU, the dispatch is recorded once); `combine` never reads them.
    if (start >= keys.y) {
        return;
    }
    let end = min(start + p.chunk, keys.y);
    let th = t * p.n_heads + h;
    attend(th * HD4, h / (p.n_heads / p.n_kv_heads), base_row(t), start, end);
    let pb = (th * nch + c) * (HD4 + 1u);
    part[pb] = vec4<f32>(m_run, l_run, 0.0, 0.0);
    for (var d = 0u; d < HD4; d++) {
        part[pb + 1u + d] = acc[d];
    }
}

@compute @workgroup_size(WG)
fn combine(@builtin(global_invocation_id) gid: vec3<u32>) {
    let th = gid.x;
    if (th >= p.n_heads * p.n_tokens) {
        return;
    }
    let nch = chunks();
    let keys = visible(th / p.n_heads);
    let n = (keys.y - keys.x + p.chunk - 1u) / p.chunk;
    var mx = -3.0e38;
    for (var c = 0u; c < n; c++) {
        mx = max(mx, part[(th * nch + c) * (HD4 + 1u)].x);
    }
    var l = 0.0;
    var sum: array<vec4<f32>, HD4>;
    for (var c = 0u; c < n; c++) {
        let pb = (th * nch + c) * (HD4 + 1u);
        let ml = part[pb];
        let w = exp(ml.x - mx);
        l += ml.y * w;
        for (var d = 0u; d < HD4; d++) {
            sum[d] += w * part[pb + 1u + d];
        }
    }
    let inv = 1.0 / l;
    for (var d = 0u; d < HD4; d++) {
        out[th * HD4 + d] = vec4<act>(sum[d] * inv);
    }
}

// `split` for a whole GQA group at once: one invocation per (token, kv head, chunk), for the
// ROWS query heads that share the kv head. `split` fetches each key and value texel once per
// query head; on lavapipe those fetches (vector gathers) are most of a long decode's time.
// Here each texel is fetched once for the group. The group's running state per key would not
// fit (ROWS x head_dim accumulators, ~50 vec4s, spilled to memory on every key: measured 1.5x
// slower), so the chunk goes in two passes, each over the head's texel columns in the outer
// loop: scores of every key for the group's heads first (the chunk's scores in `sc`, a
// private array indexed by the key), then after an exact softmax over the chunk the weighted
// values, one texel column (2 vec4s per head) at a time. TOK is the chunk (`p.chunk`).
var<private> sc: array<f32, ROWS * TOK>;

@compute @workgroup_size(WG)
fn split_group(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let nch = chunks();
    let i = gid.x + gid.y * nwg.x * WG;
    if (i >= p.n_kv_heads * nch * p.n_tokens) {
        return;
    }
    let kvh = i % p.n_kv_heads;
    let c = (i / p.n_kv_heads) % nch;
    let t = i / (p.n_kv_heads * nch);
    let keys = visible(t);
    let start = keys.x + c * p.chunk;
    if (start >= keys.y) {
        return;
    }
    let n = min(start + p.chunk, keys.y) - start;
    let row0 = base_row(t) + start;
    let c0 = kvh * HD4;
    // The group's first query head, as (token, head) row of q and part.
    let th0 = t * p.n_heads + kvh * ROWS;
    for (var d = 0u; d < HD4; d += 2u) {
        var qd: array<vec4<f32>, 2 * ROWS>;
        for (var g = 0u; g < ROWS; g++) {
            let qb = (th0 + g) * HD4 + d;
            qd[2u * g] = vec4<f32>(q[qb]) * p.scale;
            qd[2u * g + 1u] = vec4<f32>(q[qb + 1u]) * p.scale;
        }
        for (var j = 0u; j < n; j++) {
            let k = k_pair(row0 + j, (c0 + d) / 2u);
            for (var g = 0u; g < ROWS; g++) {
                let s = dot(qd[2u * g], k[0]) + dot(qd[2u * g + 1u], k[1]);
                sc[g * TOK + j] = select(sc[g * TOK + j] + s, s, d == 0u);
            }
        }
    }
    var ml: array<vec2<f32>, ROWS>;
    for (var g = 0u; g < ROWS; g++) {
        var m = -3.0e38;
        for (var j = 0u; j < n; j++) {
            m = max(m, sc[g * TOK + j]);
        }
        var l = 0.0;
        for (var j = 0u; j < n; j++) {
            let e = exp(sc[g * TOK + j] - m);
            sc[g * TOK + j] = e;
            l += e;
        }
        ml[g] = vec2<f32>(m, l);
    }
    for (var d = 0u; d < HD4; d += 2u) {
        var acc2: array<vec4<f32>, 2 * ROWS>;
        for (var j = 0u; j < n; j++) {
            let v = v_pair(row0 + j, (c0 + d) / 2u);
            for (var g = 0u; g < ROWS; g++) {
                let w = sc[g * TOK + j];
                acc2[2u * g] += w * v[0];
                acc2[2u * g + 1u] += w * v[1];
            }
        }
        for (var g = 0u; g < ROWS; g++) {
            let pb = ((th0 + g) * nch + c) * (HD4 + 1u);
            part[pb + 1u + d] = acc2[2u * g];
            part[pb + 2u + d] = acc2[2u * g + 1u];
        }
    }
    for (var g = 0u; g < ROWS; g++) {
        let pb = ((th0 + g) * nch + c) * (HD4 + 1u);
        part[pb] = vec4<f32>(ml[g].x, ml[g].y, 0.0, 0.0);
    }
}
