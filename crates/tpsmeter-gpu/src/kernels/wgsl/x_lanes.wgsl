// Input sub-blocks loaded by the lanes together (lavapipe, native only). llvmpipe loads a
// uniform-buffer value once for all lanes only where its offset is a constant or a push
// constant; at an offset that depends on the loop over sub-blocks it runs a scalar load and
// an insert per lane for every value, all of one address (seen in its JIT code: a quarter of
// the prefill matmul's time). Here each lane loads a different vec4 of the sub-block and
// `subgroupBroadcast` hands it to the others: one lane-varying load per 8 vec4s. The
// subgroup must hold the workgroup's first 8 lanes, and every lane must reach the
// broadcasts (no early return before them).

// The sub-block whose 8 vec4s lane l holds the l-th of (`mine`), with its sum: the same
// values as `load_x_at`, summed in the same order.
fn spread(mine: vec4<f32>) -> XB {
    var xb: XB;
    xb.v[0] = subgroupBroadcast(mine, 0u);
    xb.v[1] = subgroupBroadcast(mine, 1u);
    xb.v[2] = subgroupBroadcast(mine, 2u);
    xb.v[3] = subgroupBroadcast(mine, 3u);
    xb.v[4] = subgroupBroadcast(mine, 4u);
    xb.v[5] = subgroupBroadcast(mine, 5u);
    xb.v[6] = subgroupBroadcast(mine, 6u);
    xb.v[7] = subgroupBroadcast(mine, 7u);
    var tot = vec4<f32>(0.0);
    for (var i = 0u; i < 8u; i++) {
        tot += xb.v[i];
    }
    xb.sum = tot.x + tot.y + tot.z + tot.w;
    return xb;
}

// `load_x_at(row, s)` through the lanes.
fn load_x_lanes(row: u32, s: u32, lane: u32) -> XB {
    return spread(x_at(row + s * 8u + (lane & 7u)));
}
