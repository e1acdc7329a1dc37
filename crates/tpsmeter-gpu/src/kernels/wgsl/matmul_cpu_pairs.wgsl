// Matrix-matrix product for prefill on lavapipe (llvmpipe): two whole groups of eight tokens
// per invocation, from two uniform ranges (group z of `x` and group z of `x2`, whose outputs
// start at token p.t0 + 8 z and p.t0 + 8 (nwg.z + z)). Otherwise `main_groups` of
// matmul_cpu.wgsl, with the same sums per row in the same order (so the same values).
//
// Why two groups: each weight sub-block is fetched (a texel fetch is a call and a gather on
// llvmpipe) and unpacked once for 16 tokens instead of 8, and a 1536-wide input, whose group
// of eight fills a 64 KiB range alone, still gets 16 tokens per invocation.
//
// Why subgroups: llvmpipe loads a uniform-buffer value once for all lanes only where the
// offset is a constant or a push constant; at an offset that depends on the loop over
// sub-blocks it runs one scalar load per lane (8 loads and inserts per value, all of one
// address). Here each lane loads a different vec4 of the sub-block and `subgroupBroadcast`
// hands it to the others: one lane-varying load per 8 vec4s. Native only (wgpu has no
// subgroups on the web), and the subgroup must hold the workgroup's 8 lanes, so no
// invocation returns before the broadcasts.

@group(0) @binding(6) var<uniform> x2: array<vec4<f32>, X_VEC4S>;

// Sub-block `s` of the token whose inputs start at vec4 `row` of `x` (or of `x2`), as
// `load_x_at` gives it: the same values, summed in the same order.
fn load_x_lanes(row: u32, s: u32, lane: u32, second: bool) -> XB {
    var mine: vec4<f32>;
    if (second) {
        mine = x2[row + s * 8u + (lane & 7u)];
    } else {
        mine = x[row + s * 8u + (lane & 7u)];
    }
    var xb: XB;
    xb.v[0] = subgroupBroadcast(mine, 0u);
    xb.v[1] = subgroupBroadcast(mine, 1u);
    xb.v[2] = subgroupBroadcast(mine, 2u);
    xb.v[3] = subgroupBroadcast(mine, 3u);
    xb.v[4] = subgroupBroadcast(mine, 4u);
    xb.v[5] = subgroupBroadcast(mine, 5u);
    xb.v[6] = subgroupBroadcast(mine, 6u);
    xb.v[7] = subgroupBroadcast(mine, 7u);
    var tot = vec4<f32>(0.0);
    for (var i = 0u; i < 8u; i++) {
        tot += xb.v[i];
    }
    xb.sum = tot.x + tot.y + tot.z + tot.w;
    return xb;
}

// Writes one output of a matmul row: adds the residual when asked, applies the activation.
fn put(o: u32, v: f32) {
    var r = v;
    if (p.accumulate != 0u) {
        r += f32(y[o]);
    }
    y[o] = act(r);
}

@compute @workgroup_size(WG)
fn main_pairs(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    let inv = gid.x + gid.y * nwg.x * WG;
    let r0 = inv * ROWS;
    let g = wid.z;
    let row_vec4s = p.nsub * 8u;
    let base = g * 8u * row_vec4s;
    var acc_a: array<vec4<f32>, ROWS>;
    var acc_b: array<vec4<f32>, ROWS>;
    var acc_c: array<vec4<f32>, ROWS>;
    var acc_d: array<vec4<f32>, ROWS>;
    for (var s = 0u; s < p.nsub; s++) {
        let xa0 = load_x_lanes(base, s, lane, false);
        let xa1 = load_x_lanes(base + row_vec4s, s, lane, false);
        let xa2 = load_x_lanes(base + 2u * row_vec4s, s, lane, false);
        let xa3 = load_x_lanes(base + 3u * row_vec4s, s, lane, false);
        let xa4 = load_x_lanes(base + 4u * row_vec4s, s, lane, false);
        let xa5 = load_x_lanes(base + 5u * row_vec4s, s, lane, false);
        let xa6 = load_x_lanes(base + 6u * row_vec4s, s, lane, false);
        let xa7 = load_x_lanes(base + 7u * row_vec4s, s, lane, false);
        let xc0 = load_x_lanes(base, s, lane, true);
        let xc1 = load_x_lanes(base + row_vec4s, s, lane, true);
        let xc2 = load_x_lanes(base + 2u * row_vec4s, s, lane, true);
        let xc3 = load_x_lanes(base + 3u * row_vec4s, s, lane, true);
        let xc4 = load_x_lanes(base + 4u * row_vec4s, s, lane, true);
        let xc5 = load_x_lanes(base + 5u * row_vec4s, s, lane, true);
        let xc6 = load_x_lanes(base + 6u * row_vec4s, s, lane, true);
        let xc7 = load_x_lanes(base + 7u * row_vec4s, s, lane, true);
        for (var r = 0u; r < ROWS; r++) {
            // Clamped rather than branched: lanes past the last row recompute it.
            let row = min(r0 + r, p.rows - 1u);
            acc_a[r] += vec4<f32>(block_dot(row, s, xa0), block_dot(row, s, xa1), block_dot(row, s, xa2), block_dot(row, s, xa3));
            acc_b[r] += vec4<f32>(block_dot(row, s, xa4), block_dot(row, s, xa5), block_dot(row, s, xa6), block_dot(row, s, xa7));
            acc_c[r] += vec4<f32>(block_dot(row, s, xc0), block_dot(row, s, xc1), block_dot(row, s, xc2), block_dot(row, s, xc3));
            acc_d[r] += vec4<f32>(block_dot(row, s, xc4), block_dot(row, s, xc5), block_dot(row, s, xc6), block_dot(row, s, xc7));
        }
    }
    let ta = p.t0 + g * 8u;
    let tc = p.t0 + (nwg.z + g) * 8u;
    for (var r = 0u; r < ROWS; r++) {
        if (r0 + r < p.rows) {
            let col = p.row_offset + r0 + r;
            for (var t = 0u; t < 4u; t++) {
                put((ta + t) * p.y_stride + col, acc_a[r][t]);
                put((ta + 4u + t) * p.y_stride + col, acc_b[r][t]);
                put((tc + t) * p.y_stride + col, acc_c[r][t]);
                put((tc + 4u + t) * p.y_stride + col, acc_d[r][t]);
            }
        }
    }
}
