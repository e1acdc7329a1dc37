// Appends to a KV cache texture (row = position, one texel per 4 values; see
// kv_append_common). One invocation per texel.

@group(0) @binding(2) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(3) var cache: texture_storage_2d<rgba32float, write>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * WG;
    let w4 = p.kv_dim / 4u;
    if (i >= p.n_tokens * w4) {
        return;
    }
    let row = cache_row(i / w4);
    if (row != 0xffffffffu) {
        textureStore(cache, vec2<u32>(i % w4, row), src[i]);
    }
}
