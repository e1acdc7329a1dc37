// Matrix-matrix product for prefill on CPU-type adapters: y[t, r] (+)= sum_c W[r, c] x[t, c].
// Like matvec_cpu, each invocation owns ROWS whole rows and never synchronises with its
// workgroup (barriers cost 5-100x on lavapipe), and it uses the format's block_dot (weights
// read and unpacked straight into the dot product, never stored as 32 floats): software
// rasterisers keep such a 32-float array in memory, which made a decode-then-dot kernel
// slower per token than matvec_cpu. The 4 tokens of a dispatch share each sub-block's
// inputs across the invocation's rows and each weight fetch; their inputs come from a
// uniform binding (x_uniform.wgsl). On lavapipe, whole pairs of groups of 8 go to
// matmul_cpu_pairs.wgsl instead.
// p.n_tokens: valid tokens of this dispatch (<= 4); p.t0: index of its first token in y.

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let inv = gid.x + gid.y * nwg.x * WG;
    let r0 = inv * ROWS;
    if (r0 >= p.rows) {
        return;
    }
    // Slots past the dispatch's last token read that token again (their sums are dropped),
    // so every load stays inside the uniform range.
    let last = p.n_tokens - 1u;
    let row_vec4s = p.nsub * 8u;
    let x1 = min(1u, last) * row_vec4s;
    let x2 = min(2u, last) * row_vec4s;
    let x3 = min(3u, last) * row_vec4s;
    var acc: array<vec4<f32>, ROWS>;
    for (var s = 0u; s < p.nsub; s++) {
        let xb0 = load_x_at(0u, s);
        let xb1 = load_x_at(x1, s);
        let xb2 = load_x_at(x2, s);
        let xb3 = load_x_at(x3, s);
        for (var r = 0u; r < ROWS; r++) {
            // Clamped rather than branched: a tail invocation recomputes the last row.
            let row = min(r0 + r, p.rows - 1u);
            acc[r] += vec4<f32>(block_dot(row, s, xb0), block_dot(row, s, xb1), block_dot(row, s, xb2), block_dot(row, s, xb3));
        }
    }
    for (var r = 0u; r < ROWS; r++) {
        if (r0 + r < p.rows) {
            for (var t = 0u; t < p.n_tokens; t++) {
                let o = (p.t0 + t) * p.y_stride + p.row_offset + r0 + r;
                var v = acc[r][t];
                if (p.accumulate != 0u) {
                    v += f32(y[o]);
                }
                y[o] = act(v);
            }
        }
    }
}

// Eight token slots (groups of 5 to 8 tokens): each weight sub-block is fetched once for
// all eight, halving the passes over the weights that `main` makes for a long prompt. The
// dots stay separate calls: lavapipe's LLVM shares their weight unpack once inlined, and a
// fused call taking the inputs by value made SwiftShader copy them through memory.
@compute @workgroup_size(WG)
fn main8(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let inv = gid.x + gid.y * nwg.x * WG;
    let r0 = inv * ROWS;
    if (r0 >= p.rows) {
        return;
    }
    let last = p.n_tokens - 1u;
    let row_vec4s = p.nsub * 8u;
    var acc_a: array<vec4<f32>, ROWS>;
    var acc_b: array<vec4<f32>, ROWS>;
    for (var s = 0u; s < p.nsub; s++) {
        let xb0 = load_x_at(0u, s);
        let xb1 = load_x_at(row_vec4s, s);
        let xb2 = load_x_at(2u * row_vec4s, s);
        let xb3 = load_x_at(3u * row_vec4s, s);
        let xb4 = load_x_at(4u * row_vec4s, s);
        let xb5 = load_x_at(min(5u, last) * row_vec4s, s);
        let xb6 = load_x_at(min(6u, last) * row_vec4s, s);
        let xb7 = load_x_at(min(7u, last) * row_vec4s, s);
        for (var r = 0u; r < ROWS; r++) {
            let row = min(r0 + r, p.rows - 1u);
            acc_a[r] += vec4<f32>(block_dot(row, s, xb0), block_dot(row, s, xb1), block_dot(row, s, xb2), block_dot(row, s, xb3));
            acc_b[r] += vec4<f32>(block_dot(row, s, xb4), block_dot(row, s, xb5), block_dot(row, s, xb6), block_dot(row, s, xb7));
        }
    }
    for (var r = 0u; r < ROWS; r++) {
        if (r0 + r < p.rows) {
            for (var t = 0u; t < p.n_tokens; t++) {
                let o = (p.t0 + t) * p.y_stride + p.row_offset + r0 + r;
                var v = select(acc_b[r][t & 3u], acc_a[r][t & 3u], t < 4u);
                if (p.accumulate != 0u) {
                    v += f32(y[o]);
                }
                y[o] = act(v);
            }
        }
    }
}

