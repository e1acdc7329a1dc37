//! `tpsmeter-emulator`: run the emulator by hand, or as the target of a peer load generator
//! (GuideLLM, AIPerf). Serves every API at once; `--api` only picks the URL it prints.

use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Parser;
use tpsmeter_core::Api;
use tpsmeter_emulator::{Emulator, EmulatorConfig, Fault, Schedule};

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
    /// A fault for every response: none, status:CODE, rate-limited:SECS, stall:TOKENS:MS,
    /// cut:TOKENS, end-early:TOKENS, error-event:TOKENS, malformed:TOKENS, oversized:BYTES,
    /// invalid-utf8:TOKENS, slow-headers:MS.
    #[arg(long, default_value = "none")]
    fault: String,
    /// Stop after this many seconds (default: run until killed).
    #[arg(long)]
    exit_after_s: Option<f64>,
}

fn parse_fault(s: &str) -> anyhow::Result<Fault> {
    let mut parts = s.split(':');
    let kind = parts.next().unwrap_or("none");
    let mut num = |what: &str| -> anyhow::Result<u64> {
        parts
            .next()
            .with_context(|| format!("--fault {kind} needs {what}"))?
            .parse::<u64>()
            .with_context(|| format!("--fault {kind}: {what} must be a number"))
    };
    let tokens = |n: u64| u32::try_from(n).context("token count too large");
    Ok(match kind {
        "none" => Fault::None,
        "status" => Fault::Status {
            code: u16::try_from(num("CODE")?).context("status code too large")?,
            body: r#"{"error":{"message":"emulated error","type":"server_error"}}"#.into(),
        },
        "rate-limited" => Fault::RateLimited {
            retry_after_s: tokens(num("SECS")?)?,
        },
        "stall" => Fault::StallAfter {
            tokens: tokens(num("TOKENS")?)?,
            for_: Duration::from_millis(num("MS")?),
        },
        "cut" => Fault::CutAfter {
            tokens: tokens(num("TOKENS")?)?,
        },
        "end-early" => Fault::EndWithoutMarkerAfter {
            tokens: tokens(num("TOKENS")?)?,
        },
        "error-event" => Fault::ErrorEventAfter {
            tokens: tokens(num("TOKENS")?)?,
        },
        "malformed" => Fault::MalformedJsonAfter {
            tokens: tokens(num("TOKENS")?)?,
        },
        "oversized" => Fault::OversizedLine {
            bytes: usize::try_from(num("BYTES")?).context("line too large")?,
        },
        "invalid-utf8" => Fault::InvalidUtf8After {
            tokens: tokens(num("TOKENS")?)?,
        },
        "slow-headers" => Fault::SlowHeaders(Duration::from_millis(num("MS")?)),
        other => bail!("unknown --fault {other}"),
    })
}

fn ms(v: f64, what: &str) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(v / 1000.0).with_context(|| format!("--{what} must be >= 0"))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let api = Api::from_name(&args.api).with_context(|| format!("unknown --api {}", args.api))?;
    let cfg = EmulatorConfig {
        schedule: Schedule {
            ttft: ms(args.ttft_ms, "ttft-ms")?,
            itl: ms(args.itl_ms, "itl-ms")?,
            output_tokens: args.tokens,
        },
        fault: parse_fault(&args.fault)?,
        tokens_per_chunk: args.tokens_per_chunk,
        port: args.port,
        record: false,
    };
    let emu = Emulator::start(cfg).await?;
    let path = match api {
        Api::OpenaiChat => "/v1/chat/completions",
        Api::OpenaiCompletions => "/v1/completions",
        Api::OpenaiResponses => "/v1/responses",
        Api::Anthropic => "/v1/messages",
        Api::Gemini => "/v1beta/models/emulator:streamGenerateContent?alt=sse",
        Api::OllamaChat => "/api/chat",
        Api::OllamaGenerate => "/api/generate",
    };
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
