// Appends to a KV cache in a storage buffer [max_ctx, kv_dim] (see kv_append_common).

@group(0) @binding(2) var<storage, read> src: array<act>;
@group(0) @binding(3) var<storage, read_write> cache: array<act>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i0 = (gid.x + gid.y * nwg.x * WG) * ROWS;
    let n = p.n_tokens * p.kv_dim;
    for (var i = i0; i < min(i0 + ROWS, n); i++) {
        let row = cache_row(i / p.kv_dim);
        if (row != 0xffffffffu) {
            cache[row * p.kv_dim + i % p.kv_dim] = src[i];
        }
    }
}
