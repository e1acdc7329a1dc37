// Q4_0 repacked: nibbles as one vec4<u32> per block (byte j: element j low, j+16 high),
// scales d as f16 pairs. w = d * (q - 8).

fn block_dot(row: u32, s: u32, xb: XB) -> f32 {
    let blk = row * p.nsub + s;
    let q = wq_at(blk);
    let d = unpack2x16float(ws_at(blk >> 1u))[blk & 1u];
    let t = dot(lo4(q.x), xb.v[0]) + dot(lo4(q.y), xb.v[1]) + dot(lo4(q.z), xb.v[2])
        + dot(lo4(q.w), xb.v[3]) + dot(hi4(q.x), xb.v[4]) + dot(hi4(q.y), xb.v[5])
        + dot(hi4(q.z), xb.v[6]) + dot(hi4(q.w), xb.v[7]);
    return d * (t - 8.0 * xb.sum);
}

fn decode(row: u32, s: u32) -> W32 {
    let blk = row * p.nsub + s;
    let q = wq_at(blk);
    let d = unpack2x16float(ws_at(blk >> 1u))[blk & 1u];
    var w: W32;
    for (var k = 0u; k < 4u; k++) {
        w.v[k] = d * (lo4(q[k]) - 8.0);
        w.v[k + 4u] = d * (hi4(q[k]) - 8.0);
    }
    return w;
}
