// rope_kv's cache writes into rgba32float textures (row = position, 4 values per texel).
@group(0) @binding(6) var kc: texture_storage_2d<rgba32float, write>;
@group(0) @binding(7) var vc: texture_storage_2d<rgba32float, write>;

fn store8(is_k: bool, row: u32, c: u32, v: array<f32, 8>) {
    let a = vec4<f32>(v[0], v[1], v[2], v[3]);
    let b = vec4<f32>(v[4], v[5], v[6], v[7]);
    let x = c / 4u;
    if (is_k) {
        textureStore(kc, vec2<u32>(x, row), a);
        textureStore(kc, vec2<u32>(x + 1u, row), b);
    } else {
        textureStore(vc, vec2<u32>(x, row), a);
        textureStore(vc, vec2<u32>(x + 1u, row), b);
    }
}
