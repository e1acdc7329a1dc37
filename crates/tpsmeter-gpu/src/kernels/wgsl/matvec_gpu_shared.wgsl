// Entry for real GPUs without subgroups: a workgroup owns ROWS rows, neighbouring
// invocations read neighbouring sub-blocks (coalesced), then a tree reduction in workgroup
// memory.

var<workgroup> red: array<f32, WG * ROWS>;

@compute @workgroup_size(WG)
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let r0 = (wid.x + wid.y * nwg.x) * ROWS;
    if (r0 >= p.rows) {
        return;
    }
    var acc: array<f32, ROWS>;
    for (var s = lid; s < p.nsub; s += WG) {
        let xb = load_x(s);
        for (var r = 0u; r < ROWS; r++) {
            acc[r] += block_dot(min(r0 + r, p.rows - 1u), s, xb);
        }
    }
    for (var r = 0u; r < ROWS; r++) {
        red[r * WG + lid] = acc[r];
    }
    workgroupBarrier();
    for (var st = WG / 2u; st > 0u; st >>= 1u) {
        if (lid < st) {
            for (var r = 0u; r < ROWS; r++) {
                red[r * WG + lid] += red[r * WG + lid + st];
            }
        }
        workgroupBarrier();
    }
    if (lid < ROWS && r0 + lid < p.rows) {
        write_y(r0 + lid, red[lid * WG]);
    }
}
