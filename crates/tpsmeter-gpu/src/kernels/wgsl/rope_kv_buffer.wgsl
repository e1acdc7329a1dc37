// rope_kv's cache writes into storage buffers [max_ctx rows, kv_dim].
@group(0) @binding(6) var<storage, read_write> kc: array<act>;
@group(0) @binding(7) var<storage, read_write> vc: array<act>;

fn store8(is_k: bool, row: u32, c: u32, v: array<f32, 8>) {
    let o = row * p.n_kv_heads * p.head_dim + c;
    for (var k = 0u; k < 8u; k++) {
        if (is_k) {
            kc[o + k] = act(v[k]);
        } else {
            vc[o + k] = act(v[k]);
        }
    }
}
