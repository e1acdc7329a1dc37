//! Shared by the `stream_*` tests: the golden stream table and a helper that runs a
//! parser over a body split into given chunks.

// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use tpsmeter_core::{Api, CoreError, StreamEvent, StreamParser};

/// How a golden stream ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// `finish()` is `Ok` (end marker, Gemini's rule, or an in-stream error).
    Clean,
    /// `finish()` is `TruncatedStream`.
    Truncated,
}

/// Every golden stream: file stem, API, expected end.
pub const GOLDEN: &[(&str, Api, End)] = &[
    ("openai_chat", Api::OpenaiChat, End::Clean),
    ("openai_chat_tool_call", Api::OpenaiChat, End::Clean),
    ("openai_chat_error", Api::OpenaiChat, End::Clean),
    ("openai_chat_truncated", Api::OpenaiChat, End::Truncated),
    ("openai_completions", Api::OpenaiCompletions, End::Clean),
    ("openai_responses", Api::OpenaiResponses, End::Clean),
    (
        "openai_responses_incomplete",
        Api::OpenaiResponses,
        End::Clean,
    ),
    ("openai_responses_failed", Api::OpenaiResponses, End::Clean),
    ("openai_responses_error", Api::OpenaiResponses, End::Clean),
    ("anthropic", Api::Anthropic, End::Clean),
    ("anthropic_error", Api::Anthropic, End::Clean),
    ("gemini", Api::Gemini, End::Clean),
    ("gemini_error", Api::Gemini, End::Clean),
    ("gemini_truncated", Api::Gemini, End::Truncated),
    ("ollama_chat", Api::OllamaChat, End::Clean),
    ("ollama_generate", Api::OllamaGenerate, End::Clean),
    ("ollama_error", Api::OllamaGenerate, End::Clean),
    ("vercel_ui", Api::VercelUi, End::Clean),
    ("vercel_ui_tool_call", Api::VercelUi, End::Clean),
    ("vercel_ui_error", Api::VercelUi, End::Clean),
];

/// Every golden stream's files, embedded at compile time because the tests also run in a
/// browser (`cargo xtask browser-test`), where there is no file system: stem, extension of
/// the wire bytes, wire bytes, expected events.
macro_rules! embed {
    ($($stem:literal: $ext:literal),* $(,)?) => {
        const FILES: &[(&str, &str, &[u8], &str)] = &[$((
            $stem,
            $ext,
            include_bytes!(concat!($stem, ".", $ext)),
            include_str!(concat!($stem, ".expected.jsonl")),
        )),*];
    };
}

embed! {
    "openai_chat": "sse",
    "openai_chat_tool_call": "sse",
    "openai_chat_error": "sse",
    "openai_chat_truncated": "sse",
    "openai_completions": "sse",
    "openai_responses": "sse",
    "openai_responses_incomplete": "sse",
    "openai_responses_failed": "sse",
    "openai_responses_error": "sse",
    "anthropic": "sse",
    "anthropic_error": "sse",
    "gemini": "sse",
    "gemini_error": "sse",
    "gemini_truncated": "sse",
    "ollama_chat": "ndjson",
    "ollama_generate": "ndjson",
    "ollama_error": "ndjson",
    "vercel_ui": "sse",
    "vercel_ui_tool_call": "sse",
    "vercel_ui_error": "sse",
}

fn file(stem: &str) -> (&'static str, &'static [u8], &'static str) {
    FILES
        .iter()
        .find(|f| f.0 == stem)
        .map(|&(_, ext, wire, expected)| (ext, wire, expected))
        .unwrap_or_else(|| panic!("golden stream {stem} is not embedded: add it to `embed!`"))
}

/// The wire bytes of golden stream `stem`.
pub fn body(stem: &str, api: Api) -> Vec<u8> {
    let (ext, wire, _) = file(stem);
    let want = if api.is_ndjson() { "ndjson" } else { "sse" };
    assert_eq!(ext, want, "{stem}: {api:?} streams are .{want} files");
    wire.to_vec()
}

/// The expected events of golden stream `stem` (one JSON `StreamEvent` per line).
pub fn expected(stem: &str) -> Vec<StreamEvent> {
    let (_, _, text) = file(stem);
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{stem}: {e}: {l}")))
        .collect()
}

/// Events up to the first error, and how the stream ended (the first error, if any).
pub type Outcome = (Vec<StreamEvent>, Result<(), CoreError>);

/// Feeds `body` cut at the ascending offsets `cuts`, then finishes.
pub fn run_cuts(api: Api, body: &[u8], cuts: &[usize]) -> Outcome {
    let mut chunks = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for &cut in cuts {
        chunks.push(&body[start..cut]);
        start = cut;
    }
    chunks.push(&body[start..]);
    run_chunks(api, &chunks)
}

/// Feeds each chunk in turn, then finishes.
pub fn run_chunks(api: Api, chunks: &[&[u8]]) -> Outcome {
    let mut parser = StreamParser::new(api);
    let mut events = Vec::new();
    for chunk in chunks {
        match parser.feed(chunk) {
            Ok(evs) => events.extend(evs),
            Err(e) => return (events, Err(e)),
        }
    }
    match parser.finish() {
        Ok(evs) => {
            events.extend(evs);
            (events, Ok(()))
        }
        Err(e) => (events, Err(e)),
    }
}
