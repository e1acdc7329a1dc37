// rope_kv's cache writes into rgba32uint textures of f16 pairs (row = position, 8 values per
// texel, as kv_append_texture_f16.wgsl).
@group(0) @binding(6) var kc: texture_storage_2d<rgba32uint, write>;
@group(0) @binding(7) var vc: texture_storage_2d<rgba32uint, write>;

fn store8(is_k: bool, row: u32, c: u32, v: array<f32, 8>) {
    let t = vec4<u32>(
        pack2x16float(vec2<f32>(v[0], v[1])),
        pack2x16float(vec2<f32>(v[2], v[3])),
        pack2x16float(vec2<f32>(v[4], v[5])),
        pack2x16float(vec2<f32>(v[6], v[7])),
    );
    if (is_k) {
        textureStore(kc, vec2<u32>(c / 8u, row), t);
    } else {
        textureStore(vc, vec2<u32>(c / 8u, row), t);
    }
}
