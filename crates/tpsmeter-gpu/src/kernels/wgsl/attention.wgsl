// Attention with grouped-query heads over a static KV cache, for one or more query tokens
// (decode: 1; prefill: causal). One workgroup per (query head, token):
//   1. scores s_j = scale * q . k_j for the visible keys j (causal, optional sliding window),
//      kept in a scratch row; workgroup max;
//   2. e_j = exp(s_j - max) in place, workgroup sum;
//   3. out[d] = sum_j e_j v_j[d] / sum, one output dimension per invocation.

@group(0) @binding(2) var<storage, read> q: array<act>;
@group(0) @binding(3) var<storage, read> kc: array<act>;
@group(0) @binding(4) var<storage, read> vc: array<act>;
@group(0) @binding(5) var<storage, read_write> scores: array<f32>;
@group(0) @binding(6) var<storage, read_write> out: array<act>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let h = wid.x;
    let t = wid.y;
    let kvh = h / (p.n_heads / p.n_kv_heads);
    let keys = visible(t);
    let row0 = base_row(t);
    let start = keys.x;
    let end = keys.y;
    let hd = p.head_dim;
    let kv_dim = p.n_kv_heads * hd;
    let qb = (t * p.n_heads + h) * hd;
    let srow = (t * p.n_heads + h) * p.max_ctx;

    var m = -3.0e38;
    for (var j = start + lid; j < end; j += WG) {
        let kb = (row0 + j) * kv_dim + kvh * hd;
        var s = 0.0;
        for (var d = 0u; d < hd; d++) {
            s += f32(q[qb + d]) * f32(kc[kb + d]);
        }
        s *= p.scale;
        scores[srow + j] = s;
        m = max(m, s);
    }
    m = reduce_max(lid, m);

    var l = 0.0;
    for (var j = start + lid; j < end; j += WG) {
        let e = exp(scores[srow + j] - m);
        scores[srow + j] = e;
        l += e;
    }
    l = reduce_sum(lid, l);
    // Phase 3 reads scores other invocations wrote.
    storageBarrier();

    let inv = 1.0 / l;
    for (var d = lid; d < hd; d += WG) {
        var acc = 0.0;
        for (var j = start; j < end; j++) {
            acc += scores[srow + j] * f32(vc[(row0 + j) * kv_dim + kvh * hd + d]);
        }
        out[qb + d] = act(acc * inv);
    }
}
