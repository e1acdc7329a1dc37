//! `cargo xtask serve-bench`: our engine's server against llama.cpp's under concurrency.
//!
//! Serves SmolLM2-135M with `tpsmeter serve --parallel 8` (continuous batching) and runs
//! `tpsmeter bench` at concurrency 1, 2, 4 and 8, then the same against llama.cpp's
//! `llama-server --parallel 8` on the same GGUF, one after the other (never at once: the
//! machine's cores are the GPU of the one and the CPU of the other). Each bench prints, per
//! level, TTFT percentiles, per-request and aggregate TPS. `--backend gpu|cpu|auto` first
//! chooses where our server runs the model (default `auto`: the CPU where the only adapter is
//! a software one); extra arguments replace the bench settings; `--burst` runs the burst
//! benchmark instead (`serve_burst.rs`: eight new requests at once, TTFT p50 against p99).

use crate::assets;
use crate::demo::{BENCH_PROMPT, free_port, llama_server, release_cli, start};
use crate::sh;
use anyhow::Result;
use std::process::Command;

/// Enough requests per level for a median at concurrency 8; a short answer so four levels of
/// both servers finish in minutes on a CPU rasteriser.
const BENCH_ARGS: &[&str] = &[
    "--concurrency",
    "1,2,4,8",
    "--requests",
    "16",
    "--warmup",
    "1",
    "--max-tokens",
    "64",
    "--prompt",
    BENCH_PROMPT,
];

pub fn run(args: &[String]) -> Result<()> {
    if let Some(rest) = args.strip_prefix(&["--burst".to_owned()]) {
        return crate::serve_burst::run(rest);
    }
    let (backend, args) = match args {
        [flag, value, rest @ ..] if flag == "--backend" => (value.as_str(), rest),
        _ => ("auto", args),
    };
    assets::setup_all(false)?;
    let tpsmeter = release_cli()?;
    let model = assets::model_path();
    let bench_args: Vec<String> = if args.is_empty() {
        BENCH_ARGS.iter().map(|s| (*s).to_owned()).collect()
    } else {
        args.to_vec()
    };
    let bench = |port: u16| {
        let mut cmd = Command::new(&tpsmeter);
        cmd.args(["bench", "--api", "openai-chat", "--url"])
            .arg(format!("http://127.0.0.1:{port}"))
            .args(["--model", "SmolLM2-135M-Instruct"])
            .args(&bench_args);
        sh::run(&mut cmd)
    };

    println!(
        "\n== tpsmeter serve --parallel 8 --backend {backend} (our engine, continuous batching)"
    );
    let port = free_port()?;
    let ours = start(
        Command::new(&tpsmeter)
            .arg("serve")
            .arg("--model")
            .arg(&model)
            .args(["--parallel", "8", "--context", "2048"])
            .args(["--backend", backend])
            .args(["--port", &port.to_string()]),
        port,
        "tpsmeter serve",
    )?;
    let result = bench(port);
    drop(ours);
    result?;

    println!("\n== peer: llama.cpp llama-server --parallel 8 (CPU, 2 threads), same GGUF");
    let port = free_port()?;
    let llama = llama_server(&model, port, 8, 2048)?;
    let result = bench(port);
    drop(llama);
    result
}
