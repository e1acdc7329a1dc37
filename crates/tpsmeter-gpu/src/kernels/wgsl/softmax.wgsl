// Softmax in place over rows of length n: x[r] = exp(x[r] - max) / sum. One workgroup per
// row with tree reductions (reduce.wgsl); the CPU-type entry runs one row per invocation
// without barriers.

struct Params {
    rows: u32,
    n: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;

@compute @workgroup_size(WG)
fn main_cpu(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let r = gid.x + gid.y * nwg.x * WG;
    if (r >= p.rows) {
        return;
    }
    let b = r * p.n;
    var m = -3.0e38;
    for (var i = 0u; i < p.n; i++) {
        m = max(m, x[b + i]);
    }
    var s = 0.0;
    for (var i = 0u; i < p.n; i++) {
        let e = exp(x[b + i] - m);
        x[b + i] = e;
        s += e;
    }
    let inv = 1.0 / s;
    for (var i = 0u; i < p.n; i++) {
        x[b + i] *= inv;
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
    let b = r * p.n;
    var m = -3.0e38;
    for (var i = lid; i < p.n; i += WG) {
        m = max(m, x[b + i]);
    }
    m = reduce_max(lid, m);
    var s = 0.0;
    for (var i = lid; i < p.n; i += WG) {
        let e = exp(x[b + i] - m);
        x[b + i] = e;
        s += e;
    }
    let inv = 1.0 / reduce_sum(lid, s);
    storageBarrier();
    for (var i = lid; i < p.n; i += WG) {
        x[b + i] *= inv;
    }
}
