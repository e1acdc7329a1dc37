// The KV cache in rgba32float textures (CPU-type adapters): row j is position j, texel c its
// c-th vec4. On lavapipe a texel fetch is a vector gather where a storage-buffer load with
// per-invocation addresses is a scalar loop over lanes (see weights_texture.wgsl).
@group(0) @binding(3) var kc: texture_2d<f32>;
@group(0) @binding(4) var vc: texture_2d<f32>;

fn k_at(j: u32, c: u32) -> vec4<f32> {
    return textureLoad(kc, vec2<u32>(c, j), 0);
}
fn v_at(j: u32, c: u32) -> vec4<f32> {
    return textureLoad(vc, vec2<u32>(c, j), 0);
}

// vec4s 2 * c2 and 2 * c2 + 1 of row j (the CPU-type attention reads heads in pairs, the
// unit of kv_texture_f16.wgsl).
fn k_pair(j: u32, c2: u32) -> array<vec4<f32>, 2> {
    return array<vec4<f32>, 2>(k_at(j, 2u * c2), k_at(j, 2u * c2 + 1u));
}
fn v_pair(j: u32, c2: u32) -> array<vec4<f32>, 2> {
    return array<vec4<f32>, 2>(v_at(j, 2u * c2), v_at(j, 2u * c2 + 1u));
}
