//! Timing accuracy and load-generator capacity of `tpsmeter bench`'s client.
//!
//! Drives the CLI's real request path (`tpsmeter_cli::bench::http::runner::Runner` on the clients of
//! `tpsmeter_cli::bench::http::client`) against `tpsmeter-emulator` running on its own thread and
//! runtime, on a known schedule (default TTFT 50 ms, ITL 20 ms, 64 tokens, one token per
//! chunk, OpenAI chat). For every content chunk it compares what the client measured with
//!
//! - the schedule (`vs sched`): includes the emulator's own lateness (tokio's 1 ms timer);
//! - the emulator's send stamps (`vs sent`): the client's own error. TTFT: measured TTFT −
//!   (first chunk sent − request arrival at the server); ITL: measured gap − sent gap. The
//!   arrival is the kernel's receive stamp of the request's first packet
//!   (`tpsmeter_arrival`), so the emulator's own queueing is not charged to the
//!   client; the client's start is when its HTTP stack pulled the body to write it. A
//!   chunk's send time is the kernel's transmit stamp of its write
//!   (`RequestRecord::departed_ns`), so a preemption of the emulator between rendering a
//!   chunk and writing it is not charged to the client either; the `sent by kernel` column
//!   says how many events had one (the rest keep the emulator's `x_sent_ns`).
//!
//! and prints `deliver`, the per-chunk delay from the send stamp to the client's stamp (both
//! CLOCK_MONOTONIC, see `tpsmeter_emulator::clock`). Client requests are paired with server
//! records exactly: each closed-loop worker names itself in its requests' `model`, which the
//! emulator records (see `Workers`).
//!
//!   cargo bench -p tpsmeter-cli --bench timing -- accuracy        # concurrency 1 and 100
//!   cargo bench -p tpsmeter-cli --bench timing -- capacity        # 100, 200, 400, ... streams
//!   cargo bench -p tpsmeter-cli --bench timing -- levels 1,50 3   # custom levels, rounds
//!   cargo bench -p tpsmeter-cli --bench timing -- peer 1,100,400  # side by side with GuideLLM
//!   cargo bench -p tpsmeter-cli --bench timing -- browser         # beside the npm package in Chromium (1, 4)
//!
//! `peer` runs the same levels with tpsmeter's client and with GuideLLM (installed by
//! `crates/tpsmeter-emulator/scripts/peer.sh`; path from `TPSMETER_GUIDELLM`) against the same
//! emulator. GuideLLM keeps only the request start, first and last token times per request
//! (wall clock, `time.time()`), matched to the server's records through the response id; so
//! the side-by-side figures are the ones both tools can give: TTFT error vs sent, mean-ITL
//! error vs sent ((last − first)/(n − 1), GuideLLM's ITL definition), and the last token's
//! delivery delay.
//!
//! `browser` runs concurrency 1 and 4 (issue 26's target levels; up to 6, Chromium's HTTP/1.1
//! connections per host; `browser 1,6 ROUNDS [VARIANTS]` to change them) with the CLI's client and then with the npm package's `bench()`
//! in headless Chromium on a cross-origin-isolated page (`node tests/browser/bench/timing.mjs`,
//! which needs the packed package from `cargo xtask pkg`); see `timing/browser.rs`. The page's
//! meter-overhead and size benchmark is `node tests/browser/bench/meter.mjs` (no emulator).
//!
//! `accuracy` and `levels` run every level twice, one after the other: `kernel` is the CLI's
//! plain-http path, each read stamped with the kernel's receive time (`stamped_http.rs`);
//! `reqwest` is the same request through reqwest, each read stamped when the runner gets it
//! (the CLI's path for https and proxies, and its only path before).
//!
//! Figures: medians (p50) and p99 of the absolute error, in ms.

#![allow(clippy::unwrap_used)]

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tpsmeter_cli::bench::http::runner::Runner;
use tpsmeter_core::Api;
use tpsmeter_core::Outcome;
use tpsmeter_core::request::{RequestSpec, build_request};
use tpsmeter_emulator::{Emulator, EmulatorConfig, RequestRecord, Schedule, clock};

const TTFT_MS: f64 = 50.0;
const ITL_MS: f64 = 20.0;
const TOKENS: u32 = 64;
/// A capacity level passes while the client's own p99 error stays within this.
const CAPACITY_P99_MS: f64 = 2.0;
/// The capacity sweep stops here whatever happens (each stream holds two descriptors, and
/// `ulimit -n` is 20,000 here).
const MAX_STREAMS: usize = 6_400;

#[path = "timing/server.rs"]
mod server;
#[path = "timing/stamps.rs"]
mod stamps;
#[path = "timing/workers.rs"]
mod workers;

pub(crate) use server::Server;
pub(crate) use stamps::{
    CLI_START_SLACK_NS, Samples, Stamps, abs, compare_stamps, pair_by, pct, stamps,
};
pub(crate) use workers::{Workers, level, settle};

fn header() {
    println!(
        "{:>6} {:>8} {:>6} {:>8} | {:>15} {:>15} | {:>15} {:>15} | {:>13} {:>13} | {:>7}",
        "conc",
        "client",
        "reqs",
        "fail/unm",
        "TTFT vs sched",
        "TTFT vs sent",
        "ITL vs sched",
        "ITL vs sent",
        "deliver",
        "server late",
        "sent by"
    );
    println!(
        "{:>6} {:>8} {:>6} {:>8} | {:>15} {:>15} | {:>15} {:>15} | {:>13} {:>13} | {:>7}",
        "",
        "",
        "",
        "",
        "p50 / p99 ms",
        "p50 / p99 ms",
        "p50 / p99 ms",
        "p50 / p99 ms",
        "p50 / p99",
        "p50 / p99",
        "kernel"
    );
}

