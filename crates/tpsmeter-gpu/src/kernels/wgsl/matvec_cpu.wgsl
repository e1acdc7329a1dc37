// Entry for CPU-type adapters (lavapipe, SwiftShader): each invocation owns ROWS whole rows,
// reads each row contiguously, loads every input slice once for all its rows, and never
// synchronises with its workgroup (barriers cost 5-100x there; see engine.md).

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let inv = gid.x + gid.y * nwg.x * WG;
    let r0 = inv * ROWS;
    if (r0 >= p.rows) {
        return;
    }
    var acc: array<f32, ROWS>;
    for (var s = 0u; s < p.nsub; s++) {
        let xb = load_x(s);
        for (var r = 0u; r < ROWS; r++) {
            // Clamped rather than branched: a tail invocation recomputes the last row.
            let row = min(r0 + r, p.rows - 1u);
            acc[r] += block_dot(row, s, xb);
        }
    }
    for (var r = 0u; r < ROWS; r++) {
        if (r0 + r < p.rows) {
            write_y(r0 + r, acc[r]);
        }
    }
}
