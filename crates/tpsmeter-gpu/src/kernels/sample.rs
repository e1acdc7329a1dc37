//! Sampling on the GPU: repetition penalty, greedy, temperature, top-k, top-p, min-p, seeded
//! by a counter-based hash of (seed, step) so the CPU twin ([`crate::kernels::twins::sample`])
//! picks the same token. Only the 4-byte token id needs reading back.

use crate::error::{GpuError, Result};
use crate::gpu::context::GpuContext;
use crate::gpu::defines::{DType, Defines};
use crate::kernels::dispatch::Dispatch;
use crate::kernels::source::ShaderId;
use crate::kernels::tensor::Tensor;
use tpsmeter_model::ModelError;

/// Candidates the GPU sampler keeps after top-k (top-k above this is treated as this; top-p
/// and min-p apply within them). The mass outside the 256 most likely tokens is negligible
/// for the temperatures people use.
pub const SAMPLE_CAP: usize = 256;

/// Most recent tokens the repetition penalty can look at.
pub const MAX_PENALTY_WINDOW: usize = 4096;

/// One workgroup; 256 invocations make the histogram reset one store each.
const WORKGROUP: u32 = 256;

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
            return Err(GpuError::from(ModelError::LimitExceeded {
                what: "repetition penalty window".into(),
                value: u64::from(self.penalty_window),
                limit: MAX_PENALTY_WINDOW as u64,
            }));
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
