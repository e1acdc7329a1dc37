// F16 weights: 4 vec4<u32> (8 halves each) per 32-element sub-block.

fn block_dot(row: u32, s: u32, xb: XB) -> f32 {
    let base = (row * p.nsub + s) * 4u;
    var t = 0.0;
    for (var i = 0u; i < 4u; i++) {
        let q = wq_at(base + i);
        t += dot(vec4<f32>(unpack2x16float(q.x), unpack2x16float(q.y)), xb.v[2u * i]);
        t += dot(vec4<f32>(unpack2x16float(q.z), unpack2x16float(q.w)), xb.v[2u * i + 1u]);
    }
    return t;
}

fn decode(row: u32, s: u32) -> W32 {
    let base = (row * p.nsub + s) * 4u;
    var w: W32;
    for (var i = 0u; i < 4u; i++) {
        let q = wq_at(base + i);
        w.v[2u * i] = vec4<f32>(unpack2x16float(q.x), unpack2x16float(q.y));
        w.v[2u * i + 1u] = vec4<f32>(unpack2x16float(q.z), unpack2x16float(q.w));
    }
    return w;
}
