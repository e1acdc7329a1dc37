// Q4_K as stored: 144-byte super-blocks of 256 = 9 vec4<u32>: (d, dmin) f16 pair, 12 bytes
// of packed 6-bit scales and mins, then 128 bytes of nibbles (64-element chunks: 32 bytes,
// low nibbles first half, high nibbles second half). w = d * sc * q - dmin * m.

fn sbyte(h: vec4<u32>, k: u32) -> u32 {
    // Scale bytes live in h.y, h.z, h.w.
    return (h[1u + k / 4u] >> (8u * (k % 4u))) & 255u;
}

fn block_dot(row: u32, s: u32, xb: XB) -> f32 {
    let nsuper = p.nsub / 8u;
    let base = (row * nsuper + s / 8u) * 9u;
    let j = s % 8u;
    let h = wq_at(base);
    let dd = unpack2x16float(h.x);
    var sc: u32;
    var mn: u32;
    if (j < 4u) {
        sc = sbyte(h, j) & 63u;
        mn = sbyte(h, j + 4u) & 63u;
    } else {
        sc = (sbyte(h, j + 4u) & 15u) | ((sbyte(h, j - 4u) >> 6u) << 4u);
        mn = (sbyte(h, j + 4u) >> 4u) | ((sbyte(h, j) >> 6u) << 4u);
    }
    let a = wq_at(base + 1u + 2u * (j / 2u));
    let b = wq_at(base + 2u + 2u * (j / 2u));
    var t: f32;
    if ((j & 1u) == 0u) {
        t = dot(lo4(a.x), xb.v[0]) + dot(lo4(a.y), xb.v[1]) + dot(lo4(a.z), xb.v[2])
            + dot(lo4(a.w), xb.v[3]) + dot(lo4(b.x), xb.v[4]) + dot(lo4(b.y), xb.v[5])
            + dot(lo4(b.z), xb.v[6]) + dot(lo4(b.w), xb.v[7]);
    } else {
        t = dot(hi4(a.x), xb.v[0]) + dot(hi4(a.y), xb.v[1]) + dot(hi4(a.z), xb.v[2])
            + dot(hi4(a.w), xb.v[3]) + dot(hi4(b.x), xb.v[4]) + dot(hi4(b.y), xb.v[5])
            + dot(hi4(b.z), xb.v[6]) + dot(hi4(b.w), xb.v[7]);
    }
    return dd.x * f32(sc) * t - dd.y * f32(mn) * xb.sum;
}

fn decode(row: u32, s: u32) -> W32 {
    let nsuper = p.nsub / 8u;
    let base = (row * nsuper + s / 8u) * 9u;
    let j = s % 8u;
    let h = wq_at(base);
    let dd = unpack2x16float(h.x);
    var sc: u32;
    var mn: u32;
    if (j < 4u) {
        sc = sbyte(h, j) & 63u;
        mn = sbyte(h, j + 4u) & 63u;
    } else {
        sc = (sbyte(h, j + 4u) & 15u) | ((sbyte(h, j - 4u) >> 6u) << 4u);
        mn = (sbyte(h, j + 4u) >> 4u) | ((sbyte(h, j) >> 6u) << 4u);
    }
    let a = wq_at(base + 1u + 2u * (j / 2u));
    let b = wq_at(base + 2u + 2u * (j / 2u));
    let scale = dd.x * f32(sc);
    let off = dd.y * f32(mn);
    var w: W32;
    for (var k = 0u; k < 4u; k++) {
        if ((j & 1u) == 0u) {
            w.v[k] = scale * lo4(a[k]) - off;
            w.v[k + 4u] = scale * lo4(b[k]) - off;
        } else {
            w.v[k] = scale * hi4(a[k]) - off;
            w.v[k + 4u] = scale * hi4(b[k]) - off;
        }
    }
    return w;
}
