// The KV cache in storage buffers [max_ctx, n_kv_heads * head_dim]: vec4 `c` of row `j`.
@group(0) @binding(3) var<storage, read> kc: array<vec4<act>>;
@group(0) @binding(4) var<storage, read> vc: array<vec4<act>>;

fn k_at(j: u32, c: u32) -> vec4<f32> {
    return vec4<f32>(kc[j * p.n_kv_heads * HD4 + c]);
}
fn v_at(j: u32, c: u32) -> vec4<f32> {
    return vec4<f32>(vc[j * p.n_kv_heads * HD4 + c]);
}
