//! KV-cache reuse across turns.
//!
//! The cache holds keys and values for the tokens already run, position by position. When the
//! next prompt starts with the same tokens (a chat's history re-rendered by its template), those
//! positions stay valid and only the rest must be computed.

/// How many leading positions of the cache can be kept for `prompt`, given the tokens whose
/// keys/values the cache holds (`cached`, position order).
///
/// At least one prompt token is always left to run, because the model must produce logits to
/// sample from; so a prompt equal to the cache re-runs its last token.
pub fn reusable_prefix(cached: &[u32], prompt: &[u32]) -> usize {
    let common = cached
        .iter()
        .zip(prompt)
        .take_while(|(a, b)| a == b)
        .count();
    common.min(prompt.len().saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::reusable_prefix;

    #[test]
    fn keeps_the_common_prefix_but_always_runs_one_token() {
        assert_eq!(reusable_prefix(&[], &[1, 2, 3]), 0);
        assert_eq!(reusable_prefix(&[1, 2, 9, 9], &[1, 2, 3]), 2);
        // The new prompt extends the cache: keep all of it.
        assert_eq!(reusable_prefix(&[1, 2], &[1, 2, 3, 4]), 2);
        // Identical or shorter prompt: the last prompt token runs again.
        assert_eq!(reusable_prefix(&[1, 2, 3], &[1, 2, 3]), 2);
        assert_eq!(reusable_prefix(&[1, 2, 3, 4], &[1, 2]), 1);
        assert_eq!(reusable_prefix(&[5], &[]), 0);
    }
}
