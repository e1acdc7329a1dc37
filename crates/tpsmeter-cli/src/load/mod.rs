//! Load generation: how requests of one concurrency level are started.
//!
//! - [`closed`]: a closed loop, `c` workers each sending its next request as soon as the
//!   previous one ends, so exactly `c` requests are in flight (vLLM `--max-concurrency`,
//!   GuideLLM `concurrent`).
//! - [`open`]: an open loop, requests started at Poisson arrival times whatever the
//!   server's state (vLLM `--request-rate`), with `c` capping requests in flight.
//!
//! Both hand every finished request to the caller through a channel as it completes, so it
//! can be written to disk at once.

pub mod closed;
pub mod level;
pub mod open;

pub use level::{Completed, LevelSpec, LevelTiming};
