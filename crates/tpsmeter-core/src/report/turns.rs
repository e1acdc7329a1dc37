//! Per-turn figures of a multi-turn run: how TTFT, speed and the server's prompt cache
//! behave as a conversation grows, turn by turn, for each level.

use serde::{Deserialize, Serialize};

use crate::report::RequestRecord;
use crate::stats::Summary;

/// One turn of one level: the measured requests that were that turn of their conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TurnSummary {
    /// Position of the level in `config.levels`.
    pub level_index: u32,
    /// From 1.
    pub turn: u32,
    pub requests: u64,
    pub ok: u64,
    pub ttft_ms_p50: Option<f64>,
    pub ttft_ms_p90: Option<f64>,
    /// Median output tokens per second of a request, after its first token.
    pub output_tps_p50: Option<f64>,
    /// Median input tokens (the server's usage): the conversation so far.
    pub input_tokens_p50: Option<f64>,
    /// Median input tokens the server took from its prompt cache, where it says.
    pub cached_input_tokens_p50: Option<f64>,
}

/// The per-turn summaries of `records` (none when no record has a turn), by level then turn.
pub fn summarise(records: &[RequestRecord]) -> Vec<TurnSummary> {
    let mut keys: Vec<(u32, u32)> = records
        .iter()
        .filter(|r| !r.warmup)
        .filter_map(|r| Some((r.level_index.unwrap_or(0), r.turn?)))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .map(|(level_index, turn)| {
            let of: Vec<&RequestRecord> = records
                .iter()
                .filter(|r| {
                    !r.warmup && r.turn == Some(turn) && r.level_index.unwrap_or(0) == level_index
                })
                .collect();
            let ok: Vec<&&RequestRecord> = of.iter().filter(|r| r.ok()).collect();
            let summary = |value: fn(&RequestRecord) -> Option<f64>| {
                Summary::from_values(&ok.iter().filter_map(|r| value(r)).collect::<Vec<f64>>())
            };
            let ttft = summary(|r| r.metrics.ttft_ms);
            TurnSummary {
                level_index,
                turn,
                requests: of.len() as u64,
                ok: ok.len() as u64,
                ttft_ms_p50: ttft.map(|s| s.p50),
                ttft_ms_p90: ttft.map(|s| s.p90),
                output_tps_p50: summary(|r| r.metrics.decode_tps).map(|s| s.p50),
                input_tokens_p50: summary(|r| r.input_tokens.map(|n| n as f64)).map(|s| s.p50),
                cached_input_tokens_p50: summary(|r| r.cached_input_tokens.map(|n| n as f64))
                    .map(|s| s.p50),
            }
        })
        .collect()
}
