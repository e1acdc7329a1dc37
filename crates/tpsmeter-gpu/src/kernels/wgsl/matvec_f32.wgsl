// F32 weights: 8 vec4<f32> per 32-element sub-block, stored as u32 bits.

fn block_dot(row: u32, s: u32, xb: XB) -> f32 {
    let base = (row * p.nsub + s) * 8u;
    var t = 0.0;
    for (var i = 0u; i < 8u; i++) {
        t += dot(bitcast<vec4<f32>>(wq_at(base + i)), xb.v[i]);
    }
    return t;
}

fn decode(row: u32, s: u32) -> W32 {
    let base = (row * p.nsub + s) * 8u;
    var w: W32;
    for (var i = 0u; i < 8u; i++) {
        w.v[i] = bitcast<vec4<f32>>(wq_at(base + i));
    }
    return w;
}
