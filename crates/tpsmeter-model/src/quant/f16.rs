//! F16: little-endian IEEE halves, 2 bytes per weight, block length 1.

/// Widens halves to f32; `bytes.len() == 2 * out.len()` (checked by the caller).
pub fn dequantize(bytes: &[u8], out: &mut [f32]) {
    for (i, o) in out.iter_mut().enumerate() {
        *o = super::scalar::f16_at(bytes, 2 * i);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_halves() {
        // 1.0 = 0x3c00, -2.0 = 0xc000, 65504 = 0x7bff (max half), smallest subnormal 0x0001.
        let bytes = [0x00, 0x3c, 0x00, 0xc0, 0xff, 0x7b, 0x01, 0x00];
        let mut out = [0.0; 4];
        super::dequantize(&bytes, &mut out);
        assert_eq!(out[..3], [1.0, -2.0, 65504.0]);
        assert_eq!(out[3], 2f32.powi(-24));
    }
}
