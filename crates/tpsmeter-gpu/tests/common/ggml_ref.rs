//! Reference GGML block decoders for the twin tests, written from the documented layouts
//! (ggml-common.h / ggml-quants.c). The crate's own `quant` module is the engine's
//! dequantizer; this one keeps the kernel tests independent of it.

fn f16(b: &[u8]) -> f32 {
    half::f16::from_le_bytes([b[0], b[1]]).to_f32()
}

/// The scale and min of sub-block `j` of a Q4_K / Q5_K super-block.
fn scale_min_k4(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    }
}

/// Expands whole blocks of `name` (F32, F16, Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q6_K).
pub fn dequantize(name: &str, bytes: &[u8], out: &mut [f32]) {
    match name {
        "F32" => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        "F16" => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = f16(b);
            }
        }
        "Q4_0" => {
            for (b, y) in bytes.chunks_exact(18).zip(out.chunks_exact_mut(32)) {
                let d = f16(b);
                for j in 0..16 {
                    y[j] = d * (f32::from(b[2 + j] & 0xF) - 8.0);
                    y[j + 16] = d * (f32::from(b[2 + j] >> 4) - 8.0);
                }
            }
        }
        "Q4_1" => {
            for (b, y) in bytes.chunks_exact(20).zip(out.chunks_exact_mut(32)) {
                let (d, m) = (f16(b), f16(&b[2..]));
                for j in 0..16 {
                    y[j] = d * f32::from(b[4 + j] & 0xF) + m;
                    y[j + 16] = d * f32::from(b[4 + j] >> 4) + m;
                }
            }
        }
        "Q5_0" => {
            for (b, y) in bytes.chunks_exact(22).zip(out.chunks_exact_mut(32)) {
                let d = f16(b);
                let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
                for j in 0..16 {
                    let h0 = ((qh >> j) & 1) << 4;
                    let h1 = ((qh >> (j + 16)) & 1) << 4;
                    y[j] = d * ((u32::from(b[6 + j] & 0xF) | h0) as f32 - 16.0);
                    y[j + 16] = d * ((u32::from(b[6 + j] >> 4) | h1) as f32 - 16.0);
                }
            }
        }
        "Q8_0" => {
            for (b, y) in bytes.chunks_exact(34).zip(out.chunks_exact_mut(32)) {
                let d = f16(b);
                for j in 0..32 {
                    y[j] = d * f32::from(b[2 + j] as i8);
                }
            }
        }
        "Q4_K" => {
            for (b, y) in bytes.chunks_exact(144).zip(out.chunks_exact_mut(256)) {
                let (d, dmin) = (f16(b), f16(&b[2..]));
                let scales = &b[4..16];
                let qs = &b[16..];
                for c in 0..4 {
                    let q = &qs[32 * c..32 * c + 32];
                    let (s0, m0) = scale_min_k4(2 * c, scales);
                    let (s1, m1) = scale_min_k4(2 * c + 1, scales);
                    for l in 0..32 {
                        y[64 * c + l] =
                            d * f32::from(s0) * f32::from(q[l] & 0xF) - dmin * f32::from(m0);
                        y[64 * c + 32 + l] =
                            d * f32::from(s1) * f32::from(q[l] >> 4) - dmin * f32::from(m1);
                    }
                }
            }
        }
        "Q6_K" => {
            for (b, y) in bytes.chunks_exact(210).zip(out.chunks_exact_mut(256)) {
                let (ql, qh, sc) = (&b[..128], &b[128..192], &b[192..208]);
                let d = f16(&b[208..]);
                for n in 0..2 {
                    let (ql, qh, sc) = (&ql[64 * n..], &qh[32 * n..], &sc[8 * n..]);
                    let y = &mut y[128 * n..];
                    for l in 0..32 {
                        let is = l / 16;
                        let q1 = i32::from((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32;
                        let q2 = i32::from((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                        let q3 = i32::from((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                        let q4 = i32::from((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                        y[l] = d * f32::from(sc[is] as i8) * q1 as f32;
                        y[l + 32] = d * f32::from(sc[is + 2] as i8) * q2 as f32;
                        y[l + 64] = d * f32::from(sc[is + 4] as i8) * q3 as f32;
                        y[l + 96] = d * f32::from(sc[is + 6] as i8) * q4 as f32;
                    }
                }
            }
        }
        other => panic!("no reference decoder for {other}"),
    }
}
