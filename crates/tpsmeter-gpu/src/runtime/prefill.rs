//! A prompt run chunk by chunk with a cancel check between chunks: an abort during a long
//! prompt stops within one chunk instead of after the whole prompt.
//!
//! [`GpuModel::submit_step`] submits every chunk of a prompt at once: the queue then holds
//! the whole prompt's work and nothing can take it back, so on SwiftShader an abort 1.5 s
//! into a long prompt ended the stream 3 s later. Here a chunk is submitted only once the
//! chunks before it, but [`IN_FLIGHT`] - 1, have run, and the cancel token is read just
//! before each submit.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use crate::error::Result;
use crate::gpu::context::GpuContext;
use tpsmeter_model::generate::CancelToken;

use super::gpu_model::{GpuModel, PREFILL_CHUNK};
use super::prompt::Sample;

/// Chunks submitted and not known to have run, counting the one the GPU is on: 1 waits
/// for each chunk before submitting the next (an abort stops after the chunk running); 2
/// keeps the next chunk queued behind it, so the GPU never waits on the CPU's encode, at
/// the price of an abort running up to one more chunk.
pub const IN_FLIGHT: usize = 1;

impl GpuModel {
    /// [`tpsmeter_model::generate::TokenStep::step`] for a prompt that may be cancelled: runs `tokens`
    /// at positions `start..` chunk by chunk, reading `cancel` before every chunk but the
    /// first, and returns the id sampled after the last token, or `None` once `cancel` is
    /// set (the cache then holds the chunks submitted before it, and no sampled id waits).
    pub async fn step_cancellable(
        &mut self,
        tokens: &[u32],
        start: usize,
        cancel: &CancelToken,
    ) -> Result<Option<u32>> {
        if tokens.len() <= PREFILL_CHUNK {
            // One chunk: nothing to stop between.
            self.submit_step(tokens, start)?;
            return self.read_token().await.map(Some);
        }
        self.start_step(tokens, start)?;
        let chunks = Self::chunks(tokens.len());
        // Pipelines are compiled before the first chunk's clock runs (load work, not encode).
        for &c in &chunks {
            self.prefill_graph(c)?;
        }
        self.cost.restart_clock();
        let mut running: VecDeque<WorkDone> = VecDeque::with_capacity(IN_FLIGHT);
        let mut at = 0;
        for (i, &c) in chunks.iter().enumerate() {
            if i > 0 {
                while running.len() >= IN_FLIGHT {
                    if let Some(done) = running.pop_front() {
                        done.wait(&self.ctx).await?;
                    }
                }
                if cancel.is_cancelled() {
                    // Positions from `start + at` on were never submitted.
                    self.history.truncate(start + at);
                    self.stats.tokens += at as u64;
                    return Ok(None);
                }
            }
            if i > 0 {
                self.cost.begin(&self.stats);
            }
            let last = i + 1 == chunks.len();
            let index =
                self.submit_chunk(&tokens[at..at + c], start + at, 0, last, Sample::Model)?;
            running.push_back(WorkDone::after(&self.ctx, index));
            at += c;
        }
        self.stats.tokens += tokens.len() as u64;
        self.read_token().await.map(Some)
    }
}

/// The end of the work submitted before it was made.
struct WorkDone {
    state: Arc<Mutex<(bool, Option<Waker>)>>,
    /// Natively the device is polled until this submission has run (the callback fires
    /// inside that poll); on the web the browser's event loop calls it.
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    index: wgpu::SubmissionIndex,
}

impl WorkDone {
    fn after(ctx: &GpuContext, index: wgpu::SubmissionIndex) -> Self {
        let state = Arc::new(Mutex::new((false, None::<Waker>)));
        let cb = state.clone();
        ctx.queue.on_submitted_work_done(move || {
            if let Ok(mut s) = cb.lock() {
                s.0 = true;
                if let Some(w) = s.1.take() {
                    w.wake();
                }
            }
        });
        WorkDone { state, index }
    }

    async fn wait(self, ctx: &GpuContext) -> Result<()> {
        #[cfg(not(target_arch = "wasm32"))]
        ctx.wait_for(Some(&self.index))?;
        Done { state: self.state }.await;
        ctx.take_error()
    }
}

struct Done {
    state: Arc<Mutex<(bool, Option<Waker>)>>,
}

impl Future for Done {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.state.lock() {
            Ok(mut s) if !s.0 => {
                s.1 = Some(cx.waker().clone());
                Poll::Pending
            }
            // Done, or a poisoned lock (a panicking callback): nothing more will come.
            _ => Poll::Ready(()),
        }
    }
}
