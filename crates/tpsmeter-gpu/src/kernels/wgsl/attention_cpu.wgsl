// Attention for CPU-type adapters: one invocation per (query head, token) and no workgroup
// barriers (a barrier costs 5-100x on lavapipe, and the tree reductions of attention.wgsl
// need several per key block). Each invocation streams its visible keys once with an online
// softmax: running max m, running sum l, and the weighted sum of values rescaled whenever m
// grows, so scores need no scratch. Reads are vec4s: head_dim is a multiple of 4.

// Keys and values come through k_at / v_at (kv_buffer.wgsl or kv_texture.wgsl).
@group(0) @binding(2) var<storage, read> q: array<vec4<act>>;
@group(0) @binding(6) var<storage, read_write> out: array<vec4<act>>;

// The vec4s of one head: WGSL needs a constant array size, so the op passes head_dim / 4 as
// BLOCK.
const HD4: u32 = BLOCK;

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
    let start = keys.x;
    let end = keys.y;
    let qb = (t * p.n_heads + h) * HD4;

    var qv: array<vec4<f32>, HD4>;
    for (var d = 0u; d < HD4; d++) {
        qv[d] = vec4<f32>(q[qb + d]) * p.scale;
    }
    var acc: array<vec4<f32>, HD4>;
    var m = -3.0e38;
    var l = 0.0;
    for (var j = start; j < end; j++) {
        let c0 = kvh * HD4;
        var s = 0.0;
        for (var d = 0u; d < HD4; d++) {
            s += dot(qv[d], k_at(j, c0 + d));
        }
        if (s > m) {
            // Rescale what was summed under the old maximum (exp(-inf) = 0 on the first key).
            let c = exp(m - s);
            l *= c;
            for (var d = 0u; d < HD4; d++) {
                acc[d] *= c;
            }
            m = s;
        }
        let e = exp(s - m);
        l += e;
        for (var d = 0u; d < HD4; d++) {
            acc[d] += e * v_at(j, c0 + d);
        }
    }
    let inv = 1.0 / l;
    for (var d = 0u; d < HD4; d++) {
        out[qb + d] = vec4<act>(acc[d] * inv);
    }
}
