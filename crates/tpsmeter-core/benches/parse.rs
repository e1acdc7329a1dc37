//! Parser throughput per protocol: MB/s of body and `StreamEvent`s/s, over a large
//! synthetic stream in each API's wire format, fed in realistic network chunk sizes.
//!
//! Two chunkings: random 1–4 KiB chunks (a busy connection, several events per read) and
//! one chunk per wire message (a live token stream, one read per token — the common case
//! when measuring a single request). Each figure is the median of `RUNS` runs; the last
//! column is the best run of the 1–4 KiB case, the figure least disturbed by other load
//! on a shared machine.
//!
//! Run: `cargo bench -p tpsmeter-core --bench parse`.

use std::hint::black_box;
use std::time::Instant;

use tpsmeter_core::{Api, StreamParser};

/// Synthetic body size per protocol.
const TARGET_BYTES: usize = 16 * 1024 * 1024;
/// Runs per figure; the median is printed.
const RUNS: usize = 7;

/// Token-like pieces of text, some multi-byte and some needing JSON escapes.
const WORDS: [&str; 8] = [
    " the", " quick", " brown", " fox", " jumps", " naïve", " café\n", " \"ok\"",
];

fn message(api: Api, i: usize) -> String {
    let text = serde_json::to_string(WORDS[i % WORDS.len()]).unwrap_or_default();
    match api {
        Api::OpenaiChat | Api::Local => format!(
            "data: {{\"id\":\"chatcmpl-abc123\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"llama-3.1-8b-instruct\",\"system_fingerprint\":\"b1234\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{text}}},\"logprobs\":null,\"finish_reason\":null}}],\"usage\":null}}\n\n"
        ),
        Api::OpenaiCompletions => format!(
            "data: {{\"id\":\"cmpl-abc123\",\"object\":\"text_completion\",\"created\":1700000000,\"model\":\"llama-3.1-8b\",\"choices\":[{{\"index\":0,\"text\":{text},\"logprobs\":null,\"finish_reason\":null}}],\"usage\":null}}\n\n"
        ),
        Api::OpenaiResponses => format!(
            "event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"sequence_number\":{i},\"item_id\":\"msg_abc123\",\"output_index\":0,\"content_index\":0,\"delta\":{text},\"logprobs\":[]}}\n\n"
        ),
        Api::Anthropic => format!(
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":{text}}}}}\n\n"
        ),
        Api::Gemini => format!(
            "data: {{\"candidates\": [{{\"content\": {{\"parts\": [{{\"text\": {text}}}],\"role\": \"model\"}},\"index\": 0}}],\"usageMetadata\": {{\"promptTokenCount\": 9,\"candidatesTokenCount\": {i},\"totalTokenCount\": {}}},\"modelVersion\": \"gemini-2.5-flash\"}}\r\n\r\n",
            i + 9
        ),
        Api::OllamaChat => format!(
            "{{\"model\":\"llama3.2\",\"created_at\":\"2025-01-01T00:00:00.000000Z\",\"message\":{{\"role\":\"assistant\",\"content\":{text}}},\"done\":false}}\n"
        ),
        Api::OllamaGenerate => format!(
            "{{\"model\":\"llama3.2\",\"created_at\":\"2025-01-01T00:00:00.000000Z\",\"response\":{text},\"done\":false}}\n"
        ),
        Api::VercelUi => {
            format!("data: {{\"type\":\"text-delta\",\"id\":\"txt-0\",\"delta\":{text}}}\n\n")
        }
    }
}

fn ending(api: Api) -> &'static str {
    match api {
        Api::OpenaiChat | Api::Local | Api::OpenaiCompletions => "data: [DONE]\n\n",
        Api::OpenaiResponses => {
            "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"usage\":{\"input_tokens\":9,\"output_tokens\":100}}}\n\n"
        }
        Api::Anthropic => "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        Api::Gemini => {
            "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \".\"}],\"role\": \"model\"},\"finishReason\": \"STOP\",\"index\": 0}]}\r\n\r\n"
        }
        Api::OllamaChat | Api::OllamaGenerate => {
            "{\"model\":\"llama3.2\",\"done\":true,\"done_reason\":\"stop\",\"eval_count\":100,\"eval_duration\":1000000000}\n"
        }
        Api::VercelUi => {
            "data: {\"type\":\"text-end\",\"id\":\"txt-0\"}\n\ndata: {\"type\":\"finish\"}\n\ndata: [DONE]\n\n"
        }
    }
}

/// The body and the end offset of every wire message in it.
fn synthetic(api: Api) -> (Vec<u8>, Vec<usize>) {
    let mut body = String::with_capacity(TARGET_BYTES + 1024);
    let mut ends = Vec::new();
    let mut i = 0;
    while body.len() < TARGET_BYTES {
        body.push_str(&message(api, i));
        ends.push(body.len());
        i += 1;
    }
    body.push_str(ending(api));
    ends.push(body.len());
    (body.into_bytes(), ends)
}

/// Chunk ends for random 1–4 KiB chunks (fixed-seed LCG: the same split every run).
fn random_chunk_ends(len: usize) -> Vec<usize> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut ends = Vec::new();
    let mut at = 0;
    while at < len {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let size = 1024 + (state >> 33) as usize % (3 * 1024 + 1);
        at = (at + size).min(len);
        ends.push(at);
    }
    ends
}

/// Parses `body` cut at `ends`; returns (seconds, events).
fn run_once(api: Api, body: &[u8], ends: &[usize]) -> (f64, usize) {
    let start = Instant::now();
    let mut parser = StreamParser::new(api);
    let mut events = 0;
    let mut from = 0;
    for &end in ends {
        match parser.feed(black_box(&body[from..end])) {
            Ok(evs) => events += black_box(evs).len(),
            Err(e) => panic!("{api}: synthetic stream failed: {e}"),
        }
        from = end;
    }
    match parser.finish() {
        Ok(evs) => events += evs.len(),
        Err(e) => panic!("{api}: synthetic stream failed at finish: {e}"),
    }
    (start.elapsed().as_secs_f64(), events)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    println!(
        "parser throughput, {} MiB synthetic stream per protocol, median of {RUNS} runs",
        TARGET_BYTES >> 20
    );
    println!(
        "{:<20} {:>9} {:>11} {:>12} {:>12} {:>13} {:>10}",
        "api",
        "msg bytes",
        "1-4KiB MB/s",
        "1-4KiB ev/s",
        "per-msg MB/s",
        "per-msg ev/s",
        "best MB/s"
    );
    for api in Api::ALL {
        let (body, message_ends) = synthetic(api);
        let random_ends = random_chunk_ends(body.len());
        let mut cells = Vec::new();
        let mut best = 0.0f64;
        for ends in [&random_ends, &message_ends] {
            let mut secs = Vec::with_capacity(RUNS);
            let mut events = 0;
            for _ in 0..RUNS {
                let (s, n) = run_once(api, &body, ends);
                secs.push(s);
                events = n;
            }
            if cells.is_empty() {
                let fastest = secs.iter().copied().fold(f64::INFINITY, f64::min);
                best = body.len() as f64 / 1e6 / fastest;
            }
            let s = median(secs);
            cells.push((body.len() as f64 / 1e6 / s, events as f64 / s));
        }
        println!(
            "{:<20} {:>9} {:>11.0} {:>12.0} {:>12.0} {:>13.0} {:>10.0}",
            api.name(),
            body.len() / message_ends.len(),
            cells[0].0,
            cells[0].1,
            cells[1].0,
            cells[1].1,
            best,
        );
    }
}
