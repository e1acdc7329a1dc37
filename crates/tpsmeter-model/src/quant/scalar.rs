//! Little-endian scalar loads shared by the block decoders. Callers index within blocks whose
//! length `chunks_exact` already guarantees, so the slices below are always long enough.

/// The IEEE half at `bytes[at..at + 2]`, widened to f32.
#[inline]
pub(crate) fn f16_at(bytes: &[u8], at: usize) -> f32 {
    half::f16::from_bits(u16::from_le_bytes([bytes[at], bytes[at + 1]])).to_f32()
}

/// The u32 at `bytes[at..at + 4]`.
#[inline]
pub(crate) fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}
