// The input vector of a matvec in a uniform buffer (CPU-type adapters, f32, up to 64 KiB):
// every invocation reads the same x, and lavapipe loads uniform-buffer values at a
// dynamically uniform offset once for all lanes, where a storage load takes its slow
// per-lane path (4x slower for the whole matvec set).
@group(0) @binding(1) var<uniform> x: array<vec4<f32>, X_VEC4S>;

fn x_at(i: u32) -> vec4<f32> {
    return x[i];
}
