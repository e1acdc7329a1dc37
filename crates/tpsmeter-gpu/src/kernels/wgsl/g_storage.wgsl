// The folded norm's weight (f32, any length) in a storage buffer.
@group(0) @binding(7) var<storage, read> g: array<vec4<f32>>;

fn g_at(i: u32) -> vec4<f32> {
    return g[i];
}
