// Entry for CPU-type adapters (lavapipe, SwiftShader): each invocation owns ROWS whole rows,
// reads each row contiguously, loads every input slice once for all its rows, and never
// synchronises with its workgroup (barriers cost 5-100x there). The input may
// carry a folded RMSNorm and the outputs a gated unit (matvec_common's epilogues).

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let inv = gid.x + gid.y * nwg.x * WG;
    let o0 = inv * OUTS;
    if (o0 >= p.rows) {
        return;
    }
    var acc: array<f32, ROWS>;
    var ss = 0.0;
    for (var s = 0u; s < p.nsub; s++) {
        let xb = load_xn(s);
        ss += xb.ss;
        for (var r = 0u; r < ROWS; r++) {
            acc[r] += block_dot(w_row(o0, r), s, xb);
        }
    }
    let k = norm_scale(ss);
    for (var r = 0u; r < OUTS; r++) {
        if (o0 + r < p.rows) {
            emit(o0 + r, acc[r] * k, acc[min(r + OUTS, ROWS - 1u)] * k);
        }
    }
}
