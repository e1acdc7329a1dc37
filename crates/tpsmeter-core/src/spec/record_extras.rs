//! [`RecordExtras`]: what the caller knows of a request beyond its outcome, handed to the
//! load driver with it (`LoadDriver::complete`). The transport's facts (timing parts, HTTP
//! version, a hidden tab) come from the CLI's HTTP loop or, as JSON, from the page's
//! (`BenchRun.complete` in the wasm; the package's `RecordExtras` type is generated from this
//! struct's JSON Schema); the rest the caller works out itself and never crosses as JSON.

use serde::Deserialize;

use super::Turn;

/// Extra facts about one request beyond its outcome. Where they land on the record is the
/// driver's (`drive/extras.rs`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct RecordExtras {
    /// Time the request waited inside the client before going out (the browser's
    /// connections-per-host limit), from the transport's own timing, ms.
    pub queue_ms: Option<f64>,
    /// The protocol the response came over (`h2`, `http/1.1`; Resource Timing's
    /// `nextHopProtocol` in the browser); kept to 32 characters. Without it the record
    /// takes what the exchange was told.
    pub http_version: Option<String>,
    /// The page was hidden at some time while the request ran.
    pub tab_hidden: Option<bool>,
    /// The parts of the wait before the response that the transport could time, ms (the
    /// record's fields of the same names); left out where it could not. Values that are
    /// not finite or are negative are dropped.
    pub dns_ms: Option<f64>,
    pub connect_ms: Option<f64>,
    pub tls_ms: Option<f64>,
    pub wait_ms: Option<f64>,
    // The three below are the caller's own work (a token count, the conversation it keeps,
    // a count still running), not a transport's facts: no JSON sets them.
    /// The run's tokenizer's count of the answer text: the output token count when the
    /// server reported no usage.
    #[serde(skip)]
    pub output_tokens_counted: Option<u64>,
    /// Multi-turn runs: the request's place in its conversation.
    #[serde(skip)]
    pub turn: Option<Turn>,
    /// The caller is counting the answer's tokens off its loop and hands the count in
    /// later (`LoadDriver::counted`): the request's slot is free at once, and its phase's
    /// summary waits for the count.
    #[serde(skip)]
    pub count_pending: bool,
}
