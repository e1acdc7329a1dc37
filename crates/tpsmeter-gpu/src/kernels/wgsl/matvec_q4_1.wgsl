// Q4_1 repacked: nibbles as one vec4<u32> per block, (d, m) as one f16 pair per block.
// w = d * q + m, so W.x = d * (q.x) + m * sum(x).

fn block_dot(row: u32, s: u32, xb: XB) -> f32 {
    let blk = row * p.nsub + s;
    let q = wq_at(blk);
    let dm = unpack2x16float(ws_at(blk));
    let t = dot(lo4(q.x), xb.v[0]) + dot(lo4(q.y), xb.v[1]) + dot(lo4(q.z), xb.v[2])
        + dot(lo4(q.w), xb.v[3]) + dot(hi4(q.x), xb.v[4]) + dot(hi4(q.y), xb.v[5])
        + dot(hi4(q.z), xb.v[6]) + dot(hi4(q.w), xb.v[7]);
    return dm.x * t + dm.y * xb.sum;
}

fn decode(row: u32, s: u32) -> W32 {
    let blk = row * p.nsub + s;
    let q = wq_at(blk);
    let dm = unpack2x16float(ws_at(blk));
    var w: W32;
    for (var k = 0u; k < 4u; k++) {
        w.v[k] = dm.x * lo4(q[k]) + dm.y;
        w.v[k + 4u] = dm.x * hi4(q[k]) + dm.y;
    }
    return w;
}
