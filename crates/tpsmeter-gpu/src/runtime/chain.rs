//! Decode steps chained on the device: step n+1 is recorded and submitted before step n's
//! sampled id has come back, because its embedding reads that id where the sampler wrote it.
//!
//! Why: a token-by-token loop that waits for each id before recording the next step leaves
//! the GPU idle for the readback's round trip (`mapAsync`: 2.4 ms through Chromium's GPU
//! process on SwiftShader) plus the next step's encode, and the host idle while the GPU
//! runs. A chained step starts with a copy of the sampler's 4-byte output into the decode
//! step's token buffer, so the queue holds the next step while the host reads the last id;
//! the host reads ids in order, one or more steps behind.
//!
//! What stays exact: the sampler's state (step counter, recent tokens) lives on the GPU and
//! advances in the sampler kernel, so chained steps sample what one-at-a-time steps sample.
//! Steps computed past the end of a generation (an end-of-generation token or stop string
//! seen on the host while later steps were queued) are discarded: their cache entries lie
//! past what the history holds and are overwritten before anything reads them, and the next
//! generation restarts the sampler. The generation loop never chains past `max_tokens` or
//! the context.
//!
//! Each id read back goes through its own staging buffer: a buffer being mapped cannot be
//! a copy's destination, so steps in flight need one each ([`MAX_IN_FLIGHT`] at most).

use std::collections::VecDeque;
use tpsmeter_model::ModelError;

use crate::error::{GpuError, Result};
use crate::gpu::context::GpuContext;
use crate::kernels::positions;

use super::cost::Phase;
use super::gpu_model::{GpuModel, write};
use super::readback::{TOKEN_BYTES, TokenReadback};

/// Most decode steps one sequence keeps submitted and unread.
pub const MAX_IN_FLIGHT: usize = 4;

/// Steps in flight by default on `ctx`'s adapter, measured with `tpsmeter run --in-flight K`
/// and the engine bench (docs/performance.md, "Steps in flight"): 2 wherever the GPU runs
/// apart from the thread that records (a GPU, or a browser's GPU process), which hides the
/// readback's round trip and the next step's encode; 1 on llvmpipe, whose `vkQueueSubmit`
/// runs the work on the calling thread (Mesa's immediate submit mode), so nothing overlaps
/// and K = 2 measured 0.86-0.91x there.
pub fn default_in_flight(ctx: &GpuContext) -> usize {
    if ctx.info.name.contains("llvmpipe") {
        1
    } else {
        2
    }
}

/// Which staging buffer a step's id goes to.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// The model's readback (steps whose token the host wrote, and prompts).
    Main,
    /// Ring buffer `i` (chained steps).
    Ring(usize),
}

/// A step submitted whose sampled id is not read yet.
#[derive(Debug)]
pub(super) struct Flight {
    source: Source,
    index: wgpu::SubmissionIndex,
    /// Its input token is the id the step before it sampled, on the device.
    chained: bool,
    phase: Phase,
}

/// The steps in flight of the one-sequence path.
#[derive(Debug)]
pub(super) struct Chain {
    ring: Vec<TokenReadback>,
    flight: VecDeque<Flight>,
    next: usize,
    /// Steps the generation loop keeps in flight (1: none chained).
    depth: usize,
}

impl Chain {
    pub(super) fn new(ctx: &GpuContext, depth: usize) -> Self {
        let depth = depth.clamp(1, MAX_IN_FLIGHT);
        Self {
            ring: (0..MAX_IN_FLIGHT)
                .map(|_| TokenReadback::new(ctx, 1))
                .collect(),
            flight: VecDeque::with_capacity(MAX_IN_FLIGHT),
            next: 0,
            depth,
        }
    }

    /// A step whose id goes to the model's readback was submitted.
    pub(super) fn push_main(&mut self, index: wgpu::SubmissionIndex, phase: Phase) {
        self.flight.push_back(Flight {
            source: Source::Main,
            index,
            chained: false,
            phase,
        });
    }

    pub(super) fn depth(&self) -> usize {
        self.depth
    }

    /// Chained steps whose input id has not been read yet (their positions lie past the
    /// history): every chained step in flight but the oldest, whose input was read when the
    /// step before it was.
    fn unconfirmed(&self) -> usize {
        let chained = self.flight.iter().filter(|f| f.chained).count();
        chained - usize::from(self.flight.front().is_some_and(|f| f.chained))
    }
}

