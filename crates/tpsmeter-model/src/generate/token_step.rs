//! The one thing the generation loop needs from a model.

use std::future::Future;

use super::cancel::CancelToken;
use crate::ModelError;

/// What every backend's model declares once, and the generation loop, the engine and a
/// server's scheduler all read: how many positions it holds and how wide its logits are.
pub trait ModelShape {
    /// Positions the KV cache holds (per slot, for a model with several).
    fn max_context(&self) -> usize;
    /// Entries in the vocabulary (rows of the logits).
    fn vocab_size(&self) -> usize;
}

impl<T: ModelShape + ?Sized> ModelShape for &mut T {
    fn max_context(&self) -> usize {
        (**self).max_context()
    }

    fn vocab_size(&self) -> usize {
        (**self).vocab_size()
    }
}

/// One forward pass plus sampling: implemented by the GPU model (and by scripted fakes in
/// tests).
///
/// Asynchronous because on the web the sampled id comes back through `mapAsync`, which
/// resolves from the browser's event loop: a blocking wait there would never return.
/// Natively the future is ready once the device has been polled to completion, and callers
/// block on it (`pollster`).
pub trait TokenStep: ModelShape {
    /// The backend's error: it carries the loop's own ([`ModelError`]) as well.
    type Error: From<ModelError>;

    /// Runs `tokens` at positions `start .. start + tokens.len()` and returns the id sampled
    /// after the last of them. Cache entries below `start` are kept and attended to; entries
    /// from `start` on are overwritten. The loop never passes an empty slice, and never
    /// positions at or past [`ModelShape::max_context`].
    fn step(
        &mut self,
        tokens: &[u32],
        start: usize,
    ) -> impl Future<Output = Result<u32, Self::Error>>;

    /// [`TokenStep::step`] for a prompt, which a model may run in parts: one that does stops
    /// between parts once `cancel` is set and returns `None` (the cache then holds some of
    /// `tokens`; the caller treats positions from `start` on as lost). By default one step.
    fn step_cancellable(
        &mut self,
        tokens: &[u32],
        start: usize,
        cancel: &CancelToken,
    ) -> impl Future<Output = Result<Option<u32>, Self::Error>> {
        let _ = cancel;
        async move { self.step(tokens, start).await.map(Some) }
    }

    /// Decode steps the loop may keep submitted and unread (chaining, see
    /// `runtime/chain.rs`); 1, the default, runs each step with [`TokenStep::step`] and none
    /// of the methods below is called.
    fn in_flight(&self) -> usize {
        1
    }

    /// Submits `token` at `start` without waiting for the id it samples.
    fn submit(&mut self, token: u32, start: usize) -> Result<(), Self::Error> {
        let _ = (token, start);
        Err(no_chaining().into())
    }

    /// Submits the step after the last one submitted, on the id that step samples (on the
    /// device), at the next position.
    fn chain(&mut self) -> Result<(), Self::Error> {
        Err(no_chaining().into())
    }

    /// The id of the oldest step submitted and not read yet.
    fn read(&mut self) -> impl Future<Output = Result<u32, Self::Error>> {
        async { Err(no_chaining().into()) }
    }

    /// Forgets the steps submitted and not read (their ids are never wanted).
    fn discard(&mut self) {}
}

fn no_chaining() -> ModelError {
    ModelError::BatchState {
        reason: "this model runs one step at a time",
    }
}

impl<T: TokenStep + ?Sized> TokenStep for &mut T {
    type Error = T::Error;

    fn step(
        &mut self,
        tokens: &[u32],
        start: usize,
    ) -> impl Future<Output = Result<u32, Self::Error>> {
        (**self).step(tokens, start)
    }

    fn step_cancellable(
        &mut self,
        tokens: &[u32],
        start: usize,
        cancel: &CancelToken,
    ) -> impl Future<Output = Result<Option<u32>, Self::Error>> {
        (**self).step_cancellable(tokens, start, cancel)
    }

    fn in_flight(&self) -> usize {
        (**self).in_flight()
    }

    fn submit(&mut self, token: u32, start: usize) -> Result<(), Self::Error> {
        (**self).submit(token, start)
    }

    fn chain(&mut self) -> Result<(), Self::Error> {
        (**self).chain()
    }

    fn read(&mut self) -> impl Future<Output = Result<u32, Self::Error>> {
        (**self).read()
    }

    fn discard(&mut self) {
        (**self).discard()
    }
}
