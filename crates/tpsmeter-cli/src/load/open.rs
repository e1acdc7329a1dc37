//! The open loop: requests start at scheduled (Poisson) arrival times, at most `c` at once.
//!
//! An arrival that finds `c` requests in flight waits for a slot; its scheduled time is
//! recorded, so the wait shows up as client-side queueing instead of hiding inside the
//! server's latency. Requests started before a duration's end run to completion.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::level::{Completed, LevelSpec, LevelTiming};
use crate::runner::Runner;
use tpsmeter_core::plan::StopCondition;

/// Runs one open-loop level over `arrivals` (ms offsets from the level's start).
pub async fn run(
    runner: Arc<Runner>,
    spec: &LevelSpec,
    arrivals: &[f64],
    cancel: &CancellationToken,
    done: UnboundedSender<Completed>,
) -> LevelTiming {
    let start_ms = runner.now_ms();
    let start = tokio::time::Instant::now();
    let horizon_ms = match spec.stop {
        StopCondition::DurationS(s) => s * 1000.0,
        StopCondition::Requests(_) => f64::INFINITY,
    };
    let slots = Arc::new(Semaphore::new(spec.concurrency as usize));
    let mut inflight = JoinSet::new();
    for (seq, &offset) in arrivals.iter().enumerate() {
        if offset >= horizon_ms || !offset.is_finite() || offset < 0.0 {
            break;
        }
        let at = start + Duration::from_secs_f64(offset / 1000.0);
        tokio::select! {
            () = cancel.cancelled() => break,
            () = tokio::time::sleep_until(at) => {}
        }
        let permit = tokio::select! {
            () = cancel.cancelled() => break,
            p = Arc::clone(&slots).acquire_owned() => match p {
                Ok(p) => p,
                // Never closed while we hold it; treat it as the end of the level.
                Err(_) => break,
            },
        };
        let runner = Arc::clone(&runner);
        let cancel = cancel.clone();
        let done = done.clone();
        let level = spec.index;
        let warmup = spec.warmup;
        let scheduled_ms = start_ms + offset;
        inflight.spawn(async move {
            let outcome = runner.run(&cancel).await;
            drop(permit);
            let _ = done.send(Completed {
                level,
                warmup,
                seq: seq as u64,
                scheduled_ms: Some(scheduled_ms),
                outcome,
            });
        });
    }
    while inflight.join_next().await.is_some() {}
    LevelTiming {
        start_ms,
        end_ms: runner.now_ms(),
        interrupted: cancel.is_cancelled(),
    }
}