impl GpuModel {
    /// Decode steps the generation loop keeps in flight (1: each id is read before the next
    /// step is recorded).
    pub fn in_flight(&self) -> usize {
        self.chain.depth()
    }

    /// Sets the steps in flight (1 ..= [`MAX_IN_FLIGHT`]); steps in flight now are
    /// discarded.
    pub fn set_in_flight(&mut self, depth: usize) {
        self.discard_in_flight();
        self.chain.depth = depth.clamp(1, MAX_IN_FLIGHT);
    }

    /// Submits the decode step after the last one submitted, on the id that step samples,
    /// without waiting for it: at the position after the last, with the model's sampler.
    /// [`GpuModel::read_token`] returns ids in the order their steps were submitted.
    pub fn submit_chained(&mut self) -> Result<()> {
        if self.chain.flight.is_empty() {
            return Err(GpuError::from(ModelError::BatchState {
                reason: "a chained step needs a step in flight to follow",
            }));
        }
        if self.chain.flight.len() >= MAX_IN_FLIGHT {
            return Err(GpuError::from(ModelError::LimitExceeded {
                what: "decode steps in flight".into(),
                value: self.chain.flight.len() as u64 + 1,
                limit: MAX_IN_FLIGHT as u64,
            }));
        }
        let position = self.history.len() + self.chain.unconfirmed();
        if position >= self.kv.max_ctx {
            return Err(GpuError::from(ModelError::ContextFull {
                position: position + 1,
                limit: self.kv.max_ctx,
            }));
        }
        self.cost.begin(&self.stats);
        let pos = positions(position, 1, 0);
        write(
            &mut self.stats,
            &self.ctx.queue,
            &self.pos.buffer,
            bytemuck::cast_slice(&pos),
        );
        let mut enc = self.ctx.encoder("decode (chained)");
        // The id the step before sampled becomes this step's input, on the device.
        enc.copy_buffer_to_buffer(
            &self.sampler.token,
            0,
            &self.decode_act.tokens.buffer,
            0,
            TOKEN_BYTES,
        );
        self.record_token(&mut enc, position);
        let ring = self.chain.next % MAX_IN_FLIGHT;
        self.chain.next = self.chain.next.wrapping_add(1);
        self.chain.ring[ring].encode(&mut enc, &self.sampler.token);
        let index = self.ctx.submit(enc);
        self.stats.submits += 1;
        self.stats.tokens += 1;
        self.cost.end(Phase::Decode, &self.stats, 1);
        self.chain.flight.push_back(Flight {
            source: Source::Ring(ring),
            index,
            chained: true,
            phase: Phase::Decode,
        });
        self.last_sampled = None;
        Ok(())
    }

    /// Forgets the steps in flight: their ids are never read, their cache entries lie past
    /// the history, and the next step restarts the sampler from the history.
    pub fn discard_in_flight(&mut self) {
        if !self.chain.flight.is_empty() {
            self.chain.flight.clear();
            self.last_sampled = None;
        }
    }

    /// Waits for the oldest step in flight and returns its sampled id; with none in flight,
    /// the id of the step submitted last (read again).
    pub async fn read_token(&mut self) -> Result<u32> {
        let Some(flight) = self.chain.flight.pop_front() else {
            let id = self.readback.read(&self.ctx).await?;
            self.last_sampled = Some(id);
            return Ok(id);
        };
        let in_flight = self.chain.flight.len() + 1;
        let t0 = self.cost.clock_ms();
        let buffer = match flight.source {
            Source::Main => &self.readback,
            Source::Ring(i) => &self.chain.ring[i],
        };
        let id = match buffer.read_after(&self.ctx, &flight.index).await {
            Ok(id) => id,
            Err(e) => {
                self.discard_in_flight();
                return Err(e);
            }
        };
        if flight.phase == Phase::Decode {
            let waited = self.cost.clock_ms() - t0;
            self.cost.waited(waited, in_flight);
        }
        self.stats.readback_bytes += TOKEN_BYTES;
        self.cost.read_back_to(flight.phase, TOKEN_BYTES);
        match self.chain.flight.front() {
            // The step behind ran on this id: it is in the cache now.
            Some(next) if next.chained => self.history.push(id),
            Some(_) => {}
            // The last step's id: a step the host submits with it continues the sequence.
            None => self.last_sampled = Some(id),
        }
        Ok(id)
    }
}
