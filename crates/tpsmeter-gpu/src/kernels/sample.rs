//! Sampling on the GPU: repetition penalty, greedy, temperature, top-k, top-p, min-p, seeded
//! by a counter-based hash of (seed, step) so the CPU twin (`tpsmeter_model::sampler`)
//! picks the same token. Only the 4-byte token id needs reading back.

use crate::error::{GpuError, Result};
use crate::gpu::context::GpuContext;
use crate::gpu::defines::{DType, Defines};
use crate::kernels::dispatch::Dispatch;
use crate::kernels::source::ShaderId;
use crate::kernels::tensor::Tensor;
use tpsmeter_model::sample::SamplerConfig;

/// One workgroup; 256 invocations make the histogram reset one store each.
const WORKGROUP: u32 = 256;

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    vocab: u32,
    top_k: u32,
    window: u32,
    seed_lo: u32,
    seed_hi: u32,
    temperature: f32,
    top_p: f32,
    min_p: f32,
    rep_penalty: f32,
    _pad: [u32; 3],
}

/// A prepared sampler over a logits tensor. It owns its state (step counter and the ring of
/// recent tokens) on the GPU; the chosen id lands in [`Sampler::token`].
#[derive(Debug, Clone)]
pub struct Sampler {
    dispatch: Dispatch,
    /// The chosen token id (4 bytes, COPY_SRC: read back or feed the next embedding).
    pub token: wgpu::Buffer,
    /// `[step, ring_len, ring_head, 0]`.
    pub state: wgpu::Buffer,
    /// Ring of recent tokens.
    pub ring: wgpu::Buffer,
    window: u32,
}

impl Sampler {
    /// `logits` holds `vocab` f32 values; the penalty modifies them in place.
    pub fn new(
        ctx: &GpuContext,
        cfg: &SamplerConfig,
        logits: &Tensor,
        vocab: usize,
    ) -> Result<Self> {
        const OP: &str = "sample";
        logits.expect(OP, "logits", vocab, DType::F32)?;
        cfg.check()?;
        if vocab == 0 || vocab > u32::MAX as usize / 2 {
            return Err(GpuError::ShapeMismatch {
                op: OP,
                detail: format!("vocabulary of {vocab} tokens"),
            });
        }
        let token = ctx.storage_zeroed("sampled token", 4)?;
        let state = ctx.storage_zeroed("sampler state", 16)?;
        let ring = ctx.storage_zeroed("recent tokens", u64::from(cfg.penalty_window.max(1)) * 4)?;
        let p = Params {
            vocab: vocab as u32,
            top_k: cfg.top_k,
            window: cfg.penalty_window,
            seed_lo: cfg.seed as u32,
            seed_hi: (cfg.seed >> 32) as u32,
            temperature: cfg.temperature,
            top_p: cfg.top_p,
            min_p: cfg.min_p,
            rep_penalty: cfg.repetition_penalty,
            _pad: [0; 3],
        };
        let defines = Defines {
            workgroup: WORKGROUP,
            ..Defines::default()
        };
        let dispatch = ctx.prepare(
            ShaderId::Sample,
            "main",
            defines,
            &p,
            &[(1, &logits.buffer), (2, &ring), (3, &state), (4, &token)],
            [1, 1, 1],
        );
        Ok(Sampler {
            dispatch,
            token,
            state,
            ring,
            window: cfg.penalty_window,
        })
    }

    /// Sets the step counter and the recent-token window (e.g. the prompt's last tokens)
    /// through the queue, before the next recorded sample runs; returns the bytes written.
    pub fn reset(&self, ctx: &GpuContext, step: u32, recent: &[u32]) -> u64 {
        let w = self.window as usize;
        let tail = &recent[recent.len().saturating_sub(w)..];
        let head = if w == 0 { 0 } else { (tail.len() % w) as u32 };
        ctx.queue.write_buffer(
            &self.state,
            0,
            bytemuck::cast_slice(&[step, tail.len() as u32, head, 0]),
        );
        if !tail.is_empty() {
            ctx.queue
                .write_buffer(&self.ring, 0, bytemuck::cast_slice(tail));
        }
        16 + 4 * tail.len() as u64
    }

    /// The dispatch to record.
    pub fn dispatch(&self) -> &Dispatch {
        &self.dispatch
    }
}
