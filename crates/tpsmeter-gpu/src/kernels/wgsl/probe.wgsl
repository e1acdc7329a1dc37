// The adapter probe's kernels (see probe.rs):
//   read_contiguous: invocation i folds vec4s [i * p.chunk, (i + 1) * p.chunk) of `data`, four
//                    per iteration: the pattern CPU rasterisers (SwiftShader, lavapipe) read
//                    fastest.
//   read_strided:    invocation i folds vec4s i, i + T, i + 2T, ... (T invocations in all):
//                    coalesced, the pattern real GPUs read fastest.
//   touch:           one invocation writes one word: the unit of per-dispatch cost.
// Each invocation writes its fold to out[i], so no read can be optimised away. The fold is
// acc += (x ^ y) + (z ^ w) on u32 (wrapping): exact, and order-free, so the CPU twin
// (probe.rs, `fold_reference`) reproduces it bit for bit.

struct Params {
    // vec4s per invocation (contiguous) / total invocations T (strided)
    chunk: u32,
    // vec4s in `data`
    n: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> data: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

fn fold(v: vec4<u32>) -> u32 {
    return (v.x ^ v.y) + (v.z ^ v.w);
}

fn invocation(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

@compute @workgroup_size(WG)
fn read_contiguous(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = invocation(gid, nwg);
    let start = i * p.chunk;
    if (start >= p.n) {
        return;
    }
    let end = min(start + p.chunk, p.n);
    var acc = 0u;
    var j = start;
    for (; j + 4u <= end; j += 4u) {
        acc += fold(data[j]) + fold(data[j + 1u]) + fold(data[j + 2u]) + fold(data[j + 3u]);
    }
    for (; j < end; j++) {
        acc += fold(data[j]);
    }
    out[i] = acc;
}

@compute @workgroup_size(WG)
fn read_strided(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = invocation(gid, nwg);
    if (i >= p.chunk) {
        return;
    }
    var acc = 0u;
    for (var j = i; j < p.n; j += p.chunk) {
        acc += fold(data[j]);
    }
    out[i] = acc;
}

@compute @workgroup_size(WG)
fn touch(@builtin(global_invocation_id) gid: vec3<u32>) {
    // Binds what the read kernels bind (one layout for the module); reads `data` only when
    // p.n > 0, which the probe never sets for this entry.
    if (gid.x == 0u) {
        var extra = 0u;
        if (p.n > 0u) {
            extra = data[0].x;
        }
        out[0] = out[0] + 1u + extra;
    }
}
