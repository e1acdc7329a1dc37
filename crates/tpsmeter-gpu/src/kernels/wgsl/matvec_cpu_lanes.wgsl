// `matvec_cpu` with its inputs loaded through the lanes (x_lanes.wgsl; lavapipe, native
// only): every invocation runs to the end, past the last row too (its rows clamp to the last
// one and it writes nothing), since all lanes must reach the broadcasts.

// The sum over the 8 lanes that share out a sub-block of each one's value.
// (The lane of a broadcast must be a constant.)
fn lanes_sum(v: f32) -> f32 {
    return subgroupBroadcast(v, 0u) + subgroupBroadcast(v, 1u) + subgroupBroadcast(v, 2u)
        + subgroupBroadcast(v, 3u) + subgroupBroadcast(v, 4u) + subgroupBroadcast(v, 5u)
        + subgroupBroadcast(v, 6u) + subgroupBroadcast(v, 7u);
}

@compute @workgroup_size(WG)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    let inv = gid.x + gid.y * nwg.x * WG;
    let o0 = inv * OUTS;
    var acc: array<f32, ROWS>;
    var ss = 0.0;
    for (var s = 0u; s < p.nsub; s++) {
        let i = s * 8u + (lane & 7u);
        let raw = x_at(i);
        let xb = spread(norm_lane(i, raw));
        if (NORM) {
            ss += lanes_sum(dot(raw, raw));
        }
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
