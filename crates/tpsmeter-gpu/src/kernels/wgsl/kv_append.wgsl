// Appends n_tokens rows of kv_dim values to a static cache [max_ctx, kv_dim] at row pos[0].
// Rows past max_ctx are dropped (the generation loop refuses to run past the context
// limit before it gets here).

struct Params {
    n_tokens: u32,
    kv_dim: u32,
    max_ctx: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> pos: array<u32>;
@group(0) @binding(2) var<storage, read> src: array<act>;
@group(0) @binding(3) var<storage, read_write> cache: array<act>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i0 = (gid.x + gid.y * nwg.x * WG) * ROWS;
    let n = p.n_tokens * p.kv_dim;
    for (var i = i0; i < min(i0 + ROWS, n); i++) {
        let row = pos[0] + i / p.kv_dim;
        if (row < p.max_ctx) {
            cache[row * p.kv_dim + i % p.kv_dim] = src[i];
        }
    }
}
