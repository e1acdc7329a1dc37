//! Datasets: each request of a run drawn from a file of prompts or conversations
//! (`tpsmeter bench --dataset F`, `bench({ dataset })`), parsed from its bytes and sampled
//! the same way natively and in the browser.
//!
//! **The file.** Two containers, told apart by the first byte that is not whitespace (after
//! an optional UTF-8 byte-order mark): `[` opens one JSON array of entries (ShareGPT's file,
//! [`DatasetFormat::Json`]); anything else is JSON Lines, one entry per line
//! ([`DatasetFormat::Jsonl`]; blank lines are not entries). A JSON Lines file cannot start
//! with `[`, so the detection cannot be wrong about a well-formed file.
//!
//! **An entry** is a JSON object of one of three shapes (other keys, such as ShareGPT's
//! `id`, are ignored):
//! - `{"prompt": "..."}`: one user message.
//! - `{"messages": [{"role": ..., "content": "..."}, ...]}`: OpenAI's chat shape. Leading
//!   `system` (or `developer`) messages are the request's system text; the conversation
//!   then starts with a `user` message and is sent up to its last `user` message. An
//!   `assistant` message after that is the reference answer: not sent, its length gives the
//!   output length (as ShareGPT's answers do).
//! - `{"conversations": [{"from": "human" | "gpt" | "system", "value": "..."}, ...]}`:
//!   ShareGPT's shape (turns written `{"role", "content"}` are read too). As in vLLM's
//!   `bench serve`, one turn is sent: the first `human` turn, and the first `gpt` turn
//!   after it gives the output length; leading `system` turns are the system text. An entry
//!   with no human turn, or an empty one, is skipped and counted
//!   ([`Dataset::skipped`], in the report): ShareGPT's published file has such entries.
//!
//! Any entry may add `"system": "..."` (not with system messages of its own), and
//! `"max_tokens"` or `"output_tokens"`: the request's output cap, which takes precedence
//! over the reference answer's length; an entry with neither gets the run's `max_tokens`.
//! A run's `max_tokens_limit` (the benchmark page sets its form's limit) lowers every
//! entry's cap to it: a dataset a link names cannot ask for more than the form allows.
//! A reference answer counts as ⌈characters / 4⌉ tokens ([`estimate_tokens`]), the common
//! rule of thumb for English: an estimate, not a tokenizer count. A run with a tokenizer
//! (`--tokenizer`) counts the answer with it instead, as vLLM's `bench serve` does with
//! ShareGPT, for answers up to [`MAX_COUNTED_ANSWER_BYTES`]; the report's dataset record
//! then names the tokenizer.
//!
//! **Errors.** A malformed entry is an [`CoreError::InvalidDataset`] that names its line
//! (and, in an array, its entry number) and the field; nothing malformed is skipped. Every
//! length is capped ([`MAX_DATASET_BYTES`], [`MAX_ENTRY_BYTES`], [`MAX_ENTRIES`],
//! [`MAX_MESSAGES`], [`MAX_OUTPUT_TOKENS`]); JSON nesting stops at serde_json's 128 levels.
//!
//! **Sampling** is [`Order`]'s: without replacement, one pass through a permutation of the
//! entries, then another permutation, and so on.
//!
//! No I/O: the caller reads the file (or fetches the URL) and hands in its bytes.

mod array;
mod entry;
mod jsonl;
mod sample;

use std::fmt;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::error::{CoreError, Result};
use crate::message::Message;
use crate::prompts::RequestInput;
use crate::redact::redact_url;
pub use crate::report::DatasetFormat;
use crate::report::PromptSource;
use crate::shard::Shard;
use crate::spec::BenchOptions;
use crate::tokens::TokenCounter;

pub use sample::Order;

/// Cap on a dataset file: 1 GiB. ShareGPT's most used file
/// (`ShareGPT_V3_unfiltered_cleaned_split.json`) is about 0.7 GB; a page must hold the bytes
/// twice (JavaScript's and the wasm's copy) besides the parsed prompts.
pub const MAX_DATASET_BYTES: u64 = 1 << 30;
/// Cap on one entry (a JSON Lines line, an element of an array): 16 MiB, far past a
/// million-token conversation (about 4 MB of text).
pub const MAX_ENTRY_BYTES: usize = 16 << 20;
/// Cap on the entries of a file: LMSYS-Chat-1M, among the largest published chat logs,
/// has one million.
pub const MAX_ENTRIES: usize = 4 << 20;
/// Cap on the messages (or ShareGPT turns) of one entry.
pub const MAX_MESSAGES: usize = 4096;
/// Cap on an entry's output length, tokens.
pub const MAX_OUTPUT_TOKENS: u32 = 1 << 20;

