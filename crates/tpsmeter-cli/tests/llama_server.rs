//! Interop with a real llama.cpp `llama-server`: the OpenAI-chat stream it sends is timed
//! and counted correctly.
//!
//! Needs `TPSMETER_LLAMA_SERVER` (the binary) and `TPSMETER_MODEL` (a GGUF). Without them
//! the test fails when `TPSMETER_REQUIRE_ASSETS=1` (CI) and skips with a message otherwise.
#![allow(clippy::unwrap_used)]

mod common;
mod server_support;

use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::{bench, measured};
use server_support::Server;
use tpsmeter_core::metrics::TokenCountSource;

fn assets() -> Option<(PathBuf, PathBuf)> {
    let [server, model] = server_support::assets(
        "llama-server interop",
        ["TPSMETER_LLAMA_SERVER", "TPSMETER_MODEL"],
    )?;
    Some((server, model))
}

/// Starts llama-server on a free port and waits for `/health` to answer 200.
async fn start(bin: &PathBuf, model: &PathBuf) -> (Server, String) {
    let port = server_support::free_port();
    let mut cmd = Command::new(bin);
    cmd.arg("-m")
        .arg(model)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--parallel", "4", "--ctx-size", "4096", "--threads", "2"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // The wait polls with blocking sleeps: off the runtime's threads.
    let server =
        tokio::task::spawn_blocking(move || server_support::start(&mut cmd, port, "llama-server"))
            .await
            .unwrap();
    (server, format!("http://127.0.0.1:{port}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llama_server_stream_is_timed_and_counted() {
    let Some((bin, model)) = assets() else {
        return;
    };
    let (_server, url) = start(&bin, &model).await;
    let result = bench(&[
        "--api",
        "openai-chat",
        "--url",
        &url,
        "--model",
        "SmolLM2-135M-Instruct",
        "--concurrency",
        "1,4",
        "--requests",
        "4",
        "--warmup",
        "1",
        "--max-tokens",
        "16",
        // Every request runs to max_tokens: no end-of-sequence token, which usage counts
        // but which never arrives as a content chunk.
        "--ignore-eos",
        "--prompt",
        "Count from one to twenty in words.",
    ])
    .await;
    let records = measured(&result.report);
    assert_eq!(records.len(), 8);
    for r in records {
        assert!(r.ok(), "{:?}", r.error);
        let m = &r.metrics;
        // llama-server reports usage (include_usage) and sends one token per chunk.
        assert_eq!(r.token_source, TokenCountSource::Usage);
        assert_eq!(r.output_tokens, 16);
        assert_eq!(
            m.chunk_tokens, r.output_tokens,
            "usage equals counted content chunks"
        );
        assert_eq!(m.usage_chunk_discrepancy, Some(0));
        let ttft = m.ttft_ms.unwrap();
        let e2e = m.e2e_ms.unwrap();
        assert!(ttft > 0.0 && ttft < e2e, "ttft {ttft} e2e {e2e}");
        assert_eq!(m.itl_chunk_ms.len() as u64, m.output_chunks - 1);
        assert!(m.itl_chunk_ms.iter().all(|&g| g >= 0.0));
        // Server-side timings (`timings.predicted_ms`) captured.
        assert!(
            m.server_decode_tps.is_some_and(|t| t > 0.0),
            "server timings missing: {m:?}"
        );
        assert!(r.input_tokens.is_some_and(|n| n > 0));
    }
}
