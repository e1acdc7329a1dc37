//! `tpsmeter-emulator`: run the emulator by hand, or as the target of a peer load generator
//! (GuideLLM, AIPerf). Serves every API at once; `--api` only picks the URL it prints.

use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use tpsmeter_core::Api;
use tpsmeter_emulator::{Emulator, EmulatorConfig, Schedule, parse_fault};

/// Serve streaming LLM APIs on 127.0.0.1 on a known token schedule.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// TCP port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 8000)]
    port: u16,
    /// The API whose URL to print (every API is served regardless).
    #[arg(long, default_value = "openai-chat")]
    api: String,
    /// Time to first token, ms.
    #[arg(long, default_value_t = 50.0)]
    ttft_ms: f64,
    /// Time between tokens, ms.
    #[arg(long, default_value_t = 20.0)]
    itl_ms: f64,
    /// Output tokens per response (the request's max_tokens caps it).
    #[arg(long, default_value_t = 64)]
    tokens: u32,
    /// Tokens per streamed chunk.
    #[arg(long, default_value_t = 1)]
    tokens_per_chunk: u32,
    /// A fault for every response: none, status:CODE, redirect:CODE:HOST:PORT,
    /// rate-limited:SECS, stall:TOKENS:MS,
    /// cut:TOKENS, end-early:TOKENS, error-event:TOKENS, malformed:TOKENS, oversized:BYTES,
    /// invalid-utf8:TOKENS, slow-headers:MS. A request can override it with a
    /// `/fault/SPEC` path prefix (and the schedule with `/pace/TTFT_MS,ITL_MS,TOKENS[,K]`).
    #[arg(long, default_value = "none")]
    fault: String,
    /// Send no CORS headers (preflights get a bare 204), so browsers keep the responses
    /// from pages on other origins. Per request: the `/no-cors` path prefix.
    #[arg(long)]
    no_cors: bool,
    /// The listen backlog: connections the kernel holds until the emulator accepts them
    /// (Linux holds one more); beyond it a connect waits for its SYN's retry (1 s, 3 s ...).
    /// Default: tokio's 1024.
    #[arg(long, value_name = "N")]
    backlog: Option<u32>,
    /// Accept at most one connection per this many ms (a slow accept loop), so that a burst
    /// of connects overflows a small --backlog.
    #[arg(long, value_name = "MS", default_value_t = 0.0)]
    accept_interval_ms: f64,
    /// After the first connection, accept no other for this many ms.
    #[arg(long, value_name = "MS", default_value_t = 0.0)]
    accept_pause_ms: f64,
    /// Stop after this many seconds (default: run until killed).
    #[arg(long)]
    exit_after_s: Option<f64>,
    /// Serve at most N streams at once; requests beyond wait for a slot, and their schedule
    /// starts when they get one (a server with N batch slots). Per request: the
    /// `/max-streams/N` path prefix.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_streams: Option<u32>,
}

fn ms(v: f64, what: &str) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(v / 1000.0).with_context(|| format!("--{what} must be >= 0"))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let api = Api::from_name(&args.api).with_context(|| format!("unknown --api {}", args.api))?;
    if !api.is_remote() {
        anyhow::bail!("--api local is the browser's engine; the emulator serves remote APIs");
    }
    let cfg = EmulatorConfig {
        schedule: Schedule {
            ttft: ms(args.ttft_ms, "ttft-ms")?,
            itl: ms(args.itl_ms, "itl-ms")?,
            output_tokens: args.tokens,
        },
        fault: parse_fault(&args.fault).context("--fault")?,
        tokens_per_chunk: args.tokens_per_chunk,
        port: args.port,
        record: false,
        cors: !args.no_cors,
        backlog: args.backlog,
        accept_interval: ms(args.accept_interval_ms, "accept-interval-ms")?,
        accept_pause: ms(args.accept_pause_ms, "accept-pause-ms")?,
        max_streams: args.max_streams,
    };
    let emu = Emulator::start(cfg).await?;
    let path = tpsmeter_emulator::request::path_of(api);
    println!("tpsmeter-emulator listening: {}{path}", emu.base_url());
    match args.exit_after_s {
        Some(s) => tokio::time::sleep(Duration::try_from_secs_f64(s).unwrap_or_default()).await,
        None => tokio::signal::ctrl_c().await?,
    }
    let stats = emu.stats();
    eprintln!(
        "served {} requests on {} connections",
        stats.requests_served, stats.connections
    );
    Ok(())
}
