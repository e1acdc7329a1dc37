// Matrix-matrix product for prefill on CPU-type adapters: y[t, r] (+)= sum_c W[r, c] x[t, c].
// Like matvec_cpu, each invocation owns ROWS whole rows and never synchronises with its
// workgroup (barriers cost 5-100x on lavapipe); it dequantizes each sub-block of its rows
// once and applies it to all TOK tokens of this dispatch, whose inputs come from a uniform
// binding (x_uniform: offsets shared by every lane load once for all of them).
// p.n_tokens: valid tokens of this dispatch (<= TOK); p.t0: index of its first token in y.

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let inv = gid.x + gid.y * nwg.x * WG;
    let r0 = inv * ROWS;
    if (r0 >= p.rows) {
        return;
    }
    var acc: array<f32, ROWS * TOK>;
    for (var s = 0u; s < p.nsub; s++) {
        for (var r = 0u; r < ROWS; r++) {
            // Clamped rather than branched: a tail invocation recomputes the last row.
            let w = decode(min(r0 + r, p.rows - 1u), s);
            for (var t = 0u; t < TOK; t++) {
                let xb = (t * p.nsub + s) * 8u;
                var d = 0.0;
                for (var k = 0u; k < 8u; k++) {
                    d += dot(w.v[k], x_at(xb + k));
                }
                acc[r * TOK + t] += d;
            }
        }
    }
    for (var r = 0u; r < ROWS; r++) {
        if (r0 + r < p.rows) {
            for (var t = 0u; t < p.n_tokens; t++) {
                let o = (p.t0 + t) * p.y_stride + p.row_offset + r0 + r;
                var v = acc[r * TOK + t];
                if (p.accumulate != 0u) {
                    v += f32(y[o]);
                }
                y[o] = act(v);
            }
        }
    }
}
