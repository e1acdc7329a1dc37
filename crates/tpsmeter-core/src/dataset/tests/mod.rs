#![allow(clippy::unwrap_used)]
//! The dataset's tests, by what they check: reading entries (`reading.rs`), naming what is
//! wrong with a file (`faults.rs`), and the prompt plan a dataset makes (`plan.rs`).

mod faults;
mod plan;
mod reading;

use super::*;
use crate::message::Role;
use crate::prompts::PromptPlan;
use crate::spec::CacheBust;

pub(super) fn parse(text: &str) -> Result<Dataset> {
    Dataset::parse("d.jsonl", text.as_bytes())
}

/// The error of `text` as (line, entry, field, reason).
pub(super) fn fault(text: &str) -> (Option<u64>, Option<u64>, Option<String>, String) {
    match parse(text).unwrap_err() {
        CoreError::InvalidDataset {
            line,
            entry,
            field,
            reason,
        } => (line, entry, field, reason),
        other => panic!("{other}"),
    }
}

pub(super) fn options(seed: Option<u64>) -> BenchOptions {
    BenchOptions {
        seed,
        ..crate::options::tests::options()
    }
}
