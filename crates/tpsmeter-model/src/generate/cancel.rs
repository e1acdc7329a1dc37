//! A cancel flag shared between the generating loop and whoever may stop it (a UI button, a
//! client that hung up).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Cloneable handle; cancelling any clone cancels them all. Checked before every model step,
/// so a cancel takes effect within one token.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Clears an earlier cancellation, so the token can serve the next generation.
    pub fn reset(&self) {
        self.0.store(false, Ordering::Release);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}
