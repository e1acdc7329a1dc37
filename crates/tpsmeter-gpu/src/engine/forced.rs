//! Teacher forcing: the engine fed a given continuation token by token, reporting at each
//! position what it would have picked. Two correct engines can part at a near-tie (summation
//! order moves logits by ~1e-2), after which free-running greedy outputs share nothing;
//! feeding both the same tokens keeps every later position comparable. The browser test uses
//! it to check the WebGPU engine against the native one past such ties.

use serde::Serialize;
use tpsmeter_model::ModelError;

use crate::error::{GpuError, Result};
use tpsmeter_model::sample::SamplerConfig;

use super::session::Engine;
use crate::backend::Backend;

/// What the engine would have picked at one forced position.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ForcedStep {
    /// The greedy pick (argmax of the logits, lowest id on equal logits).
    pub argmax: u32,
    /// logit(argmax) − logit(forced token): 0 when the pick is the forced token.
    pub gap_to_forced: f32,
    /// logit(argmax) − the second-best logit: how near a tie this position is.
    pub top2_gap: f32,
}

impl<M: Backend> Engine<M> {
    /// Runs `prompt`, then feeds `forced` one token at a time; entry `i` says what the model
    /// would have generated in place of `forced[i]`. The KV cache is treated as empty
    /// afterwards, and the sampler set to greedy (the logits are read before sampling).
    pub async fn teacher_forced(
        &mut self,
        prompt: &[u32],
        forced: &[u32],
    ) -> Result<Vec<ForcedStep>> {
        let vocab = self.model().vocab_size();
        if let Some(&bad) = prompt.iter().chain(forced).find(|&&t| t as usize >= vocab) {
            return Err(GpuError::from(ModelError::TokenOutOfRange {
                token: bad,
                vocab,
            }));
        }
        if prompt.is_empty() {
            return Err(GpuError::from(ModelError::EmptyPrompt));
        }
        let limit = self.model().max_context();
        if prompt.len() + forced.len() > limit {
            return Err(GpuError::from(ModelError::ContextFull {
                position: prompt.len() + forced.len(),
                limit,
            }));
        }
        self.forget_cache();
        self.model_mut().set_sampling(SamplerConfig {
            temperature: 0.0,
            ..SamplerConfig::default()
        })?;
        let model = self.model_mut();
        let mut logits = model.logits_after(prompt, 0).await?;
        let mut out = Vec::with_capacity(forced.len());
        for (i, &want) in forced.iter().enumerate() {
            let (a, b) = top2(&logits);
            out.push(ForcedStep {
                argmax: a as u32,
                gap_to_forced: logits[a] - logits[want as usize],
                top2_gap: logits[a] - logits[b],
            });
            if i + 1 < forced.len() {
                logits = model.logits_after(&[want], prompt.len() + i).await?;
            }
        }
        self.forget_cache();
        Ok(out)
    }
}

/// Indices of the largest and second-largest values (lowest index first on equal values,
/// as the GPU sampler breaks ties).
fn top2(v: &[f32]) -> (usize, usize) {
    let (mut a, mut b) = (0, usize::MAX);
    for i in 1..v.len() {
        if v[i] > v[a] {
            b = a;
            a = i;
        } else if b == usize::MAX || v[i] > v[b] {
            b = i;
        }
    }
    (a, if b == usize::MAX { a } else { b })
}

#[cfg(test)]
mod tests {
    use super::top2;

    #[test]
    fn top2_breaks_ties_toward_the_lowest_index() {
        assert_eq!(top2(&[1.0, 3.0, 3.0, 2.0]), (1, 2));
        assert_eq!(top2(&[5.0, 1.0, 4.0]), (0, 2));
        assert_eq!(top2(&[2.0]), (0, 0));
        assert_eq!(top2(&[0.0, -1.0, 0.0]), (0, 2));
    }
}
