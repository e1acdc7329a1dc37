// The input vector of a matvec in a uniform buffer (CPU-type adapters, f32, up to 64 KiB):
// every invocation reads the same x. On lavapipe a uniform load was 4x faster for the whole
// matvec set than a storage load's per-lane path with its robustness checks, though at an
// offset that depends on a loop it is still a scalar load per lane (only constant and
// push-constant offsets load once for all lanes): x_lanes.wgsl shares those loads out.
@group(0) @binding(1) var<uniform> x: array<vec4<f32>, X_VEC4S>;

fn x_at(i: u32) -> vec4<f32> {
    return x[i];
}
