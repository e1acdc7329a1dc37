// `matvec_cpu` with its inputs loaded through the lanes (x_lanes.wgsl; lavapipe, native
// only): every invocation runs to the end, past the last row too (its rows clamp to the last
// one and it writes nothing), since all lanes must reach the broadcasts.

@compute @workgroup_size(WG)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    let inv = gid.x + gid.y * nwg.x * WG;
    let r0 = inv * ROWS;
    var acc: array<f32, ROWS>;
    for (var s = 0u; s < p.nsub; s++) {
        let xb = load_x_lanes(0u, s, lane);
        for (var r = 0u; r < ROWS; r++) {
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
