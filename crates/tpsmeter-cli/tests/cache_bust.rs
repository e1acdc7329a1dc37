//! Unique prompts (issue 27): what `tpsmeter bench` sends, read off the wire by a server that
//! keeps every request body, and what a server with a prompt cache makes of it.
//!
//! - Every request of a run carries a mark of its own (`[run <id> #<n>]`) before its prompt;
//!   `--cache-bust off` sends the same body every time; `--seed` gives the same bodies run
//!   after run; `--shared-prefix N` puts the same N tokens before each mark.
//! - On `tpsmeter serve` (the real model; it keeps a slot's prompt for the next request),
//!   marked prompts take the whole prefill while `--cache-bust off` gets the cached TTFT.
//!   That test loads `TPSMETER_MODEL` with `--backend auto` (the CPU where lavapipe is
//!   all); without the model it fails when `TPSMETER_REQUIRE_ASSETS=1` (CI) and skips
//!   otherwise.
#![allow(clippy::unwrap_used)]

mod capture;
mod common;
mod server_support;

use std::io::Read;

use capture::Capture;
use common::{argv, bench, measured};
use serde_json::Value;
use server_support::{assets, serve_model};
use tpsmeter_core::CacheBust;

async fn run(capture: &Capture, rest: &[&str]) -> tpsmeter_core::Report {
    let mut args = argv("openai-chat", &capture.url, &["--prompt", "Hello there"]);
    args.extend_from_slice(rest);
    bench(&args).await.report
}

#[tokio::test]
async fn every_request_carries_its_own_mark_and_off_sends_the_same_body() {
    let capture = Capture::start();
    let report = run(
        &capture,
        &["--concurrency", "2", "--requests", "6", "--warmup", "1"],
    )
    .await;
    let prompts = capture.prompts();
    assert_eq!(prompts.len(), 7, "6 measured and a warm-up");
    let id = report.config.prompt_run_id.clone().unwrap();
    assert_eq!(report.config.cache_bust, Some(CacheBust::Prefix));
    let mut marks: Vec<u64> = prompts
        .iter()
        .map(|p| {
            let rest = p
                .strip_prefix(&format!("[run {id} #"))
                .unwrap_or_else(|| panic!("{p}"));
            let (n, prompt) = rest.split_once("] ").unwrap();
            assert_eq!(prompt, "Hello there");
            n.parse().unwrap()
        })
        .collect();
    marks.sort_unstable();
    assert_eq!(marks, (0..7).collect::<Vec<u64>>(), "one mark per request");

    // Another run, another id: nothing of one run is a cached prefix for the next.
    let again = Capture::start();
    let second = run(&again, &["--requests", "2"]).await;
    assert_ne!(second.config.prompt_run_id, Some(id));

    let off = Capture::start();
    let report = run(&off, &["--requests", "3", "--cache-bust", "off"]).await;
    assert_eq!(off.prompts(), vec!["Hello there"; 3]);
    assert_eq!(report.config.cache_bust, Some(CacheBust::Off));
    assert_eq!(report.config.prompt_run_id, None);
}

#[tokio::test]
async fn a_seed_sends_the_same_bodies_run_after_run() {
    let (a, b) = (Capture::start(), Capture::start());
    for c in [&a, &b] {
        run(c, &["--requests", "3", "--seed", "5"]).await;
    }
    let bodies = |c: &Capture| c.bodies.lock().unwrap().clone();
    assert_eq!(bodies(&a), bodies(&b), "byte for byte");
    assert_eq!(a.prompts().len(), 3);
}

