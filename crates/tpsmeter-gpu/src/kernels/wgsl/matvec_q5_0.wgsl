// Q5_0 repacked: low nibbles as one vec4<u32> per block, the 32 high bits as one u32,
// scales d as f16 pairs. w = d * ((nibble | high << 4) - 16).

// High bits k..k+3 of qh, each moved to bit 4 of its byte: adds 16 to the matching nibble.
fn hb4(qh: u32, k: u32) -> vec4<f32> {
    let b = vec4<u32>(qh >> k, qh >> (k + 1u), qh >> (k + 2u), qh >> (k + 3u)) & vec4<u32>(1u);
    return vec4<f32>(b * 16u);
}

fn block_dot(row: u32, s: u32, xb: XB) -> f32 {
    let blk = row * p.nsub + s;
    let q = wq_at(blk);
    let qh = wa_at(blk);
    let d = unpack2x16float(ws_at(blk >> 1u))[blk & 1u];
    let t = dot(lo4(q.x) + hb4(qh, 0u), xb.v[0]) + dot(lo4(q.y) + hb4(qh, 4u), xb.v[1])
        + dot(lo4(q.z) + hb4(qh, 8u), xb.v[2]) + dot(lo4(q.w) + hb4(qh, 12u), xb.v[3])
        + dot(hi4(q.x) + hb4(qh, 16u), xb.v[4]) + dot(hi4(q.y) + hb4(qh, 20u), xb.v[5])
        + dot(hi4(q.z) + hb4(qh, 24u), xb.v[6]) + dot(hi4(q.w) + hb4(qh, 28u), xb.v[7]);
    return d * (t - 16.0 * xb.sum);
}

fn decode(row: u32, s: u32) -> W32 {
    let blk = row * p.nsub + s;
    let q = wq_at(blk);
    let qh = wa_at(blk);
    let d = unpack2x16float(ws_at(blk >> 1u))[blk & 1u];
    var w: W32;
    for (var k = 0u; k < 4u; k++) {
        w.v[k] = d * (lo4(q[k]) + hb4(qh, 4u * k) - 16.0);
        w.v[k + 4u] = d * (hi4(q[k]) + hb4(qh, 16u + 4u * k) - 16.0);
    }
    return w;
}
