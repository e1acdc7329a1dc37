//! The summary of one load level over its measured phase, and how per-user speed degrades
//! as load rises.
//!
//! Which requests count (the phase is `[start_ms, end_ms]` on the run's clock):
//! - Warm-up records never count.
//! - A request belongs to the phase when it *ended* inside it (`start_ms ≤ end ≤ end_ms`),
//!   so throughput counts work the server finished during the phase, as vLLM and GuideLLM do.
//! - Latency and per-request speed summaries use successful requests only (a failed
//!   request's TTFT or e2e describes the failure, not the service).
//! - Aggregate throughputs divide by the phase duration and count successful requests only
//!   (vLLM's `output_throughput` and `request_throughput`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::load::LoadLevel;
use crate::metrics::TokenCountSource;
use crate::report::{ErrorClass, LevelReport, RequestRecord};
use crate::slo::Slo;
use crate::stats::Summary;

/// Requests meeting every SLO.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Goodput {
    /// Requests that succeeded and met every SLO.
    pub met: u64,
    /// `met` per second of phase.
    pub requests_per_s: Option<f64>,
    /// `met` / all requests that ended in the phase (failed ones count as not met).
    pub fraction: Option<f64>,
}

/// The measured phase of one load level. Times ms, rates per second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PhaseSummary {
    pub start_ms: f64,
    pub end_ms: f64,
    /// Requests (not warm-up) that ended in the phase.
    pub completed: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub ttfb_ms: Option<Summary>,
    pub ttft_ms: Option<Summary>,
    pub ttft_reasoning_ms: Option<Summary>,
    /// Every per-chunk gap of every request, pooled (vLLM's ITL statistics).
    pub itl_chunk_ms: Option<Summary>,
    /// One value per request: its per-token ITL.
    pub itl_token_ms: Option<Summary>,
    pub tpot_ms: Option<Summary>,
    pub e2e_ms: Option<Summary>,
    /// Per-request output TPS ("per-user TPS").
    pub output_tps: Option<Summary>,
    pub decode_tps: Option<Summary>,
    /// Output tokens of the successful requests.
    pub output_tokens: u64,
    /// How the successful requests' output tokens were counted: requests per source.
    pub token_sources: BTreeMap<TokenCountSource, u64>,
    /// Per request, usage output tokens − non-empty delta events, where usage was present:
    /// how far chunk counting would have been off (see `RequestMetrics`).
    pub usage_chunk_discrepancy: Option<Summary>,
    /// `output_tokens` / phase duration.
    pub aggregate_output_tps: Option<f64>,
    /// `succeeded` / phase duration.
    pub request_throughput: Option<f64>,
    /// Failed requests by class.
    pub errors: BTreeMap<ErrorClass, u64>,
    /// Present when SLOs were given.
    pub goodput: Option<Goodput>,
    /// Time requests waited inside the client before going out (browser: the HTTP/1.1
    /// connections-per-host limit), over the requests that measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_ms: Option<Summary>,
    /// Perceived speed, over the requests that were painted (browser with a render target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paint: Option<PhasePaint>,
    /// The parts of the wait before the first byte (see the records' fields of the same
    /// names), over the successful requests that measured them: a full listen backlog
    /// shows in `connect_ms`, a busy server in `wait_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns_ms: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_ms: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_ms: Option<Summary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<Summary>,
}

/// The perceived-speed summary of a phase (see `crate::paint` for the definitions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PhasePaint {
    /// Time to first painted text, per request.
    pub ttfp_ms: Option<Summary>,
    /// Painted tokens per second, per request.
    pub painted_tps: Option<Summary>,
    /// Paint − arrival of every painted chunk of every request, pooled.
    pub lag_ms: Option<Summary>,
    /// Tokens per text frame, every frame of every request pooled.
    pub tokens_per_frame: Option<Summary>,
    /// Frames that showed nothing new while text was waiting, summed.
    pub empty_frames: u64,
    /// Requests whose tab was hidden at some time (their paints are throttled).
    pub hidden_requests: u64,
}

