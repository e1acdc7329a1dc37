// Q8_0 repacked: 32 signed bytes as two vec4<u32> per block, scales d as f16 pairs.

fn block_dot(row: u32, s: u32, xb: XB) -> f32 {
    let blk = row * p.nsub + s;
    let a = wq_at(2u * blk);
    let b = wq_at(2u * blk + 1u);
    let d = unpack2x16float(ws_at(blk >> 1u))[blk & 1u];
    let t = dot(i8x4(a.x), xb.v[0]) + dot(i8x4(a.y), xb.v[1]) + dot(i8x4(a.z), xb.v[2])
        + dot(i8x4(a.w), xb.v[3]) + dot(i8x4(b.x), xb.v[4]) + dot(i8x4(b.y), xb.v[5])
        + dot(i8x4(b.z), xb.v[6]) + dot(i8x4(b.w), xb.v[7]);
    return d * t;
}

fn decode(row: u32, s: u32) -> W32 {
    let blk = row * p.nsub + s;
    let a = wq_at(2u * blk);
    let b = wq_at(2u * blk + 1u);
    let d = unpack2x16float(ws_at(blk >> 1u))[blk & 1u];
    var w: W32;
    for (var k = 0u; k < 4u; k++) {
        w.v[k] = d * i8x4(a[k]);
        w.v[k + 4u] = d * i8x4(b[k]);
    }
    return w;
}
