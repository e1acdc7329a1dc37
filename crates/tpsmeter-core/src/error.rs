//! The one error type of this crate.

use crate::quoted::Quoted;

/// Everything that can go wrong while decoding or interpreting a stream, or building a
/// request. Variants carry the offending values so the message names the culprit.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CoreError {
    /// A single line (SSE or NDJSON) grew past its cap before its terminator arrived.
    #[error("line exceeds the limit of {limit} bytes")]
    LineTooLong { limit: usize },
    /// One SSE event's accumulated `data` grew past its cap.
    #[error("event data exceeds the limit of {limit} bytes")]
    EventTooLarge { limit: usize },
    /// Bytes that are not UTF-8 where the protocol requires UTF-8.
    #[error("invalid UTF-8 at byte {offset} of the stream")]
    InvalidUtf8 { offset: u64 },
    /// A payload that should be JSON is not, or has the wrong shape.
    #[error(
        "malformed JSON in {context}: {message}; payload starts {}",
        Quoted(excerpt)
    )]
    MalformedJson {
        context: &'static str,
        message: String,
        excerpt: String,
    },
    /// The stream ended before the protocol's end marker (`[DONE]`, `message_stop`, ...).
    #[error("stream ended before its end marker ({expected})")]
    TruncatedStream { expected: &'static str },
    /// A request option the chosen API cannot express, or a malformed base URL.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// A user-supplied specification (SLO list, concurrency list, ...) that does not parse.
    #[error("invalid {what} {}: {reason}", Quoted(input))]
    InvalidSpec {
        what: &'static str,
        input: String,
        reason: String,
    },
    /// A run's option that cannot be taken (the run spec's `OptionError`, its options named
    /// as `bench()` names them); `field` is the option's key.
    #[error("{message}")]
    InvalidOption {
        field: Option<&'static str>,
        message: String,
    },
    /// A report handed to `report::merge` that is not a whole shard report of this build.
    #[error("report #{report} cannot be merged: {reason}")]
    NotMergeable { report: usize, reason: String },
    /// Two reports handed to `report::merge` come from different runs.
    #[error(
        "report #{report} is not a shard of the same run as report #1: its {what} is {found}, \
         report #1's is {expected}"
    )]
    ShardMismatch {
        report: usize,
        what: &'static str,
        expected: String,
        found: String,
    },
    /// Two reports handed to `report::merge` are the same shard.
    #[error("shard {index}/{count} is given twice (reports #{first} and #{second})")]
    DuplicateShard {
        index: u32,
        count: u32,
        first: usize,
        second: usize,
    },
    /// The reports handed to `report::merge` leave out some shards of the run.
    #[error(
        "shards {} of {count} are missing: merge needs every shard's report",
        list(missing)
    )]
    MissingShards { missing: Vec<u32>, count: u32 },
    /// A report written with a schema version this build does not read.
    #[error("report schema version {found} is not supported (this build reads {supported})")]
    UnsupportedSchemaVersion { found: u64, supported: u32 },
    /// A dataset (`--dataset`) that cannot be used: malformed, or past one of its caps.
    /// `line` (from 1) and `entry` (from 1, of a JSON array) say where, `field` which value.
    #[error("dataset{}: {reason}", dataset_place(*line, *entry, field.as_deref()))]
    InvalidDataset {
        line: Option<u64>,
        entry: Option<u64>,
        field: Option<String>,
        reason: String,
    },
}

/// ` line 12, field `messages[1].role`` and the like: where in a dataset a fault is.
fn dataset_place(line: Option<u64>, entry: Option<u64>, field: Option<&str>) -> String {
    let mut out = String::new();
    if let Some(l) = line {
        out.push_str(&format!(" line {l}"));
    }
    if let Some(e) = entry {
        out.push_str(&format!(
            "{} entry {e}",
            if line.is_some() { "," } else { "" }
        ));
    }
    if let Some(f) = field {
        let sep = if line.is_some() || entry.is_some() {
            ","
        } else {
            ""
        };
        out.push_str(&format!("{sep} field `{f}`"));
    }
    out
}

/// `0, 1, 2`, at most the first 10 and a count of the rest: a missing-shard list of a
/// large run must not fill the terminal.
fn list(items: &[u32]) -> String {
    const SHOWN: usize = 10;
    let mut s: Vec<String> = items.iter().take(SHOWN).map(u32::to_string).collect();
    if items.len() > SHOWN {
        s.push(format!("and {} more", items.len() - SHOWN));
    }
    s.join(", ")
}

/// Shorthand used throughout the crate.
pub type Result<T, E = CoreError> = std::result::Result<T, E>;
