// The input vector(s) of the matrix kernels in a storage buffer (any length, f32 or f16).
@group(0) @binding(1) var<storage, read> x: array<vec4<act>>;

fn x_at(i: u32) -> vec4<f32> {
    return vec4<f32>(x[i]);
}
