// The KV cache in rgba32uint textures (CPU-type adapters), f16 values: row j is position j,
// texel c holds values 8c .. 8c + 7 as four pack2x16float pairs. One texel fetch (a vector
// gather on lavapipe) brings two vec4s, where kv_texture.wgsl's brings one.
@group(0) @binding(3) var kc: texture_2d<u32>;
@group(0) @binding(4) var vc: texture_2d<u32>;

fn unpack_pair(t: vec4<u32>) -> array<vec4<f32>, 2> {
    return array<vec4<f32>, 2>(
        vec4<f32>(unpack2x16float(t.x), unpack2x16float(t.y)),
        vec4<f32>(unpack2x16float(t.z), unpack2x16float(t.w)),
    );
}

// vec4s 2 * c2 and 2 * c2 + 1 of row j.
fn k_pair(j: u32, c2: u32) -> array<vec4<f32>, 2> {
    return unpack_pair(textureLoad(kc, vec2<u32>(c2, j), 0));
}
fn v_pair(j: u32, c2: u32) -> array<vec4<f32>, 2> {
    return unpack_pair(textureLoad(vc, vec2<u32>(c2, j), 0));
}