impl PhaseSummary {
    /// Summarises the records of one level over `[start_ms, end_ms]` (see the module docs
    /// for which records count). Throughputs are `None` for a phase of zero length.
    pub fn from_records(
        records: &[RequestRecord],
        start_ms: f64,
        end_ms: f64,
        slo: Option<&Slo>,
    ) -> PhaseSummary {
        let in_phase: Vec<&RequestRecord> = records
            .iter()
            .filter(|r| !r.warmup && r.end_ms >= start_ms && r.end_ms <= end_ms)
            .collect();
        let ok: Vec<&RequestRecord> = in_phase.iter().copied().filter(|r| r.ok()).collect();
        let summarise = |f: &dyn Fn(&RequestRecord) -> Option<f64>| {
            let values: Vec<f64> = ok.iter().filter_map(|r| f(r)).collect();
            Summary::from_values(&values)
        };
        let pooled_itl: Vec<f64> = ok
            .iter()
            .flat_map(|r| r.metrics.itl_chunk_ms.iter().copied())
            .collect();

        let mut errors = BTreeMap::new();
        for r in &in_phase {
            if let Some(e) = &r.error {
                *errors.entry(e.class).or_insert(0) += 1;
            }
        }
        let duration_s = (end_ms - start_ms) / 1000.0;
        let per_s = |n: u64| (duration_s > 0.0).then(|| n as f64 / duration_s);
        let output_tokens: u64 = ok.iter().map(|r| r.output_tokens).sum();
        let mut token_sources = BTreeMap::new();
        for r in &ok {
            *token_sources.entry(r.token_source).or_insert(0) += 1;
        }
        let completed = in_phase.len() as u64;
        let goodput = slo.filter(|s| !s.is_empty()).map(|slo| {
            let met = ok.iter().filter(|r| slo.check(&r.metrics)).count() as u64;
            Goodput {
                met,
                requests_per_s: per_s(met),
                fraction: (completed > 0).then(|| met as f64 / completed as f64),
            }
        });

        let paints: Vec<&crate::paint::PaintMetrics> =
            ok.iter().filter_map(|r| r.metrics.paint.as_ref()).collect();
        let paint = (!paints.is_empty()).then(|| {
            let pooled = |f: &dyn Fn(&crate::paint::PaintMetrics) -> &[f64]| {
                let v: Vec<f64> = paints.iter().flat_map(|p| f(p).iter().copied()).collect();
                Summary::from_values(&v)
            };
            let each = |f: &dyn Fn(&crate::paint::PaintMetrics) -> Option<f64>| {
                let v: Vec<f64> = paints.iter().filter_map(|p| f(p)).collect();
                Summary::from_values(&v)
            };
            PhasePaint {
                ttfp_ms: each(&|p| p.ttfp_ms),
                painted_tps: each(&|p| p.painted_tps),
                lag_ms: pooled(&|p| &p.lag_ms),
                tokens_per_frame: pooled(&|p| &p.tokens_per_frame),
                empty_frames: paints.iter().map(|p| p.empty_frames).sum(),
                hidden_requests: ok.iter().filter(|r| r.tab_hidden == Some(true)).count() as u64,
            }
        });
        PhaseSummary {
            start_ms,
            end_ms,
            completed,
            succeeded: ok.len() as u64,
            failed: completed - ok.len() as u64,
            ttfb_ms: summarise(&|r| r.metrics.ttfb_ms),
            ttft_ms: summarise(&|r| r.metrics.ttft_ms),
            ttft_reasoning_ms: summarise(&|r| r.metrics.ttft_reasoning_ms),
            itl_chunk_ms: Summary::from_values(&pooled_itl),
            itl_token_ms: summarise(&|r| r.metrics.itl_token_ms),
            tpot_ms: summarise(&|r| r.metrics.tpot_ms),
            e2e_ms: summarise(&|r| r.metrics.e2e_ms),
            output_tps: summarise(&|r| r.metrics.output_tps),
            decode_tps: summarise(&|r| r.metrics.decode_tps),
            output_tokens,
            token_sources,
            usage_chunk_discrepancy: summarise(&|r| {
                r.metrics.usage_chunk_discrepancy.map(|d| d as f64)
            }),
            aggregate_output_tps: per_s(output_tokens),
            request_throughput: per_s(ok.len() as u64),
            errors,
            goodput,
            queue_ms: summarise(&|r| r.queue_ms),
            paint,
            dns_ms: summarise(&|r| r.dns_ms),
            connect_ms: summarise(&|r| r.connect_ms),
            tls_ms: summarise(&|r| r.tls_ms),
            wait_ms: summarise(&|r| r.wait_ms),
        }
    }
}

/// How one level's per-user speed compares with the lowest level's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LevelDegradation {
    pub level: LoadLevel,
    /// Median per-request output TPS at this level.
    pub per_user_tps_p50: Option<f64>,
    /// `per_user_tps_p50` / the baseline's (1.0 at the baseline).
    pub ratio: Option<f64>,
    /// `(1 − ratio) × 100`: how many percent slower each user is served than at the
    /// baseline (negative when faster).
    pub degradation_pct: Option<f64>,
}

/// Per-user TPS (median per-request output TPS) of each level relative to the lowest level
/// (smallest concurrency or rate) that has a value: the cost each user pays as load rises.
/// Returned in the order given.
pub fn per_user_tps_degradation(levels: &[LevelReport]) -> Vec<LevelDegradation> {
    let p50 = |l: &LevelReport| l.summary.output_tps.map(|s| s.p50);
    let baseline = levels
        .iter()
        .filter(|l| p50(l).is_some_and(|v| v > 0.0))
        .min_by(|a, b| a.level.value().total_cmp(&b.level.value()))
        .and_then(p50);
    levels
        .iter()
        .map(|l| {
            let v = p50(l);
            let ratio = match (v, baseline) {
                (Some(v), Some(b)) => Some(v / b),
                _ => None,
            };
            LevelDegradation {
                level: l.level,
                per_user_tps_p50: v,
                ratio,
                degradation_pct: ratio.map(|r| (1.0 - r) * 100.0),
            }
        })
        .collect()
}
