// Attention on GPUs, split along the keys (flash-decoding), for decode and prefill alike.
//
// `attention.wgsl` gives each (query head, token) one workgroup, whose invocations then
// walk all visible keys one after another: on an H200 that cost ~0.5 us per key (one memory
// latency per step of a dependent loop), 1 ms per layer at context 2048, and decode fell
// from 270 tok/s at context 64 to 29 at 2048. Here a workgroup takes one chunk of WG keys
// for one (query head, token): one key per invocation for the scores, and for the weighted
// values HD4 invocations per key row (one vec4 of the head each) by WG / HD4 key lanes, so
// no invocation walks more than WG / (WG / HD4) keys and every loop has a constant bound
// (the compiler unrolls it and issues the loads together). Each chunk writes its softmax
// state (max, sum, unnormalised weighted values) to `part`; `combine` rescales the chunks
// to their common maximum and normalises, one workgroup per (query head, token), one
// output value per invocation.
//
// `part`, per (token, head, chunk), HD + 4 floats: max, sum, 2 unused, then the weighted
// values (the layout of attention_cpu.wgsl's split, counted in floats).

@group(0) @binding(2) var<storage, read> q: array<vec4<act>>;
@group(0) @binding(3) var<storage, read> kc: array<vec4<act>>;
@group(0) @binding(4) var<storage, read> vc: array<vec4<act>>;
@group(0) @binding(5) var<storage, read_write> part: array<f32>;
@group(0) @binding(6) var<storage, read_write> out: array<act>;

// vec4s per head (head_dim / 4; WGSL needs it constant for the private arrays).
const HD4: u32 = BLOCK;
// Key lanes of the weighted-values step: HD4 invocations cover one key's row.
const KL: u32 = WG / HD4;

var<workgroup> sc: array<f32, WG>;
var<workgroup> vsum: array<vec4<f32>, WG>;

fn chunks() -> u32 {
    return (p.max_ctx + WG - 1u) / WG;
}

@compute @workgroup_size(WG)
fn split(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let h = wid.x;
    let c = wid.y;
    let t = wid.z;
    let nch = chunks();
    let keys = visible(t);
    let start = keys.x + c * WG;
    // Chunks past the visible keys are idle (the grid covers the whole cache: positions
    // advance on the GPU, the dispatch is recorded once); `combine` never reads them. The
    // condition is the same for the whole workgroup (wid and a read-only buffer), so the
    // barriers below stay in uniform control flow.
    if (start >= keys.y) {
        return;
    }
    let n = min(WG, keys.y - start);
    let kvh = h / (p.n_heads / p.n_kv_heads);
    let kv4 = p.n_kv_heads * HD4;
    let row0 = base_row(t);
    let th = t * p.n_heads + h;
    let qb = th * HD4;

    // Scores: key start + lid, one per invocation; keys past the chunk's end repeat its last
    // key (a valid row) and are masked out.
    let j = start + min(lid, n - 1u);
    let kb = (row0 + j) * kv4 + kvh * HD4;
    var s = 0.0;
    for (var d = 0u; d < HD4; d++) {
        s += dot(vec4<f32>(q[qb + d]), vec4<f32>(kc[kb + d]));
    }
    s *= p.scale;
    if (lid >= n) {
        s = -3.0e38;
    }
    let m = reduce_max(lid, s);
    var e = 0.0;
    if (lid < n) {
        e = exp(s - m);
    }
    sc[lid] = e;
    let l = reduce_sum(lid, e);

    // Weighted values: invocation (lane, d) sums keys lane, lane + KL, ... of the chunk for
    // vec4 d of the head. reduce_sum's barriers made every sc[] visible.
    let d = lid % HD4;
    let lane = lid / HD4;
    var a = vec4<f32>(0.0);
    for (var i = lane; i < WG; i += KL) {
        let row = row0 + start + min(i, n - 1u);
        a += sc[i] * vec4<f32>(vc[row * kv4 + kvh * HD4 + d]);
    }
    vsum[lid] = a;
    workgroupBarrier();
    let pb = (th * nch + c) * (HD4 + 1u) * 4u;
    if (lane == 0u) {
        var total = a;
        for (var k = 1u; k < KL; k++) {
            total += vsum[k * HD4 + d];
        }
        let o = pb + 4u + d * 4u;
        part[o] = total.x;
        part[o + 1u] = total.y;
        part[o + 2u] = total.z;
        part[o + 3u] = total.w;
    }
    if (lid == 0u) {
        part[pb] = m;
        part[pb + 1u] = l;
    }
}

@compute @workgroup_size(WG)
fn combine(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let th = wid.y * p.n_heads + wid.x;
    let nch = chunks();
    let keys = visible(wid.y);
    let n = (keys.y - keys.x + WG - 1u) / WG;
    let stride = (HD4 + 1u) * 4u;
    let base = th * nch * stride;
    var mx = -3.0e38;
    for (var c = 0u; c < n; c++) {
        mx = max(mx, part[base + c * stride]);
    }
    let hd = HD4 * 4u;
    for (var d = lid; d < hd; d += WG) {
        var l = 0.0;
        var a = 0.0;
        for (var c = 0u; c < n; c++) {
            let pb = base + c * stride;
            let w = exp(part[pb] - mx);
            l += part[pb + 1u] * w;
            a += part[pb + 4u + d] * w;
        }
        out[th * hd + d] = act(a / l);
    }
}
