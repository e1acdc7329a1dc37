//! The generation loop, independent of the backend that computes the model.
//!
//! What it does: feeds a prompt to anything implementing [`TokenStep`] ("run these tokens at
//! these positions, give me the sampled next id"), keeps the KV cache's tokens from turn to
//! turn so a shared prefix is not recomputed, detokenizes as it goes, and stops on an
//! end-of-generation token, a stop string (never shown, even in part), `max_tokens`, a cancel
//! request, or the context limit. Every token carries a timestamp from the caller's clock.
//!
//! What it does not do: sampling (the step implementation samples, on the GPU) or read a clock
//! of its own: the browser passes `performance.now()`, the CLI an `Instant`.

mod cancel;
mod controller;
mod prefix;
mod sequence;
mod stop;
mod token_step;

pub use cancel::CancelToken;
pub use controller::{GenerateParams, Generation, Generator, StopReason, TokenEvent};
pub use prefix::reusable_prefix;
pub use sequence::Sequence;
pub use stop::StopMatcher;
pub use token_step::{ModelShape, TokenStep};
