//! The one thing the generation loop needs from a model.

use std::future::Future;

use crate::Result;

/// One forward pass plus sampling: implemented by the GPU model (and by scripted fakes in
/// tests).
///
/// Asynchronous because on the web the sampled id comes back through `mapAsync`, which
/// resolves from the browser's event loop: a blocking wait there would never return.
/// Natively the future is ready once the device has been polled to completion, and callers
/// block on it (`pollster`).
pub trait TokenStep {
    /// Runs `tokens` at positions `start .. start + tokens.len()` and returns the id sampled
    /// after the last of them. Cache entries below `start` are kept and attended to; entries
    /// from `start` on are overwritten. The loop never passes an empty slice, and never
    /// positions at or past [`TokenStep::context_len`].
    fn step(&mut self, tokens: &[u32], start: usize) -> impl Future<Output = Result<u32>>;

    /// Number of positions the KV cache holds.
    fn context_len(&self) -> usize;
}

impl<T: TokenStep + ?Sized> TokenStep for &mut T {
    fn step(&mut self, tokens: &[u32], start: usize) -> impl Future<Output = Result<u32>> {
        (**self).step(tokens, start)
    }

    fn context_len(&self) -> usize {
        (**self).context_len()
    }
}
