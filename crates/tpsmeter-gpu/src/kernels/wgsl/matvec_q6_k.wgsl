// Q6_K repacked: per 256-element super-block 13 vec4<u32> (ql 128 bytes, qh 64 bytes,
// 16 signed 8-bit scales), d as f16 pairs. Sub-block s (32 elements) is quarter k of half n;
// its low 4 bits are nibble (k >> 1) of ql[64n + 32(k & 1) + l], its high 2 bits are bits
// 2k..2k+1 of qh[32n + l], and its scale is scales[8n + 2k + l / 16]. w = d * sc * (q - 32).

fn q6_half(ql: vec4<u32>, qh: vec4<u32>, s4: u32, s2: u32, x0: vec4<f32>, x1: vec4<f32>, x2: vec4<f32>, x3: vec4<f32>) -> f32 {
    let m4 = vec4<u32>(0x0F0F0F0Fu);
    let m2 = vec4<u32>(0x03030303u);
    let c = ((ql >> vec4<u32>(s4)) & m4) | (((qh >> vec4<u32>(s2)) & m2) << vec4<u32>(4u));
    return dot(u8x4(c.x), x0) + dot(u8x4(c.y), x1) + dot(u8x4(c.z), x2) + dot(u8x4(c.w), x3);
}

fn block_dot(row: u32, s: u32, xb: XB) -> f32 {
    let sb = row * (p.nsub / 8u) + s / 8u;
    let base = sb * 13u;
    let j = s % 8u;
    let n = j / 4u;
    let k = j % 4u;
    let d = unpack2x16float(ws_at(sb >> 1u))[sb & 1u];
    let qlb = base + 4u * n + 2u * (k & 1u);
    let qhb = base + 8u + 2u * n;
    let scw = wq_at(base + 12u);
    let si = 8u * n + 2u * k;
    let sc0 = f32(bitcast<i32>(((scw[si / 4u] >> (8u * (si % 4u))) & 255u) << 24u) >> 24u);
    let sc1 = f32(bitcast<i32>(((scw[(si + 1u) / 4u] >> (8u * ((si + 1u) % 4u))) & 255u) << 24u) >> 24u);
    let s4 = 4u * (k >> 1u);
    let s2 = 2u * k;
    let t0 = q6_half(wq_at(qlb), wq_at(qhb), s4, s2, xb.v[0], xb.v[1], xb.v[2], xb.v[3]);
    let t1 = q6_half(wq_at(qlb + 1u), wq_at(qhb + 1u), s4, s2, xb.v[4], xb.v[5], xb.v[6], xb.v[7]);
    let sum0 = dot(xb.v[0] + xb.v[1] + xb.v[2] + xb.v[3], vec4<f32>(1.0));
    let sum1 = xb.sum - sum0;
    return d * (sc0 * (t0 - 32.0 * sum0) + sc1 * (t1 - 32.0 * sum1));
}

fn decode(row: u32, s: u32) -> W32 {
    let sb = row * (p.nsub / 8u) + s / 8u;
    let base = sb * 13u;
    let j = s % 8u;
    let n = j / 4u;
    let k = j % 4u;
    let d = unpack2x16float(ws_at(sb >> 1u))[sb & 1u];
    let qlb = base + 4u * n + 2u * (k & 1u);
    let qhb = base + 8u + 2u * n;
    let scw = wq_at(base + 12u);
    let si = 8u * n + 2u * k;
    let sc0 = d * f32(bitcast<i32>(((scw[si / 4u] >> (8u * (si % 4u))) & 255u) << 24u) >> 24u);
    let sc1 = d * f32(bitcast<i32>(((scw[(si + 1u) / 4u] >> (8u * ((si + 1u) % 4u))) & 255u) << 24u) >> 24u);
    let s4 = vec4<u32>(4u * (k >> 1u));
    let s2 = vec4<u32>(2u * k);
    var w: W32;
    for (var h = 0u; h < 2u; h++) {
        let c = ((wq_at(qlb + h) >> s4) & vec4<u32>(0x0F0F0F0Fu)) | (((wq_at(qhb + h) >> s2) & vec4<u32>(0x03030303u)) << vec4<u32>(4u));
        let sc = select(sc0, sc1, h == 1u);
        for (var q = 0u; q < 4u; q++) {
            w.v[4u * h + q] = sc * (u8x4(c[q]) - 32.0);
        }
    }
    return w;
}
