//! Seeded hashing shared by everything that draws reproducibly from a seed (prompt marks,
//! synthetic text, dataset permutations): a leaf module, so those draw on it without
//! importing each other.

/// SplitMix64's finaliser: spreads a seed's bits over the whole word.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
