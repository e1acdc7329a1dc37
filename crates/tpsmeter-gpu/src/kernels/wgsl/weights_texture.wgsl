// Weights in 2D textures of TEX_W texels per row (CPU-type adapters): element i of a flat
// array lives at texel (i % TEX_W, i / TEX_W). On lavapipe a texel fetch compiles to a
// vector gather while a storage-buffer load with per-invocation addresses runs a scalar loop
// over lanes; the same bytes stream 5-7x faster this way (docs/performance.md, "Weights as
// textures").
@group(0) @binding(2) var wq: texture_2d<u32>;
@group(0) @binding(3) var ws: texture_2d<u32>;
@group(0) @binding(5) var wa: texture_2d<u32>;

fn texel(i: u32) -> vec2<u32> {
    return vec2<u32>(i & (TEX_W - 1u), i >> TEX_SHIFT);
}
fn wq_at(i: u32) -> vec4<u32> {
    return textureLoad(wq, texel(i), 0);
}
fn ws_at(i: u32) -> u32 {
    return textureLoad(ws, texel(i), 0).x;
}
fn wa_at(i: u32) -> u32 {
    return textureLoad(wa, texel(i), 0).x;
}
