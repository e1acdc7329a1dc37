//! The measurement core of tpsmeter.
//!
//! What it does: turns the bytes of a streamed LLM response into typed events
//! ([`event::StreamEvent`]) for every supported API, builds the requests that start those
//! streams, records when each event arrived on a [`timeline`], derives the latency and
//! throughput metrics from it, summarises them statistically and writes the versioned report.
//!
//! What it does not do: any I/O, any clock, any GPU work. The caller reads the network, takes
//! the timestamps (`Instant` natively, `performance.now()` in the browser) and hands both in.
//! This keeps one implementation of every definition for the native CLI and the browser.
//!
//! Time convention: every timestamp is an `f64` count of **milliseconds** from an origin the
//! caller chooses (the same origin for one run), matching `performance.now()`. Durations are
//! milliseconds too.

pub mod answer;
pub mod api;
pub mod cap;
pub mod conversations;
pub mod dataset;
pub mod decode;
pub mod drive;
pub mod error;
pub mod event;
pub mod exchange;
pub mod failure;
pub mod find_max;
pub mod level_summary;
pub mod load;
pub mod message;
pub mod metrics;
pub mod options;
pub mod paint;
pub mod prompt;
pub mod prompts;
pub mod protocol;
pub mod quoted;
pub mod ramp;
pub mod redact;
pub mod report;
pub mod request;
mod seed;
pub mod shard;
pub mod slo;
mod sort;
pub mod spec;
pub mod stats;
pub mod stream;
pub mod synth;
pub mod timeline;
pub mod tokens;
pub mod workload;

pub use api::Api;
pub use decode::Limits;
pub use drive::{Action, LoadDriver, RecordExtras, Ticket};
pub use error::{CoreError, Result};
pub use event::{FinishReason, StreamEvent, Usage};
pub use exchange::{Exchange, Outcome};
pub use failure::Failure;
pub use find_max::{FindMax, FindMaxOptions, FindMaxVerdict};
pub use level_summary::PhaseSummary;
pub use load::{LoadLevel, LoadPlan};
pub use metrics::{RequestMetrics, TokenCountSource};
pub use prompts::{PromptPlan, RequestInput};
pub use report::{Report, RequestRecord};
pub use request::{HeaderValue, HttpRequest, Message, RequestSpec, Role, Secret, build_request};
pub use shard::Shard;
pub use slo::Slo;
pub use spec::{BenchOptions, CacheBust};
pub use stats::Summary;
pub use stream::StreamParser;
pub use timeline::Timeline;