/// Prints one row; returns the client's own p99 error (max of TTFT and ITL vs sent).
fn row(concurrency: usize, client: &str, s: &mut Samples) -> f64 {
    let pair = |v: &[f64]| {
        let mut a = abs(v);
        (pct(&mut a, 50.0), pct(&mut a, 99.0))
    };
    let f = |(a, b): (f64, f64)| format!("{a:.3} / {b:.3}");
    let ttft_sent = pair(&s.ttft_sent);
    let itl_sent = pair(&s.itl_sent);
    println!(
        "{:>6} {:>8} {:>6} {:>8} | {:>15} {:>15} | {:>15} {:>15} | {:>13} {:>13} | {:>7}",
        concurrency,
        client,
        s.requests,
        format!("{}/{}", s.failed, s.unmatched),
        f(pair(&s.ttft_sched)),
        f(ttft_sent),
        f(pair(&s.itl_sched)),
        f(itl_sent),
        f(pair(&s.deliver)),
        f(pair(&s.server_late)),
        format!(
            "{:.1}%",
            100.0 * s.kernel_sends as f64 / s.events.max(1) as f64
        ),
    );
    if s.failed + s.unmatched > 0 || s.ttft_sent.is_empty() {
        return f64::INFINITY;
    }
    ttft_sent.1.max(itl_sent.1)
}

#[path = "timing/peer.rs"]
mod peer;

#[path = "timing/browser.rs"]
mod browser;
#[path = "timing/floor.rs"]
mod floor;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let mode = args.first().map(String::as_str).unwrap_or("accuracy");
    let (levels, rounds): (Vec<usize>, usize) = match mode {
        "accuracy" => (vec![1, 100], 0),
        "capacity" => {
            let mut v = vec![100];
            while *v.last().unwrap() * 2 <= MAX_STREAMS {
                v.push(v.last().unwrap() * 2);
            }
            (v, 2)
        }
        "levels" => (
            args.get(1)
                .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
                .unwrap_or_else(|| vec![1]),
            args.get(2).and_then(|r| r.parse().ok()).unwrap_or(3),
        ),
        "peer" => (
            args.get(1)
                .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
                .unwrap_or_else(|| vec![1, 100, 400, 1600]),
            2,
        ),
        "browser" => (
            args.get(1)
                .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
                .unwrap_or_else(|| vec![1, 4]),
            args.get(2).and_then(|r| r.parse().ok()).unwrap_or(0),
        ),
        other => anyhow::bail!(
            "unknown mode {other}: accuracy | capacity | levels L1,L2 ROUNDS | peer L1,L2 | browser [L1,L2 [ROUNDS [VARIANTS [ENGINES]]]]"
        ),
    };
    let server = Server::start(EmulatorConfig {
        schedule: Schedule {
            ttft: Duration::from_secs_f64(TTFT_MS / 1000.0),
            itl: Duration::from_secs_f64(ITL_MS / 1000.0),
            output_tokens: TOKENS,
        },
        record: true,
        ..EmulatorConfig::default()
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let spec = RequestSpec {
            api: Api::OpenaiChat,
            base_url: server.emu().base_url(),
            model: "emulator".into(),
            messages: vec![tpsmeter_core::Message::user("Say something.")],
            system: None,
            max_tokens: TOKENS,
            temperature: None,
            api_key: None,
            ignore_eos: false,
        };
        let timeout = Duration::from_secs(60);
        let client = tpsmeter_cli::bench::http::client::build(timeout)?;
        let origin = Instant::now();
        let workers = Workers::new(client.clone(), spec.clone(), origin, timeout)?;
        // The same requests through reqwest, stamped when the runner gets each read: the peer
        // the kernel-stamped path is measured against, level by level in the same run.
        let peer = Workers::new(client.without_kernel_stamps(), spec, origin, timeout)?;
        println!(
            "schedule: TTFT {TTFT_MS} ms, ITL {ITL_MS} ms, {TOKENS} tokens, 1 token/chunk, openai-chat, HTTP/1.1 on 127.0.0.1; {} cores",
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)
        );
        if mode == "peer" {
            return peer::compare(&server, &workers, &levels).await;
        }
        if mode == "browser" {
            let variants = browser::variants(args.get(3).map(String::as_str))?;
            let engines = floor::engines(args.get(4).map(String::as_str))?;
            return browser::compare(&server, &workers, &levels, rounds, &variants, &engines)
                .await;
        }
        header();
        let mut best = None;
        for c in levels {
            // Accuracy: ~1,200 ITL samples at concurrency 1, ~19,000 at 100.
            let r = if rounds > 0 { rounds } else if c == 1 { 20 } else { 3 };
            let mut s = level(&server, &workers, c, r).await;
            let p99 = row(c, workers.name(), &mut s);
            if mode != "capacity" && workers.name() != peer.name() {
                let mut s = level(&server, &peer, c, r).await;
                row(c, peer.name(), &mut s);
            }
            if mode == "capacity" {
                if p99 <= CAPACITY_P99_MS {
                    best = Some(c);
                } else {
                    break;
                }
            }
        }
        if mode == "capacity" {
            match best {
                Some(c) => println!("capacity: {c} concurrent streams with client p99 error <= {CAPACITY_P99_MS} ms (TTFT and ITL vs sent)"),
                None => println!("capacity: below 100 streams at p99 <= {CAPACITY_P99_MS} ms"),
            }
        }
        anyhow::Ok(())
    })?;
    drop(server);
    Ok(())
}
