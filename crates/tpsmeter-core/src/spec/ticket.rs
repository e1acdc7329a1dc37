//! What the load driver tells its caller to do next ([`Action`]), the request it hands out
//! ([`Ticket`]) and where that request stands in a conversation ([`Turn`]): the run's
//! protocol between the driver and whoever sends requests (the CLI's HTTP loop, the page's
//! `fetch` loop), on the floor so that the request and conversation code that reads a ticket
//! does not import the driver.
//!
//! [`Action`] serializes as the page's loop reads it (`BenchRun.next` in the wasm); its JSON
//! Schema is part of `spec.schema.json`, from which the package's `Action` type is generated.

use serde::Serialize;

use crate::load::LoadLevel;

/// A request the caller is to start now. As JSON (in the `start` action): `ticket` (the id),
/// `level` (the level's index), `warmup` and, open loop, `scheduledMs`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Ticket {
    /// The request's id, unique in the run and in start order (the record's `id`); hand it
    /// back to `begin` and `complete`.
    #[serde(rename = "ticket")]
    pub id: u64,
    /// The position of the level in the run (0-based).
    #[serde(rename = "level")]
    pub level_index: usize,
    // The level itself stays with the driver: the caller needs only its index.
    #[serde(skip)]
    pub level: LoadLevel,
    /// A warm-up request: recorded, left out of every summary.
    pub warmup: bool,
    /// Open loop: when the arrival schedule wanted it sent (ms on the run's clock).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduled_ms: Option<f64>,
}

/// What the caller does next (`BenchRun.next`): `{ kind: 'start' | 'sleep' | 'wait' |
/// 'done', … }`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Action {
    /// Start this request now, then ask again.
    Start(Ticket),
    /// Nothing to start before `untilMs`; wake then or when a request finishes.
    #[serde(rename_all = "camelCase")]
    Sleep { until_ms: f64 },
    /// Wait for a request to finish.
    Wait,
    /// The run is over: build the report.
    Done,
}

/// Where a request stands in its conversation (multi-turn runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Turn {
    /// The conversation's id (the ticket id of its first turn).
    pub conversation: u64,
    /// From 1.
    pub turn: u32,
}