/// Longest reference answer kept for a tokenizer to count (bytes). Longer ones keep the
/// estimate: their count is far past any output cap a benchmark asks for, and keeping a
/// whole ShareGPT file's answers would double the memory a dataset takes.
pub const MAX_COUNTED_ANSWER_BYTES: usize = 64 << 10;
/// Cap on the dataset's name as the report keeps it (a path or URL).
const MAX_NAME_CHARS: usize = 1000;

/// How a dataset's bytes say which container they are (the format itself is the report's
/// data: [`DatasetFormat`]).
impl DatasetFormat {
    /// The container of `bytes`: an array when the first byte that is not whitespace is `[`.
    pub fn detect(bytes: &[u8]) -> DatasetFormat {
        match strip_bom(bytes).iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'[') => DatasetFormat::Json,
            _ => DatasetFormat::Jsonl,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DatasetFormat::Jsonl => "jsonl",
            DatasetFormat::Json => "json",
        }
    }
}

/// One entry: what a request sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The entry's system text, sent instead of the run's.
    pub system: Option<String>,
    /// The conversation: it starts and ends with a user message.
    pub messages: Vec<Message>,
    /// The request's output cap, instead of the run's: the entry's own, or its reference
    /// answer's length estimated (see [`estimate_tokens`]).
    pub output_tokens: Option<u32>,
    /// The reference answer when it set `output_tokens` (and is at most
    /// [`MAX_COUNTED_ANSWER_BYTES`]): a run with a tokenizer counts it instead.
    pub answer: Option<String>,
}

/// A parsed dataset.
#[derive(Clone, PartialEq, Eq)]
pub struct Dataset {
    /// As the report names it: the path or file name, or the URL without credentials.
    name: String,
    /// SHA-256 of the bytes, lower-case hex.
    sha256: String,
    bytes: u64,
    format: DatasetFormat,
    entries: Vec<Entry>,
    /// Well-formed entries without a prompt (ShareGPT conversations with no human turn).
    skipped: u64,
}

impl Dataset {
    /// Parses `bytes`, named `name` in the report (a path, a file name or a URL; a URL's
    /// credentials are removed). Errors name the line and the field.
    pub fn parse(name: &str, bytes: &[u8]) -> Result<Dataset> {
        Dataset::parse_capped(name, bytes, Caps::DEFAULT)
    }

    /// [`Dataset::parse`] under other caps on entries (tests reach them with small files).
    pub(crate) fn parse_capped(name: &str, bytes: &[u8], caps: Caps) -> Result<Dataset> {
        if bytes.len() as u64 > caps.bytes {
            return Err(whole(format!(
                "the file is {} bytes, over the cap of {} bytes",
                bytes.len(),
                caps.bytes
            )));
        }
        let format = DatasetFormat::detect(bytes);
        let text = strip_bom(bytes);
        let mut entries = Vec::new();
        let mut skipped = 0u64;
        let mut add = |e: Option<Entry>| match e {
            Some(e) => entries.push(e),
            None => skipped += 1,
        };
        match format {
            DatasetFormat::Jsonl => jsonl::parse(text, caps, &mut add)?,
            DatasetFormat::Json => array::parse(text, caps, &mut add)?,
        }
        if entries.is_empty() {
            return Err(whole(if skipped == 0 {
                "the file holds no entries".into()
            } else {
                format!("none of its {skipped} entries has a prompt (a non-empty human turn)")
            }));
        }
        let name = if name.contains("://") {
            redact_url(name)
        } else {
            name.to_owned()
        };
        Ok(Dataset {
            name: name.chars().take(MAX_NAME_CHARS).collect(),
            sha256: hex(&Sha256::digest(bytes)),
            bytes: bytes.len() as u64,
            format,
            entries,
            skipped,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// SHA-256 of the file's bytes, lower-case hex.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    pub fn format(&self) -> DatasetFormat {
        self.format
    }

    /// The entries requests are drawn from, in file order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Entries left out for want of a prompt.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// The report's record of this dataset; `tokenizer` the run's, which counted its
    /// reference answers.
    pub fn prompt_source(&self, tokenizer: Option<String>) -> PromptSource {
        PromptSource::Dataset {
            name: self.name.clone(),
            sha256: self.sha256.clone(),
            bytes: self.bytes,
            format: self.format,
            entries: self.entries.len() as u64,
            skipped: self.skipped,
            tokenizer,
        }
    }
}

impl fmt::Debug for Dataset {
    /// A summary: the entries can be a gigabyte of text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dataset")
            .field("name", &self.name)
            .field("sha256", &self.sha256)
            .field("format", &self.format)
            .field("entries", &self.entries.len())
            .field("skipped", &self.skipped)
            .finish()
    }
}

/// A dataset and the order a run draws its entries in: what a
/// [`PromptPlan`](crate::PromptPlan) holds when the run has a dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct Draw {
    dataset: Arc<Dataset>,
    order: Order,
    /// The options' `max_tokens_limit`: no entry asks for a larger output cap.
    max_tokens_limit: u32,
}

