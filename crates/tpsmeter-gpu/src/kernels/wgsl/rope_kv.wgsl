// RoPE and the KV append in one dispatch, on the output of the fused QKV matvec: qkv holds,
// per token, the query heads, the key heads and the value heads one after another
// (`p.width` values). Each unit (a head of q, k or v) gets its bias (Qwen2) and its per-head
// RMSNorm (Gemma 3) if the model has them, then q and k are rotated; q goes to `q_out` for
// attention, k and v go straight into the cache rows of their token (see kv_append_common
// for the rows). One invocation per 8 values of a head: every value needs only its rotation
// partner, which it reads itself, so nothing is shared and there are no barriers.
//   mode 0 ("normal", llama GGUFs): pairs (2i, 2i + 1)
//   mode 1 (NEOX, qwen2 / gemma):   pairs (i, i + rope_dim / 2)

struct Params {
    n_tokens: u32,
    n_heads: u32,
    n_kv_heads: u32,
    head_dim: u32,
    rope_dim: u32,
    mode: u32,
    freq_base: f32,
    freq_scale: f32,
    max_ctx: u32,
    has_factors: u32,
    eps: f32,
    // Offsets into `aux` of the biases (all `width` of them), of q's and of k's head-norm
    // weight (`head_dim` each); NONE where the model has none.
    bias_at: u32,
    qnorm_at: u32,
    knorm_at: u32,
    _pad0: u32,
    _pad1: u32,
}

const NONE: u32 = 0xffffffffu;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> pos: array<u32>;
@group(0) @binding(2) var<storage, read> qkv: array<act>;
@group(0) @binding(3) var<storage, read_write> q_out: array<act>;
@group(0) @binding(4) var<storage, read> factors: array<f32>;
@group(0) @binding(5) var<storage, read> aux: array<f32>;

// The cache row of token t, or NONE when its position is past the sequence's rows.
fn cache_row(t: u32) -> u32 {
    let at = pos[2u * t];
    if (at >= p.max_ctx) {
        return NONE;
    }
    return pos[2u * t + 1u] + at;
}

// Value j of the head that starts at `src` (its unit's first value `col` within a token's
// row), with its bias.
fn raw(src: u32, col: u32, j: u32) -> f32 {
    var v = f32(qkv[src + j]);
    if (p.bias_at != NONE) {
        v += aux[p.bias_at + col + j];
    }
    return v;
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let idx = gid.x + gid.y * nwg.x * WG;
    let chunks = p.head_dim / 8u;
    let units = p.n_heads + 2u * p.n_kv_heads;
    if (idx >= p.n_tokens * units * chunks) {
        return;
    }
    let j0 = (idx % chunks) * 8u;
    let u = (idx / chunks) % units;
    let t = idx / (chunks * units);
    let width = units * p.head_dim;
    let col = u * p.head_dim;
    let src = t * width + col;
    // 0: a query head, 1: a key head, 2: a value head.
    var kind = 2u;
    if (u < p.n_heads) {
        kind = 0u;
    } else if (u < p.n_heads + p.n_kv_heads) {
        kind = 1u;
    }
    var norm_at = NONE;
    if (kind == 0u) {
        norm_at = p.qnorm_at;
    } else if (kind == 1u) {
        norm_at = p.knorm_at;
    }
    // The head's RMSNorm scale (as rms_norm.wgsl); every invocation of the head computes it.
    var inv = 1.0;
    if (norm_at != NONE) {
        var ss = 0.0;
        for (var j = 0u; j < p.head_dim; j++) {
            let v = raw(src, col, j);
            ss += v * v;
        }
        inv = inverseSqrt(ss / f32(p.head_dim) + p.eps);
    }
    let position = f32(pos[2u * t]);
    var out: array<f32, 8>;
    for (var k = 0u; k < 8u; k++) {
        let j = j0 + k;
        var a = raw(src, col, j);
        if (norm_at != NONE) {
            a = a * inv * aux[norm_at + j];
        }
        if (kind != 2u && j < p.rope_dim) {
            // Pair i of (j, partner); `first`: j is the pair's first value.
            let half = p.rope_dim / 2u;
            var i = j / 2u;
            var partner = j ^ 1u;
            var first = (j & 1u) == 0u;
            if (p.mode != 0u) {
                first = j < half;
                i = select(j - half, j, first);
                partner = select(j - half, j + half, first);
            }
            var b = raw(src, col, partner);
            if (norm_at != NONE) {
                b = b * inv * aux[norm_at + partner];
            }
            var inv_freq = pow(p.freq_base, -f32(2u * i) / f32(p.rope_dim));
            if (p.has_factors != 0u) {
                inv_freq /= factors[i];
            }
            let theta = position * p.freq_scale * inv_freq;
            let c = cos(theta);
            let s = sin(theta);
            // As rope.wgsl: first = a c - b s, second = (partner) s + (self) c.
            if (first) {
                a = a * c - b * s;
            } else {
                a = b * s + a * c;
            }
        }
        out[k] = a;
    }
    if (kind == 0u) {
        let o = t * p.n_heads * p.head_dim + col + j0;
        for (var k = 0u; k < 8u; k++) {
            q_out[o + k] = act(out[k]);
        }
        return;
    }
    let row = cache_row(t);
    if (row == NONE) {
        return;
    }
    // Column of the value within a cache row (kv heads * head_dim wide).
    let kv_col = col - (p.n_heads + (kind - 1u) * p.n_kv_heads) * p.head_dim + j0;
    store8(kind == 1u, row, kv_col, out);
}
