//! f16 → f32 without a call or a branch on the common path.
//!
//! Every quantized block carries an f16 scale, so decode converts about one per 32 weights
//! (4 M per token for SmolLM2-135M). `half`'s conversion is a call with a run-time feature
//! check; this one inlines into the kernels and vectorises with them.

/// The f32 value of the IEEE half with bits `h`.
#[inline(always)]
pub fn to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let em = u32::from(h & 0x7fff);
    // Shifting exponent and mantissa into f32 place and multiplying by 2^112 rebiases the
    // exponent (15 → 127) and turns halves' subnormals into f32 normals exactly.
    let mut v = f32::from_bits(em << 13) * f32::from_bits(0x7780_0000);
    if em >= 0x7c00 {
        // Infinity or NaN: all exponent bits set, mantissa (NaN payload) kept.
        v = f32::from_bits((em << 13) | 0x7f80_0000);
    }
    f32::from_bits(v.to_bits() | sign)
}

/// The f16 at `bytes[at..at + 2]`, little-endian, as f32.
#[inline(always)]
pub fn at(bytes: &[u8], at: usize) -> f32 {
    to_f32(u16::from_le_bytes([bytes[at], bytes[at + 1]]))
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_half_converts_as_half_does() {
        for h in 0..=u16::MAX {
            let want = half::f16::from_bits(h).to_f32();
            let got = super::to_f32(h);
            if want.is_nan() {
                assert!(got.is_nan(), "{h:#06x}");
            } else {
                assert_eq!(got.to_bits(), want.to_bits(), "{h:#06x}");
            }
        }
    }
}
