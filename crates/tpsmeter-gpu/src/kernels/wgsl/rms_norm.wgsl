// RMSNorm over rows: y[r, i] = x[r, i] / sqrt(mean(x[r]^2) + eps) * w[i].
// main_cpu: one invocation per row, no barriers (CPU-type adapters).
// main_gpu: one workgroup per row, tree reduction in workgroup memory (reduce.wgsl).

struct Params {
    rows: u32,
    dim: u32,
    eps: f32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<act>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<act>;

@compute @workgroup_size(WG)
fn main_cpu(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let r = gid.x + gid.y * nwg.x * WG;
    if (r >= p.rows) {
        return;
    }
    let base = r * p.dim;
    var ss = 0.0;
    for (var i = 0u; i < p.dim; i++) {
        let v = f32(x[base + i]);
        ss += v * v;
    }
    let inv = inverseSqrt(ss / f32(p.dim) + p.eps);
    for (var i = 0u; i < p.dim; i++) {
        y[base + i] = act(f32(x[base + i]) * inv * w[i]);
    }
}

@compute @workgroup_size(WG)
fn main_gpu(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let r = wid.x + wid.y * nwg.x;
    if (r >= p.rows) {
        return;
    }
    let base = r * p.dim;
    var ss = 0.0;
    for (var i = lid; i < p.dim; i += WG) {
        let v = f32(x[base + i]);
        ss += v * v;
    }
    let inv = inverseSqrt(reduce_sum(lid, ss) / f32(p.dim) + p.eps);
    for (var i = lid; i < p.dim; i += WG) {
        y[base + i] = act(f32(x[base + i]) * inv * w[i]);
    }
}
