//! A local streaming-LLM API emulator for tpsmeter's tests and benchmarks.
//!
//! What it does: serves, on 127.0.0.1, the streaming endpoints of every API tpsmeter measures
//! (OpenAI `/v1/chat/completions`, `/v1/completions`, `/v1/responses`, Anthropic
//! `/v1/messages`, Gemini `/v1beta/models/{m}:streamGenerateContent`, Ollama `/api/chat` and
//! `/api/generate`, the Vercel AI SDK UI message stream at `/api/ui-chat` and `POST /`) in
//! each one's real wire format, releasing tokens on a known schedule ([`Schedule`]: absolute
//! deadlines from the request's arrival, so jitter never accumulates), each chunk flushed on
//! its own, and injecting one [`Fault`] into every response. Its capacity can be limited
//! ([`EmulatorConfig::max_streams`]): requests beyond it wait for a slot, so a load sweep
//! meets a knee at a known load. Each content event carries
//! `"x_sent_ns"`, its CLOCK_MONOTONIC send time ([`clock`]), so a benchmark can tell the
//! client's timing error from the server's jitter.
//!
//! For browsers: CORS (preflights answered, `Access-Control-Allow-Origin: *`),
//! `Timing-Allow-Origin` and `Cross-Origin-Resource-Policy` on every response unless
//! [`EmulatorConfig::cors`] is off ([`cors`]), and per-request [`Overrides`] of the fault and
//! schedule in a path prefix (`/fault/cut:3/pace/5,2,16/no-cors/v1/chat/completions`, and
//! `/max-streams/N`), so one
//! server serves a whole browser test suite.
//!
//! For connection set-up: a small listen backlog ([`EmulatorConfig::backlog`]) and a slow
//! or paused accept loop (`accept_interval`, `accept_pause`), so that a burst of connects
//! overflows the backlog as it does on a loaded server (the ramp-up and connect-time tests).
//!
//! What it does not do: generate meaningful text, validate requests (bodies are read only
//! for the model, `max_tokens` and `stream_options`), stream non-SSE Gemini (JSON array)
//! responses, answer non-streaming requests, or listen anywhere but 127.0.0.1. It is a test
//! peer, so errors are `anyhow` like in the CLI and xtask.
//!
//! Used by: `tpsmeter-cli`'s fault-injection tests (in-process, [`Emulator::start`]), its
//! timing benchmark (`cargo bench -p tpsmeter-cli --bench timing -- accuracy | capacity |
//! peer`), and peers such as GuideLLM through the `tpsmeter-emulator` binary
//! (`scripts/peer.sh` installs GuideLLM and AIPerf into `~/.cache/tpsmeter/peers`).
//!
//! Timer precision: deadlines run on tokio's timer, whose granularity is 1 ms, so a chunk
//! leaves up to ~1 ms after its deadline; `x_sent_ns` records when it really left.

pub mod body;
pub mod clock;
pub mod config;
pub mod cors;
mod echo;
pub mod overrides;
mod plan;
pub mod request;
pub mod server;
pub mod wire;

pub use body::RequestRecord;
pub use config::{EmulatorConfig, Fault, Schedule, parse_fault};
pub use overrides::Overrides;
pub use server::{Emulator, ServerStats};
