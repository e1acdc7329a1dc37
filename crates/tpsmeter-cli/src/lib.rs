//! The `tpsmeter` command line, as a library so tests and benchmarks drive it in-process.
//!
//! What it does: `tpsmeter bench` sends streaming requests to an LLM API at one or more
//! concurrency levels (closed loop, or open loop at a Poisson rate), stamps every response
//! chunk with a monotonic clock as it arrives, hands the bytes and stamps to
//! `tpsmeter-core` for decoding and metrics, and writes a table, a JSON report, CSV rows and
//! per-request JSON lines (appended as each request completes). `tpsmeter merge` makes one
//! report of the shards of a run spread over machines (`bench --shard I/N`).
//!
//! What it does not do: define any metric (they live in `tpsmeter-core`), or parse any wire
//! format itself.

// clap turns argument doc comments into `--help` text, where `<https://…>` or backticks
// would print literally: plain URLs are right there, so rustdoc's bare-URL lint is off.
#![allow(rustdoc::bare_urls)]

pub mod bench;
pub mod exit;
pub mod merge;
pub mod output;
pub mod probe;
pub mod progress;
pub mod prompt;
pub mod run;
pub mod serve;
pub mod synthetic;

use clap::{Parser, Subcommand};

/// Measure tokens per second of streaming LLM APIs.
#[derive(Debug, Parser)]
#[command(name = "tpsmeter", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Benchmark a streaming LLM API (TTFT, ITL, TPOT, e2e, tokens/s) at concurrency levels.
    Bench(Box<bench::BenchArgs>),
    /// Merge the JSON reports of a run's shards (`bench --shard I/N` on N machines) into the
    /// report of the whole, every summary recomputed from the records.
    Merge(merge::MergeArgs),
    /// Generate text with a local GGUF model on the GPU or the CPU (tpsmeter's own engine;
    /// `--backend auto` takes the CPU where the only adapter is a software one).
    Run(run::RunArgs),
    /// Serve a local GGUF model on an OpenAI-compatible HTTP API (tpsmeter's own engine).
    Serve(serve::ServeArgs),
    /// Measure the GPU adapter's roofline: streaming-read GB/s, per-dispatch cost, submit +
    /// readback latency (and, with --model, the decode ceiling they allow).
    Probe(probe::ProbeArgs),
    /// Write a synthetic model (a real model's shapes and tensor types, random weights) as a
    /// GGUF file, to measure a model's speed without downloading it.
    Synthetic(synthetic::SyntheticArgs),
}

/// Runs a parsed command line to its exit status. Errors are usage or set-up errors.
pub fn run(cli: Cli) -> anyhow::Result<exit::Status> {
    match cli.command {
        Command::Bench(args) => bench::run_blocking(*args),
        Command::Merge(args) => merge::run(&args),
        Command::Run(args) => run::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Probe(args) => probe::run(args),
        Command::Synthetic(args) => synthetic::run(&args),
    }
}
