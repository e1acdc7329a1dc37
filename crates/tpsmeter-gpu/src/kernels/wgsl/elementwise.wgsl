// Elementwise ops over n values, ROWS consecutive values per invocation (contiguous per
// invocation suits CPU-type adapters and costs GPUs little at these sizes).
//   add:      b[i] += a[i]                     (residual add, in place)
//   swiglu:   out[i] = silu(a[i]) * b[i]       (a = gate, b = up)
//   gelu_glu: out[i] = gelu_tanh(a[i]) * b[i]
// The gated units read gate and up either from two buffers (width 0) or from one row of
// 2 * width values per token, gate first (the fused gate/up matmul's output).

struct Params {
    n: u32,
    width: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<act>;
@group(0) @binding(2) var<storage, read_write> b: array<act>;
@group(0) @binding(3) var<storage, read> up: array<act>;
@group(0) @binding(4) var<storage, read_write> out: array<act>;

fn first(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return (gid.x + gid.y * nwg.x * WG) * ROWS;
}

@compute @workgroup_size(WG)
fn add(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i0 = first(gid, nwg);
    for (var i = i0; i < min(i0 + ROWS, p.n); i++) {
        b[i] = act(f32(b[i]) + f32(a[i]));
    }
}

// Where output i's gate and up values are.
fn gate_at(i: u32) -> u32 {
    if (p.width == 0u) {
        return i;
    }
    return (i / p.width) * 2u * p.width + i % p.width;
}
fn up_at(i: u32) -> u32 {
    return gate_at(i) + p.width;
}

fn silu(v: f32) -> f32 {
    return v / (1.0 + exp(-v));
}

fn gelu_tanh(v: f32) -> f32 {
    // tanh of a large argument overflows exp in some implementations; tanh(10) is 1 in f32.
    let t = clamp(0.7978845608028654 * (v + 0.044715 * v * v * v), -10.0, 10.0);
    return 0.5 * v * (1.0 + tanh(t));
}

@compute @workgroup_size(WG)
fn swiglu(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i0 = first(gid, nwg);
    for (var i = i0; i < min(i0 + ROWS, p.n); i++) {
        out[i] = act(silu(f32(a[gate_at(i)])) * f32(up[up_at(i)]));
    }
}

@compute @workgroup_size(WG)
fn gelu_glu(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i0 = first(gid, nwg);
    for (var i = i0; i < min(i0 + ROWS, p.n); i++) {
        out[i] = act(gelu_tanh(f32(a[gate_at(i)])) * f32(up[up_at(i)]));
    }
}
