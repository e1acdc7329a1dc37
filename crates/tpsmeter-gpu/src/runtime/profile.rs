//! Where a step's time goes, for the engine benchmark (native only): each kind of kernel of
//! a decoded token or a prefill chunk timed alone, and whole decode steps.

use crate::error::Result;
use crate::kernels::{Dispatch, positions};

use super::gpu_model::GpuModel;

impl GpuModel {
    /// Native, for benchmarks: milliseconds one decoded token spends in each kind of kernel,
    /// as (kernel, dispatches per token, ms per token), slowest first, then two whole-step
    /// rows (`step/record+submit`, `step/total`). Each kind's dispatches of one token run
    /// alone, `reps` times in one submit, so fixed submit costs are spread out. The kernels
    /// run out of order on stale inputs, so this forgets the cache's contents: the next step
    /// starts a new generation.
    pub fn profile_decode(&mut self, reps: usize) -> Result<Vec<(String, usize, f64)>> {
        let mut out = self.profile_decode_kernels(reps)?;
        // Whole steps beside the kernels: recording and submitting on the CPU, then the wait
        // for the sampled id (the GPU's work plus the readback).
        self.history.clear();
        self.history.push(0);
        let (mut record, mut total) = (0.0, 0.0);
        for _ in 0..reps {
            let t = std::time::Instant::now();
            self.submit_step(&[0], 1)?;
            record += t.elapsed().as_secs_f64();
            pollster::block_on(self.read_token())?;
            total += t.elapsed().as_secs_f64();
        }
        let steps = self.dispatches_per_token();
        out.push((
            "step/record+submit".into(),
            steps,
            record * 1e3 / reps as f64,
        ));
        out.push(("step/total".into(), steps, total * 1e3 / reps as f64));
        self.history.clear();
        self.last_sampled = None;
        self.ctx.take_error()?;
        Ok(out)
    }

    /// Native, for benchmarks: [`GpuModel::profile_decode`]'s per-kernel rows alone. The
    /// positions stay where the last step left them, so repeated calls time the attention
    /// over the same context (the cache's contents are still lost to the next step).
    pub fn profile_decode_kernels(&mut self, reps: usize) -> Result<Vec<(String, usize, f64)>> {
        let sample = [self.sampler.dispatch().clone()];
        let out = self.profile_lists(
            &[
                ("layers", &self.decode[..]),
                ("head", &self.head[..]),
                ("sample", &sample[..]),
            ],
            reps,
        )?;
        self.last_sampled = None;
        Ok(out)
    }

    /// Native, for benchmarks: [`GpuModel::profile_decode`]'s per-kernel rows for one
    /// prefill chunk of `n` tokens (a power of two up to [`crate::runtime::PREFILL_CHUNK`]),
    /// in ms per chunk, as the first chunk of a prompt (positions 0..n).
    pub fn profile_prefill(&mut self, n: usize, reps: usize) -> Result<Vec<(String, usize, f64)>> {
        self.prefill_graph(n)?;
        // Positions are whatever the last step left: after a decode at context 2048 the
        // chunk's attention would read 2048 keys per token, not the chunk's own.
        self.ctx.queue.write_buffer(
            &self.pos.buffer,
            0,
            bytemuck::cast_slice(&positions(0, n, 0)),
        );
        let g = self.prefill.remove(&n).unwrap_or_default();
        let out = self.profile_lists(&[("prefill", &g[..])], reps);
        self.prefill.insert(n, g);
        self.history.clear();
        self.last_sampled = None;
        out
    }

    /// Times each kind of dispatch of `sections` alone, `reps` times per submit.
    fn profile_lists(
        &self,
        sections: &[(&str, &[Dispatch])],
        reps: usize,
    ) -> Result<Vec<(String, usize, f64)>> {
        let mut kinds: Vec<(String, Vec<&Dispatch>)> = Vec::new();
        for (section, list) in sections {
            for d in *list {
                let key = format!("{section}/{}", d.label);
                match kinds.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, v)) => v.push(d),
                    None => kinds.push((key, vec![d])),
                }
            }
        }
        let reps = reps.max(1);
        let mut out = Vec::with_capacity(kinds.len());
        for (key, list) in kinds {
            let t = std::time::Instant::now();
            let mut enc = self.ctx.encoder("profile");
            {
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("profile"),
                    timestamp_writes: None,
                });
                for _ in 0..reps {
                    for d in &list {
                        d.encode(&mut pass);
                    }
                }
            }
            self.ctx.submit(enc);
            self.ctx.wait()?;
            out.push((
                key,
                list.len(),
                t.elapsed().as_secs_f64() * 1e3 / reps as f64,
            ));
        }
        self.ctx.take_error()?;
        out.sort_by(|a, b| b.2.total_cmp(&a.2));
        Ok(out)
    }
}
