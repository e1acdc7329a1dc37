// The KV cache in storage buffers [max_ctx, n_kv_heads * head_dim]: vec4 `c` of row `j`.
@group(0) @binding(3) var<storage, read> kc: array<vec4<act>>;
@group(0) @binding(4) var<storage, read> vc: array<vec4<act>>;

fn k_at(j: u32, c: u32) -> vec4<f32> {
    return vec4<f32>(kc[j * p.n_kv_heads * HD4 + c]);
}
fn v_at(j: u32, c: u32) -> vec4<f32> {
    return vec4<f32>(vc[j * p.n_kv_heads * HD4 + c]);
}

// vec4s 2 * c2 and 2 * c2 + 1 of row j (the CPU-type attention reads heads in pairs, the
// unit of kv_texture_f16.wgsl).
fn k_pair(j: u32, c2: u32) -> array<vec4<f32>, 2> {
    return array<vec4<f32>, 2>(k_at(j, 2u * c2), k_at(j, 2u * c2 + 1u));
}
fn v_pair(j: u32, c2: u32) -> array<vec4<f32>, 2> {
    return array<vec4<f32>, 2>(v_at(j, 2u * c2), v_at(j, 2u * c2 + 1u));
}
