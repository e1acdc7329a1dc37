//! Counting answers that arrived without usage (`--tokenizer`), off the driver's task.
//!
//! A tokenizer's count is CPU work that grows with the answer (and, for a hostile answer
//! such as megabytes of one digit, faster than its length). Counted on the driver's task,
//! it held up every scheduled send and every other completion behind it: a 4 MiB answer
//! stalled the next request's start by 8 s. So each request's task counts its own answer
//! once its stream has ended (every stamp is taken by then), on tokio's blocking threads,
//! a few at a time; the answer it counts is the kept part, at most
//! [`tpsmeter_core::answer::MAX_KEPT_ANSWER_BYTES`], so a count's time and memory are
//! bounded too. A closed-loop slot starts its next request once its count is in, as if the
//! request had lasted that much longer; no other slot and no open-loop arrival waits.

use std::sync::Arc;

use tokio::sync::Semaphore;
use tpsmeter_core::Outcome;
use tpsmeter_core::answer::count_answer;

use crate::bench::tokenizer::CliTokenizer;

/// Counts running at once. A count's working set grows with the tokens it makes, up to
/// ~160 MB for 512 KiB of one digit (see [`tpsmeter_core::answer::MAX_KEPT_ANSWER_BYTES`]):
/// one at a time keeps that the most a burst of hostile answers costs. Real answers count
/// at ~3 MB/s (a 4 KiB answer in ~1 ms), so a queue of them is short.
const MAX_CONCURRENT_COUNTS: usize = 1;

/// The run's tokenizer and the permits its counts take.
#[derive(Debug, Clone)]
pub struct AnswerCounter {
    tokenizer: Arc<CliTokenizer>,
    permits: Arc<Semaphore>,
}

impl AnswerCounter {
    pub fn new(tokenizer: Arc<CliTokenizer>) -> AnswerCounter {
        AnswerCounter {
            tokenizer,
            permits: Arc::new(Semaphore::new(MAX_CONCURRENT_COUNTS)),
        }
    }

    /// The tokenizer's count of `outcome`'s answer where the server sent no output usage
    /// ([`count_answer`]), counted on a blocking thread; `outcome` comes back with it. An
    /// error (the tokenizer's) ends the run, as it did on the driver's task.
    pub async fn count(&self, outcome: Outcome) -> anyhow::Result<(Outcome, Option<u64>)> {
        let usage = outcome.timeline.usage().and_then(|u| u.output_tokens);
        if outcome.answer.is_none() || usage.is_some() {
            return Ok((outcome, None));
        }
        let _permit = self.permits.acquire().await?;
        let tokenizer = Arc::clone(&self.tokenizer);
        let (outcome, counted) = tokio::task::spawn_blocking(move || {
            let counted = count_answer(&*tokenizer, &outcome);
            (outcome, counted)
        })
        .await?;
        Ok((outcome, counted?))
    }
}
