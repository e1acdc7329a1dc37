// Appends to an f16 KV cache texture (row = position, 8 values per rgba32uint texel as
// pack2x16float pairs; see kv_texture_f16.wgsl and kv_append_common). One invocation per
// texel.

@group(0) @binding(2) var<storage, read> src: array<vec4<act>>;
@group(0) @binding(3) var cache: texture_storage_2d<rgba32uint, write>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * WG;
    let w8 = p.kv_dim / 8u;
    if (i >= p.n_tokens * w8) {
        return;
    }
    let row = cache_row(i / w8);
    if (row != 0xffffffffu) {
        let a = vec4<f32>(src[2u * i]);
        let b = vec4<f32>(src[2u * i + 1u]);
        let t = vec4<u32>(
            pack2x16float(a.xy),
            pack2x16float(a.zw),
            pack2x16float(b.xy),
            pack2x16float(b.zw),
        );
        textureStore(cache, vec2<u32>(i % w8, row), t);
    }
}
