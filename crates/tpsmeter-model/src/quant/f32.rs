//! F32: plain little-endian IEEE singles, 4 bytes per weight, block length 1.

/// Copies little-endian f32 values; `bytes.len() == 4 * out.len()` (checked by the caller).
pub fn dequantize(bytes: &[u8], out: &mut [f32]) {
    for (o, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
        *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
}
