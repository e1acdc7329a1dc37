// Matrix-matrix product for prefill on lavapipe (llvmpipe): two whole groups of eight tokens
// per invocation, from two uniform ranges (group z of `x` and group z of `x2`, whose outputs
// start at token p.t0 + 8 z and p.t0 + 8 (nwg.z + z)). Otherwise `main_groups` of
// matmul_cpu.wgsl, with the same sums per row in the same order (so the same values).
//
// Why two groups: each weight sub-block is fetched (a texel fetch is a call and a gather on
// llvmpipe) and unpacked once for 16 tokens instead of 8, and a 1536-wide input, whose group
// of eight fills a 64 KiB range alone, still gets 16 tokens per invocation.
//
// Its inputs come through the lanes (x_lanes.wgsl), so it is native only, and no invocation
// returns before the broadcasts.

@group(0) @binding(6) var<uniform> x2: array<vec4<f32>, X_VEC4S>;

// `load_x_lanes` over `x2`.
fn load_x2_lanes(row: u32, s: u32, lane: u32) -> XB {
    return spread(x2[row + s * 8u + (lane & 7u)]);
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
        let xa0 = load_x_lanes(base, s, lane);
        let xa1 = load_x_lanes(base + row_vec4s, s, lane);
        let xa2 = load_x_lanes(base + 2u * row_vec4s, s, lane);
        let xa3 = load_x_lanes(base + 3u * row_vec4s, s, lane);
        let xa4 = load_x_lanes(base + 4u * row_vec4s, s, lane);
        let xa5 = load_x_lanes(base + 5u * row_vec4s, s, lane);
        let xa6 = load_x_lanes(base + 6u * row_vec4s, s, lane);
        let xa7 = load_x_lanes(base + 7u * row_vec4s, s, lane);
        let xc0 = load_x2_lanes(base, s, lane);
        let xc1 = load_x2_lanes(base + row_vec4s, s, lane);
        let xc2 = load_x2_lanes(base + 2u * row_vec4s, s, lane);
        let xc3 = load_x2_lanes(base + 3u * row_vec4s, s, lane);
        let xc4 = load_x2_lanes(base + 4u * row_vec4s, s, lane);
        let xc5 = load_x2_lanes(base + 5u * row_vec4s, s, lane);
        let xc6 = load_x2_lanes(base + 6u * row_vec4s, s, lane);
        let xc7 = load_x2_lanes(base + 7u * row_vec4s, s, lane);
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
