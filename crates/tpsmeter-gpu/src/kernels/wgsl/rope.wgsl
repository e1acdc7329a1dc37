// Rotary position embedding, in place on x laid out [n_tokens, n_heads, head_dim].
// Token t sits at position pos[2t] (pos holds a (position, cache row base) pair per token, in
// a buffer so a recorded step reads the current positions without re-recording; a batched
// decode step's tokens belong to different sequences, each at its own position). One
// invocation per rotated pair.
//   mode 0 ("normal", llama GGUFs): pairs (2i, 2i + 1)
//   mode 1 (NEOX, qwen2 / gemma):   pairs (i, i + rope_dim / 2)
// Llama 3.x divides the angle of pair i by factors[i] (`rope_freqs.weight`); without factors
// the op binds a placeholder there and sets has_factors to 0.

struct Params {
    n_tokens: u32,
    n_heads: u32,
    head_dim: u32,
    rope_dim: u32,
    mode: u32,
    freq_base: f32,
    freq_scale: f32,
    has_factors: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> pos: array<u32>;
@group(0) @binding(2) var<storage, read_write> x: array<act>;
@group(0) @binding(3) var<storage, read> factors: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let half_dim = p.rope_dim / 2u;
    let idx = gid.x + gid.y * nwg.x * WG;
    if (idx >= p.n_tokens * p.n_heads * half_dim) {
        return;
    }
    let i = idx % half_dim;
    let th = idx / half_dim; // token * n_heads + head
    let t = th / p.n_heads;
    let base = th * p.head_dim;
    var i0: u32;
    var i1: u32;
    if (p.mode == 0u) {
        i0 = base + 2u * i;
        i1 = i0 + 1u;
    } else {
        i0 = base + i;
        i1 = i0 + half_dim;
    }
    var inv_freq = pow(p.freq_base, -f32(2u * i) / f32(p.rope_dim));
    if (p.has_factors != 0u) {
        inv_freq /= factors[i];
    }
    let theta = f32(pos[2u * t]) * p.freq_scale * inv_freq;
    let c = cos(theta);
    let s = sin(theta);
    let a = f32(x[i0]);
    let b = f32(x[i1]);
    x[i0] = act(a * c - b * s);
    x[i1] = act(a * s + b * c);
}
