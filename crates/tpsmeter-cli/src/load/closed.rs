//! The closed loop: `c` workers, each sending its next request when the previous ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::level::{Completed, LevelSpec, LevelTiming, backoff_after};
use crate::runner::Runner;
use tpsmeter_core::plan::StopCondition;

/// Runs one closed-loop level; every finished request goes to `done` as it completes.
pub async fn run(
    runner: Arc<Runner>,
    spec: &LevelSpec,
    cancel: &CancellationToken,
    done: UnboundedSender<Completed>,
) -> LevelTiming {
    let start_ms = runner.now_ms();
    let deadline = match spec.stop {
        StopCondition::DurationS(s) => {
            Some(tokio::time::Instant::now() + Duration::from_secs_f64(s))
        }
        StopCondition::Requests(_) => None,
    };
    let limit = match spec.stop {
        StopCondition::Requests(n) => n,
        StopCondition::DurationS(_) => u64::MAX,
    };
    let next = Arc::new(AtomicU64::new(0));
    let mut workers = JoinSet::new();
    for _ in 0..spec.concurrency {
        let runner = Arc::clone(&runner);
        let next = Arc::clone(&next);
        let cancel = cancel.clone();
        let done = done.clone();
        let level = spec.index;
        let warmup = spec.warmup;
        workers.spawn(async move {
            loop {
                if cancel.is_cancelled()
                    || deadline.is_some_and(|d| tokio::time::Instant::now() >= d)
                {
                    break;
                }
                let seq = next.fetch_add(1, Ordering::Relaxed);
                if seq >= limit {
                    break;
                }
                let outcome = runner.run(&cancel).await;
                let pause = backoff_after(&outcome);
                // The receiver lives until every level is done; if it is gone the run is
                // being torn down and there is nobody left to tell.
                let _ = done.send(Completed {
                    level,
                    warmup,
                    seq,
                    scheduled_ms: None,
                    outcome,
                });
                if let Some(pause) = pause {
                    let mut until = tokio::time::Instant::now() + pause;
                    if let Some(d) = deadline {
                        until = until.min(d);
                    }
                    tokio::select! {
                        () = cancel.cancelled() => break,
                        () = tokio::time::sleep_until(until) => {}
                    }
                }
            }
        });
    }
    while workers.join_next().await.is_some() {}
    LevelTiming {
        start_ms,
        end_ms: runner.now_ms(),
        interrupted: cancel.is_cancelled(),
    }
}
