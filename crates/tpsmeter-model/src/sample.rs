//! [`SamplerConfig`]: how a backend picks the next token from its logits (repetition
//! penalty, greedy, temperature, top-k, top-p, min-p, a seed), and the limits every sampler
//! keeps. The GPU's kernel (`tpsmeter_gpu::kernels::sample`) and the CPU's sampler read the
//! same settings and pick the same token.

use crate::error::{ModelError, Result};

/// Candidates the GPU sampler keeps after top-k (top-k above this is treated as this; top-p
/// and min-p apply within them). The mass outside the 256 most likely tokens is negligible
/// for the temperatures people use.
pub const SAMPLE_CAP: usize = 256;

/// Most recent tokens the repetition penalty can look at.
pub const MAX_PENALTY_WINDOW: usize = 4096;

/// Sampling settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SamplerConfig {
    /// <= 0: greedy.
    pub temperature: f32,
    /// 0: no limit (beyond [`SAMPLE_CAP`]).
    pub top_k: u32,
    /// 1: off.
    pub top_p: f32,
    /// 0: off.
    pub min_p: f32,
    /// 1: off.
    pub repetition_penalty: f32,
    /// Recent tokens the penalty looks at (0: none).
    pub penalty_window: u32,
    /// Seed of the random stream.
    pub seed: u64,
}

impl SamplerConfig {
    /// Whether a sampler (the GPU's or the CPU twin's) can take these settings: the
    /// repetition penalty's window is at most [`MAX_PENALTY_WINDOW`].
    pub fn check(&self) -> Result<()> {
        if self.penalty_window as usize > MAX_PENALTY_WINDOW {
            return Err(ModelError::LimitExceeded {
                what: "repetition penalty window".into(),
                value: u64::from(self.penalty_window),
                limit: MAX_PENALTY_WINDOW as u64,
            });
        }
        Ok(())
    }
}

impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig {
            temperature: 0.0,
            top_k: 40,
            top_p: 0.95,
            min_p: 0.05,
            repetition_penalty: 1.0,
            penalty_window: 64,
            seed: 0,
        }
    }
}
