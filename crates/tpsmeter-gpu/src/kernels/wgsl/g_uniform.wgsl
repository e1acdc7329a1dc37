// The folded norm's weight as a uniform array beside a uniform input (CPU-type adapters load
// uniform values cheaper than storage ones: see x_uniform.wgsl).
@group(0) @binding(7) var<uniform> g: array<vec4<f32>, X_VEC4S>;

fn g_at(i: u32) -> vec4<f32> {
    return g[i];
}
