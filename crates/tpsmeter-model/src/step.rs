//! What one forward step may carry, the same on every backend: [`StepPart`] (a sequence's
//! share of a mixed step: a decode token, or a prompt chunk), the most tokens a step runs
//! ([`PREFILL_CHUNK`]), and the checks each backend applies before it runs one
//! ([`check_tokens`], [`step_tokens`], [`check_rewind`]). Both backends read them, so a
//! step the GPU refuses the CPU refuses too, with the same error.

use crate::error::{ModelError, Result};
use crate::sample::SamplerConfig;

/// Largest prefill batch: prompts run in power-of-two chunks up to this many tokens (on the
/// GPU each chunk size has its own prepared graph, at most log2(64) + 1 = 7 of them), and a
/// mixed step carries at most this many tokens in all.
pub const PREFILL_CHUNK: usize = 64;

/// One sequence's part of a mixed step.
#[derive(Debug, Clone, Copy)]
pub enum StepPart<'a> {
    /// `token` runs at the slot's next position and the slot samples its next id.
    Decode { slot: usize, token: u32 },
    /// Prompt `tokens` run at positions `start..` of `slot` (entries from `start` on are
    /// overwritten; `start` at most what the slot holds): with `sample`, the slot samples
    /// the token after the last of them with `sampling`.
    Prompt {
        slot: usize,
        tokens: &'a [u32],
        start: usize,
        sampling: &'a SamplerConfig,
        sample: bool,
    },
}

impl StepPart<'_> {
    /// The part's slot.
    #[inline]
    pub fn slot(&self) -> usize {
        match *self {
            StepPart::Decode { slot, .. } | StepPart::Prompt { slot, .. } => slot,
        }
    }

    /// Whether the slot samples an id in this step.
    #[inline]
    pub fn samples(&self) -> bool {
        match *self {
            StepPart::Decode { .. } => true,
            StepPart::Prompt { sample, .. } => sample,
        }
    }

    /// Tokens the part runs.
    #[inline]
    pub fn tokens(&self) -> usize {
        match *self {
            StepPart::Decode { .. } => 1,
            StepPart::Prompt { tokens, .. } => tokens.len(),
        }
    }
}

/// The tokens `parts` run, refused when none or more than one step holds ([`PREFILL_CHUNK`]):
/// every backend's rule for a step.
pub fn step_tokens(parts: &[StepPart<'_>]) -> Result<usize> {
    let n: usize = parts.iter().map(StepPart::tokens).sum();
    if n == 0 {
        return Err(ModelError::EmptyPrompt);
    }
    if n > PREFILL_CHUNK {
        return Err(ModelError::LimitExceeded {
            what: "tokens in one step".into(),
            value: n as u64,
            limit: PREFILL_CHUNK as u64,
        });
    }
    Ok(n)
}

/// Refuses a rewind of a slot holding `held` positions to `start` unless `1 <= start <= held`
/// (every backend's rule for `rewind_slot`).
pub fn check_rewind(start: usize, held: usize) -> Result<()> {
    if start == 0 || start > held {
        return Err(ModelError::BatchState {
            reason: "rewind to a position the slot does not hold",
        });
    }
    Ok(())
}

/// Checks that `tokens` (not empty, every id below `vocab`) can run at positions `start..`
/// of a sequence whose cache holds `held` of at most `limit` positions: the rule every
/// backend's step applies.
pub fn check_tokens(
    tokens: &[u32],
    start: usize,
    held: usize,
    limit: usize,
    vocab: usize,
) -> Result<()> {
    let end = start.saturating_add(tokens.len());
    if tokens.is_empty() {
        return Err(ModelError::EmptyPrompt);
    }
    if end > limit || start > held {
        return Err(ModelError::ContextFull {
            position: end.max(start),
            limit,
        });
    }
    if let Some(&bad) = tokens.iter().find(|&&t| t as usize >= vocab) {
        return Err(ModelError::TokenOutOfRange { token: bad, vocab });
    }
    Ok(())
}