// Two token slots (groups of 1 or 2 tokens: a batched decode step of two sequences, or a
// prompt chunk's tail): `main` would compute four dots per row and sub-block, two of them
// for nothing (a two-sequence step cost as much as four).
@compute @workgroup_size(WG)
fn main2(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let inv = gid.x + gid.y * nwg.x * WG;
    let r0 = inv * ROWS;
    if (r0 >= p.rows) {
        return;
    }
    let last = p.n_tokens - 1u;
    let x1 = min(1u, last) * p.nsub * 8u;
    var acc: array<vec2<f32>, ROWS>;
    for (var s = 0u; s < p.nsub; s++) {
        let xb0 = load_x_at(0u, s);
        let xb1 = load_x_at(x1, s);
        for (var r = 0u; r < ROWS; r++) {
            let row = min(r0 + r, p.rows - 1u);
            acc[r] += vec2<f32>(block_dot(row, s, xb0), block_dot(row, s, xb1));
        }
    }
    for (var r = 0u; r < ROWS; r++) {
        if (r0 + r < p.rows) {
            for (var t = 0u; t < p.n_tokens; t++) {
                let o = (p.t0 + t) * p.y_stride + p.row_offset + r0 + r;
                var v = acc[r][t];
                if (p.accumulate != 0u) {
                    v += f32(y[o]);
                }
                y[o] = act(v);
            }
        }
    }
}

// Several whole groups of eight tokens in one dispatch, all in the one uniform range `x`
// (as many as fit its 64 KiB): workgroup z = group, whose inputs start at token 8 z of the
// range and whose outputs at token p.t0 + 8 z. Otherwise `main8` with every slot valid.
// One dispatch instead of one per group: lavapipe runs each dispatch to completion before
// the next at a fixed cost, and a small matrix split into groups left a thread idle.
@compute @workgroup_size(WG)
fn main_groups(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let inv = gid.x + gid.y * nwg.x * WG;
    let r0 = inv * ROWS;
    if (r0 >= p.rows) {
        return;
    }
    let g = wid.z;
    let row_vec4s = p.nsub * 8u;
    let base = g * 8u * row_vec4s;
    var acc_a: array<vec4<f32>, ROWS>;
    var acc_b: array<vec4<f32>, ROWS>;
    for (var s = 0u; s < p.nsub; s++) {
        let xb0 = load_x_at(base, s);
        let xb1 = load_x_at(base + row_vec4s, s);
        let xb2 = load_x_at(base + 2u * row_vec4s, s);
        let xb3 = load_x_at(base + 3u * row_vec4s, s);
        let xb4 = load_x_at(base + 4u * row_vec4s, s);
        let xb5 = load_x_at(base + 5u * row_vec4s, s);
        let xb6 = load_x_at(base + 6u * row_vec4s, s);
        let xb7 = load_x_at(base + 7u * row_vec4s, s);
        for (var r = 0u; r < ROWS; r++) {
            let row = min(r0 + r, p.rows - 1u);
            acc_a[r] += vec4<f32>(block_dot(row, s, xb0), block_dot(row, s, xb1), block_dot(row, s, xb2), block_dot(row, s, xb3));
            acc_b[r] += vec4<f32>(block_dot(row, s, xb4), block_dot(row, s, xb5), block_dot(row, s, xb6), block_dot(row, s, xb7));
        }
    }
    let t0 = p.t0 + g * 8u;
    for (var r = 0u; r < ROWS; r++) {
        if (r0 + r < p.rows) {
            for (var t = 0u; t < 8u; t++) {
                let o = (t0 + t) * p.y_stride + p.row_offset + r0 + r;
                var v = select(acc_b[r][t & 3u], acc_a[r][t & 3u], t < 4u);
                if (p.accumulate != 0u) {
                    v += f32(y[o]);
                }
                y[o] = act(v);
            }
        }
    }
}
