// Entry for real GPUs with subgroups (native only): coalesced reads as in the shared-memory
// variant, reduced with subgroupAdd and one short pass over the per-subgroup sums.

var<workgroup> red: array<f32, WG * ROWS>;

@compute @workgroup_size(WG)
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(subgroup_size) sg_size: u32,
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
    let n_sg = (WG + sg_size - 1u) / sg_size;
    let sg = lid / sg_size;
    for (var r = 0u; r < ROWS; r++) {
        let v = subgroupAdd(acc[r]);
        if (sg_lane == 0u) {
            red[r * WG + sg] = v;
        }
    }
    workgroupBarrier();
    if (lid < ROWS && r0 + lid < p.rows) {
        var t = 0.0;
        for (var i = 0u; i < n_sg; i++) {
            t += red[lid * WG + i];
        }
        write_y(r0 + lid, t);
    }
}
