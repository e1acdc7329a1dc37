//! Counting answers that arrived without usage (`--tokenizer`), off the driver's task.
//!
//! A tokenizer's count is CPU work and memory that grow with the answer: 4 MiB of one digit
//! took 10 s and 1.6 GB. Counted on the driver's task, it held up every scheduled send and
//! every completion behind it (the next request's start by 8 s in the issue). So the driver
//! loop completes the request at once (its slot and its conversation go on) and counts the
//! answer here, on tokio's blocking threads, one count at a time; the record is final when
//! the count is in (`LoadDriver::counted`). What is counted is the kept part of the answer,
//! at most [`tpsmeter_core::answer::MAX_KEPT_ANSWER_BYTES`], so a count's time and memory
//! are bounded too.

use std::sync::Arc;

use tokio::sync::Semaphore;
use tpsmeter_core::answer::{KeptAnswer, count_answer};

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

    /// The tokenizer's count of `answer` ([`count_answer`]), on a blocking thread, once a
    /// permit is free.
    pub async fn count(&self, answer: KeptAnswer) -> anyhow::Result<u64> {
        let _permit = self.permits.acquire().await?;
        let tokenizer = Arc::clone(&self.tokenizer);
        let counted = tokio::task::spawn_blocking(move || count_answer(&*tokenizer, &answer));
        Ok(counted.await??)
    }
}
