// Entry for real GPUs without subgroups: a workgroup owns ROWS rows, neighbouring
// invocations read neighbouring sub-blocks (coalesced), then a tree reduction in workgroup
// memory (with a folded norm, the sum of squares rides along as one more row).

var<workgroup> red: array<f32, WG * (ROWS + 1u)>;

@compute @workgroup_size(WG)
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let o0 = (wid.x + wid.y * nwg.x) * OUTS;
    if (o0 >= p.rows) {
        return;
    }
    var acc: array<f32, ROWS>;
    var ss = 0.0;
    for (var s = lid; s < p.nsub; s += WG) {
        let xb = load_xn(s);
        ss += xb.ss;
        for (var r = 0u; r < ROWS; r++) {
            acc[r] += block_dot(w_row(o0, r), s, xb);
        }
    }
    for (var r = 0u; r < ROWS; r++) {
        red[r * WG + lid] = acc[r];
    }
    if (NORM) {
        red[ROWS * WG + lid] = ss;
    }
    workgroupBarrier();
    for (var st = WG / 2u; st > 0u; st >>= 1u) {
        if (lid < st) {
            for (var r = 0u; r < ROWS; r++) {
                red[r * WG + lid] += red[r * WG + lid + st];
            }
            if (NORM) {
                red[ROWS * WG + lid] += red[ROWS * WG + lid + st];
            }
        }
        workgroupBarrier();
    }
    if (lid < OUTS && o0 + lid < p.rows) {
        let k = norm_scale(red[ROWS * WG]);
        emit(o0 + lid, red[lid * WG] * k, red[min(lid + OUTS, ROWS - 1u) * WG] * k);
    }
}
