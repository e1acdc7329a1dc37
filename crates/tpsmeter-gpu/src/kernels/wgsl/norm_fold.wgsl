// An RMSNorm folded into the matvec that consumes it: y = W (x / rms(x) * g). The scale
// 1 / rms(x) is one number per input vector, so it factors out of every dot product:
// y_r = (sum_i W_ri x_i g_i) / rms(x). Each unit therefore multiplies the input by the norm's
// weight g as it loads it, sums the squares of the raw values on the way (they are loaded
// anyway), and scales its sums once at the end: the norm costs no dispatch, no pass over
// memory and no barrier. `g_at` comes from g_uniform or g_storage.

fn load_xn(s: u32) -> XB {
    var xb: XB;
    var tot = vec4<f32>(0.0);
    var sq = vec4<f32>(0.0);
    let base = s * 8u;
    for (var i = 0u; i < 8u; i++) {
        let raw = x_at(base + i);
        sq += raw * raw;
        let v = raw * g_at(base + i);
        xb.v[i] = v;
        tot += v;
    }
    xb.sum = tot.x + tot.y + tot.z + tot.w;
    xb.ss = sq.x + sq.y + sq.z + sq.w;
    return xb;
}

// Vec4 i of the input with the norm's weight applied (the lanes loader's share).
fn norm_lane(i: u32, v: vec4<f32>) -> vec4<f32> {
    return v * g_at(i);
}

// 1 / rms from the sum of squares of all nsub * 32 input values (as rms_norm.wgsl).
fn norm_scale(ss: f32) -> f32 {
    return inverseSqrt(ss / f32(p.nsub * 32u) + p.eps);
}
