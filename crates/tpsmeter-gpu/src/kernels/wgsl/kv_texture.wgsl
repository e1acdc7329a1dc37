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
