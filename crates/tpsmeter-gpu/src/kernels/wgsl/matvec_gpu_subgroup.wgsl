// Entry for real GPUs with subgroups (native only): coalesced reads as in the shared-memory
// variant, reduced with subgroupAdd and one short pass over the per-subgroup sums (with a
// folded norm, the sum of squares rides along as one more row).

var<workgroup> red: array<f32, WG * (ROWS + 1u)>;

@compute @workgroup_size(WG)
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(subgroup_size) sg_size: u32,
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
    let n_sg = (WG + sg_size - 1u) / sg_size;
    let sg = lid / sg_size;
    for (var r = 0u; r < ROWS; r++) {
        let v = subgroupAdd(acc[r]);
        if (sg_lane == 0u) {
            red[r * WG + sg] = v;
        }
    }
    if (NORM) {
        let v = subgroupAdd(ss);
        if (sg_lane == 0u) {
            red[ROWS * WG + sg] = v;
        }
    }
    workgroupBarrier();
    if (lid < OUTS && o0 + lid < p.rows) {
        var t: array<f32, ROWS + 1u>;
        for (var r = 0u; r <= ROWS; r++) {
            for (var i = 0u; i < n_sg; i++) {
                t[r] += red[r * WG + i];
            }
        }
        let k = norm_scale(t[ROWS]);
        emit(o0 + lid, t[lid] * k, t[min(lid + OUTS, ROWS - 1u)] * k);
    }
}
