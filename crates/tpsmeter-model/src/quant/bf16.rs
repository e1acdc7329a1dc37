//! BF16: little-endian bfloat16 (the top 16 bits of an f32), 2 bytes per weight.

/// Widens bfloat16 to f32 by shifting into the high half; exact.
pub fn dequantize(bytes: &[u8], out: &mut [f32]) {
    for (o, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        *o = f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_values() {
        // 1.0f32 = 0x3f800000 → bf16 0x3f80; -0.5 = 0xbf000000 → 0xbf00.
        let mut out = [0.0; 2];
        super::dequantize(&[0x80, 0x3f, 0x00, 0xbf], &mut out);
        assert_eq!(out, [1.0, -0.5]);
    }
}
