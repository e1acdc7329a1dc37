//! A prompt's chunks: their sizes (powers of two up to [`PREFILL_CHUNK`], each with its own
//! prepared graph), their submission one by one through the prefill graphs, and who samples
//! after the last. `prefill.rs` runs the same chunks cancellably; batched serving runs them
//! per slot.

use crate::error::Result;
use crate::kernels::positions;

use super::cost::Phase;
use super::gpu_model::{GpuModel, PREFILL_CHUNK, write};

/// Who samples after a prompt's last chunk.
#[derive(Debug, Clone, Copy)]
pub(super) enum Sample {
    /// Nobody: the chunks only fill the cache.
    Nothing,
    /// The model's own sampler (the one-sequence path).
    Model,
    /// A slot's sampler (batched decoding).
    Slot(usize),
}

impl GpuModel {
    /// Chunk sizes a prompt of `n` tokens runs in: powers of two up to [`PREFILL_CHUNK`].
    pub(super) fn chunks(mut n: usize) -> Vec<usize> {
        let mut out = Vec::new();
        while n > 0 {
            let c = if n >= PREFILL_CHUNK {
                PREFILL_CHUNK
            } else {
                1 << (usize::BITS - 1 - n.leading_zeros())
            };
            out.push(c);
            n -= c;
        }
        out
    }

    /// Runs prompt `tokens` at positions `start..` of the sequence whose cache rows start at
    /// `base`, in chunks of [`PREFILL_CHUNK`] then powers of two; after the last chunk, only
    /// the last row's logits are computed, and `sample` says who samples from them. Each
    /// chunk is a step of its own; the caller began the first ([`CostLog::begin`]).
    pub(super) fn submit_prompt(
        &mut self,
        tokens: &[u32],
        start: usize,
        base: usize,
        sample: Sample,
    ) -> Result<()> {
        let chunks = Self::chunks(tokens.len());
        for &c in &chunks {
            self.prefill_graph(c)?;
        }
        self.cost.restart_clock();
        let mut at = 0;
        for (i, &c) in chunks.iter().enumerate() {
            if i > 0 {
                self.cost.begin(&self.stats);
            }
            let last = i + 1 == chunks.len();
            self.submit_chunk(&tokens[at..at + c], start + at, base, last, sample)?;
            at += c;
        }
        Ok(())
    }

    /// Records and submits one prompt chunk, `tokens` at positions `start..` of the sequence
    /// whose cache rows start at `base`; after the `last` chunk, `sample` samples.
    pub(super) fn submit_chunk(
        &mut self,
        tokens: &[u32],
        start: usize,
        base: usize,
        last: bool,
        sample: Sample,
    ) -> Result<wgpu::SubmissionIndex> {
        let c = tokens.len();
        self.prefill_graph(c)?;
        let q = &self.ctx.queue;
        let s = &mut self.stats;
        let pos = positions(start, c, base);
        write(s, q, &self.pos.buffer, bytemuck::cast_slice(&pos));
        write(
            s,
            q,
            &self.prefill_act.tokens.buffer,
            bytemuck::cast_slice(tokens),
        );
        let mut enc = self.ctx.encoder("prefill");
        let g = self.prefill.remove(&c).unwrap_or_default();
        self.record(&mut enc, &[&g]);
        self.prefill.insert(c, g);
        if last && !matches!(sample, Sample::Nothing) {
            // Only the last row needs logits: move it to the decode residual and run
            // the head there.
            let row = (self.cfg.n_embd * self.decode_act.x.dtype.size()) as u64;
            enc.copy_buffer_to_buffer(
                &self.prefill_act.x.buffer,
                (c as u64 - 1) * row,
                &self.decode_act.x.buffer,
                0,
                row,
            );
            let head = std::mem::take(&mut self.head);
            self.record(&mut enc, &[&head]);
            self.head = head;
            match sample {
                Sample::Model => {
                    let sampler = [self.sampler.dispatch().clone()];
                    self.record(&mut enc, &[&sampler]);
                    self.readback.encode(&mut enc, &self.sampler.token);
                }
                Sample::Slot(slot) => {
                    let logits = self.logits.buffer.clone();
                    self.sample_slots(&mut enc, &[slot], &logits)?;
                }
                Sample::Nothing => {}
            }
        }
        let index = self.ctx.submit(enc);
        if last && matches!(sample, Sample::Model) {
            self.chain.push_main(index.clone(), Phase::Prefill);
        }
        self.stats.submits += 1;
        self.cost.end(Phase::Prefill, &self.stats, c as u64);
        Ok(index)
    }
}

#[cfg(test)]
mod tests {
    use crate::runtime::GpuModel;

    #[test]
    fn prompts_split_into_power_of_two_chunks() {
        assert_eq!(GpuModel::chunks(1), vec![1]);
        assert_eq!(GpuModel::chunks(100), vec![64, 32, 4]);
        assert_eq!(GpuModel::chunks(130), vec![64, 64, 2]);
        assert_eq!(GpuModel::chunks(63), vec![32, 16, 8, 4, 2, 1]);
        assert!(GpuModel::chunks(0).is_empty());
    }
}
