//! Where each token of a step sits: a u32 (position, cache row base) pair per token, the
//! layout of the `pos` buffer that RoPE, the KV append and attention read. Token `t` sits at
//! position `pos[2t]` of its sequence, whose KV entries occupy cache rows `pos[2t + 1]` on.
//! A prompt chunk's tokens share a base and have consecutive positions; a batched decode
//! step's tokens come from different sequences, each with its own rows of one shared cache.
//!
//! A buffer rather than uniforms so a step recorded once keeps working as positions advance:
//! only these few bytes are written per step.

/// Pairs for `n` consecutive tokens from position `start` of the sequence whose cache rows
/// start at `base`.
pub fn positions(start: usize, n: usize, base: usize) -> Vec<u32> {
    (0..n)
        .flat_map(|t| [(start + t) as u32, base as u32])
        .collect()
}

/// Pairs for tokens of different sequences, as (position, base) each.
pub fn batch_positions(tokens: &[(usize, usize)]) -> Vec<u32> {
    tokens
        .iter()
        .flat_map(|&(position, base)| [position as u32, base as u32])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_position_then_base() {
        assert_eq!(positions(5, 3, 100), vec![5, 100, 6, 100, 7, 100]);
        assert_eq!(batch_positions(&[(9, 0), (2, 64)]), vec![9, 0, 2, 64]);
        assert!(positions(0, 0, 0).is_empty());
    }
}