#[tokio::test]
async fn a_shared_prefix_comes_before_each_mark() {
    let capture = Capture::start();
    let args = argv(
        "openai-chat",
        &capture.url,
        &[
            "--input-tokens",
            "50",
            "--shared-prefix",
            "20",
            "--requests",
            "3",
        ],
    );
    let report = bench(&args).await.report;
    assert_eq!(report.config.shared_prefix_tokens, Some(20));
    let prompts = capture.prompts();
    let shared: Vec<String> = prompts
        .iter()
        .map(|p| p.split(" [run ").next().unwrap().to_owned())
        .collect();
    assert_eq!(shared[0].split(' ').count(), 20, "{}", prompts[0]);
    assert!(
        shared.iter().all(|s| *s == shared[0]),
        "the same 20 words in each"
    );
    let tails: std::collections::HashSet<&str> = prompts
        .iter()
        .map(|p| p.split_once("] ").unwrap().1)
        .collect();
    assert_eq!(tails.len(), 1, "the same 30 words after each mark");
    assert_eq!(
        prompts
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len(),
        3
    );
}

/// Median of `xs`.
fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// `tpsmeter serve`'s own prefill time for a fresh prompt of about `words` tokens (its
/// `timings.prompt_ms`, with none of the prompt's own text in its cache).
fn server_prefill_ms(port: u16, words: u32) -> f64 {
    let prompt = format!("fresh {}", tpsmeter_core::prompt::synthesize(words));
    let body = serde_json::json!({
        "model": "local",
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": 1,
        "stream": false,
    })
    .to_string();
    let mut s = server_support::post_chat(port, &body);
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (_, json) = raw.split_once("\r\n\r\n").unwrap();
    let v: Value = serde_json::from_str(json).unwrap();
    // A slot keeps at most the chat template's preamble (24 tokens for SmolLM2's).
    assert!(
        v["timings"]["cache_n"].as_u64().unwrap() <= 32,
        "a fresh prompt: {v}"
    );
    v["timings"]["prompt_ms"].as_f64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_caching_server_marked_prompts_pay_the_prefill_and_off_does_not() {
    let Some([model]) = assets("cache_bust", ["TPSMETER_MODEL"]) else {
        return;
    };
    let (_server, port) = serve_model(&model, "1");
    const WORDS: u32 = 256;
    let before = server_prefill_ms(port, WORDS);
    let url = format!("http://127.0.0.1:{port}");
    let words = WORDS.to_string();
    let ttft = |report: &tpsmeter_core::Report| {
        median(
            measured(report)
                .iter()
                .map(|r| r.metrics.ttft_ms.unwrap())
                .collect(),
        )
    };
    let args = |bust: &'static str| {
        let mut a = vec!["--api", "openai-chat", "--url", &url, "--model", "local"];
        a.extend_from_slice(&["--input-tokens", &words, "--max-tokens", "2"]);
        a.extend_from_slice(&["--requests", "3", "--warmup", "1", "--cache-bust", bust]);
        a
    };
    let marked = bench(&args("prefix")).await.report;
    let cached = bench(&args("off")).await.report;
    let after = server_prefill_ms(port, WORDS);
    // The lesser of two fresh prefills, one before and one after: lavapipe's speed follows
    // the machine's load, which the bounds must allow for.
    let prefill = before.min(after);
    let (t_marked, t_cached) = (ttft(&marked), ttft(&cached));
    eprintln!(
        "{WORDS}-token prompts on tpsmeter serve: server prefill {before:.0} / {after:.0} ms \
         (before / after); median TTFT marked {t_marked:.0} ms, --cache-bust off {t_cached:.0} ms"
    );
    // Marked: every request prefills its whole prompt, as a fresh one does (all but the chat
    // template's preamble and the mark's first characters, which the slot may keep).
    assert!(
        t_marked >= 0.6 * prefill,
        "marked {t_marked} ms vs prefill {prefill} ms"
    );
    // Off: the slot holds the repeated prompt; only its last token runs.
    assert!(
        t_cached <= 0.2 * prefill,
        "cached {t_cached} ms vs prefill {prefill} ms"
    );
    assert!(
        t_marked >= 8.0 * t_cached,
        "marked {t_marked} ms vs cached {t_cached} ms"
    );
    // The marks are counted in the server's usage: a few tokens more than the bare prompt.
    let tokens = |r: &tpsmeter_core::Report| measured(r)[0].input_tokens.unwrap();
    assert!(
        tokens(&marked) > tokens(&cached),
        "{} vs {}",
        tokens(&marked),
        tokens(&cached)
    );
}