impl Draw {
    /// The draw of `dataset` for a run with `options` on `shard`; `random` keys the order
    /// when the options give no seed. Refuses the options that make prompts of their own.
    pub fn new(
        dataset: Dataset,
        options: &BenchOptions,
        shard: Option<Shard>,
        random: u64,
    ) -> Result<Draw> {
        // The workload first: it sets the input tokens itself.
        let conflict = [
            ("workload", options.workload.is_some()),
            ("prompt", options.prompt.is_some()),
            ("input tokens", options.input_tokens.is_some()),
            ("shared prefix", options.shared_prefix.is_some()),
        ];
        if let Some((what, _)) = conflict.iter().find(|(_, given)| *given) {
            return Err(CoreError::InvalidSpec {
                what: "dataset",
                input: dataset.name.chars().take(40).collect(),
                reason: format!(
                    "a dataset gives each request its messages: it cannot go with a {what}"
                ),
            });
        }
        let order = Order::new(options.prompt_seed(), random, dataset.entries.len(), shard);
        Ok(Draw {
            dataset: Arc::new(dataset),
            order,
            max_tokens_limit: options.max_tokens_limit.unwrap_or(MAX_OUTPUT_TOKENS),
        })
    }

    /// What request `index` sends: its entry, with `mark` (when prompts are marked) before
    /// the first user message's text.
    /// What request `index` sends; with `counter` (the run's tokenizer) a reference
    /// answer's length is its count of it rather than the estimate.
    pub fn input(
        &self,
        index: u64,
        mark: Option<&str>,
        counter: Option<&dyn TokenCounter>,
    ) -> Result<RequestInput> {
        let entry = &self.dataset.entries[self.order.entry(index)];
        let mut messages = entry.messages.clone();
        if let (Some(mark), Some(first)) = (mark, messages.first_mut()) {
            first.content = format!("{mark} {}", first.content);
        }
        let counted = match (counter, &entry.answer) {
            (Some(counter), Some(answer)) => Some(counter.count(answer)?)
                .filter(|n| *n > 0)
                .map(|n| n.min(MAX_OUTPUT_TOKENS)),
            _ => None,
        };
        Ok(RequestInput {
            messages,
            max_tokens: counted
                .or(entry.output_tokens)
                .map(|n| n.min(self.max_tokens_limit)),
            system: entry.system.clone(),
        })
    }

    pub fn dataset(&self) -> &Dataset {
        &self.dataset
    }

    pub fn order(&self) -> &Order {
        &self.order
    }
}

/// Tokens a reference answer of `text` stands for: ⌈characters / 4⌉, at least 1 and at most
/// [`MAX_OUTPUT_TOKENS`]; `None` for an empty answer (the run's cap applies).
pub fn estimate_tokens(text: &str) -> Option<u32> {
    let chars = text.chars().count();
    (chars > 0).then(|| {
        u32::try_from(chars.div_ceil(4)).map_or(MAX_OUTPUT_TOKENS, |t| t.min(MAX_OUTPUT_TOKENS))
    })
}

/// `bytes` without a leading UTF-8 byte-order mark.
fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
}

/// An error about the whole file.
fn whole(reason: String) -> CoreError {
    CoreError::InvalidDataset {
        line: None,
        entry: None,
        field: None,
        reason,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The caps the container parsers apply.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caps {
    /// Bytes per file.
    pub bytes: u64,
    /// Entries per file.
    pub entries: usize,
    /// Bytes per entry.
    pub entry_bytes: usize,
}

impl Caps {
    const DEFAULT: Caps = Caps {
        bytes: MAX_DATASET_BYTES,
        entries: MAX_ENTRIES,
        entry_bytes: MAX_ENTRY_BYTES,
    };
}

/// Where in the file an entry is, for its errors.
#[derive(Debug, Clone, Copy)]
pub(crate) struct At {
    pub line: u64,
    /// The entry's number in an array (from 1); `None` in JSON Lines, where the line says it.
    pub entry: Option<u64>,
}

impl At {
    pub fn err(self, field: Option<String>, reason: impl Into<String>) -> CoreError {
        CoreError::InvalidDataset {
            line: Some(self.line),
            entry: self.entry,
            field,
            reason: reason.into(),
        }
    }
}

#[cfg(test)]
mod tests;
