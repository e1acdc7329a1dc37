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

/// The emulator on its own OS thread and current-thread runtime, so that serving never
/// competes with the client's runtime for a worker (it still shares the two cores).
pub(crate) struct Server {
    emu: Option<Emulator>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    fn start(cfg: EmulatorConfig) -> Server {
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                tx.send(Emulator::start(cfg).await.unwrap()).unwrap();
                let _ = stop_rx.await;
            });
        });
        let emu = rx.recv().unwrap();
        Server {
            emu: Some(emu),
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub(crate) fn emu(&self) -> &Emulator {
        self.emu.as_ref().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.emu.take());
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[derive(Default)]
pub(crate) struct Samples {
    ttft_sched: Vec<f64>,
    ttft_sent: Vec<f64>,
    itl_sched: Vec<f64>,
    itl_sent: Vec<f64>,
    deliver: Vec<f64>,
    server_late: Vec<f64>,
    /// Per request: (last − first) / (n − 1) measured, minus the same from the send stamps.
    mean_itl_sent: Vec<f64>,
    /// Per request: the last token's delivery delay (client stamp − send stamp).
    last_deliver: Vec<f64>,
    failed: usize,
    unmatched: usize,
    requests: usize,
    /// Content events compared, and how many of their send times are the kernel's transmit
    /// stamps (the rest are the emulator's own stamps, taken before the write).
    events: usize,
    kernel_sends: usize,
}

pub(crate) fn pct(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    // Nearest-rank percentile.
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v[rank - 1]
}

pub(crate) fn abs(v: &[f64]) -> Vec<f64> {
    v.iter().map(|x| x.abs()).collect()
}

/// One client request on CLOCK_MONOTONIC (ns): when it started and its stamp of each content
/// event (one read may hold several events: each gets its read's stamp).
pub(crate) struct Stamps {
    pub(crate) start_ns: f64,
    pub(crate) chunks_ns: Vec<f64>,
}

/// The CLI client's stamps of one outcome.
fn stamps(out: &Outcome, origin_ns: u64) -> Stamps {
    Stamps {
        start_ns: origin_ns as f64 + out.timeline.request_start_ms() * 1e6,
        chunks_ns: out
            .timeline
            .content_chunks()
            .iter()
            .flat_map(|c| std::iter::repeat_n(origin_ns as f64 + c.t_ms * 1e6, c.deltas))
            .collect(),
    }
}

/// The CLI's start stamp is when hyper pulls the request body, which it may do just after
/// writing the head: the emulator's kernel stamp of the head's arrival then precedes it by a
/// syscall and a loopback hop (6-8 µs measured at concurrency 100).
const CLI_START_SLACK_NS: f64 = 1_000_000.0;

/// How many neighbours (in order of start) a client request is compared with.
const MATCH_WINDOW: usize = 128;

/// Pairs client requests (sorted by start) with server records (sorted by arrival), for a
/// client that cannot name its requests (the npm package's `bench()` in a page), with the
/// client's stamp of each of `rec`'s events given by `events` (None: they cannot be paired).
///
/// Requests of a closed loop start in bursts, so order alone can pair wrongly. A pairing is
/// possible only if it is causal (arrival after the client's start, every chunk stamped by the
/// client after the server sent it), both within `slack_ns`, for a clock mapped onto
/// CLOCK_MONOTONIC only approximately (the page's `performance.now()`); among those, the
/// smallest mean delivery delay wins. Greedy over the candidates within `MATCH_WINDOW`
/// positions. It is approximate: a stream sent just after the client's own, within the
/// slack, has the smaller delay; the CLI's requests are paired exactly (`Workers`).
pub(crate) fn pair_by<'a>(
    clients: &'a [Stamps],
    recs: &[RequestRecord],
    slack_ns: f64,
    events: impl Fn(&'a Stamps, &RequestRecord) -> Option<Cow<'a, [f64]>>,
) -> Vec<(usize, usize)> {
    let mut cands: Vec<(f64, usize, usize)> = Vec::new();
    for (i, st) in clients.iter().enumerate() {
        let lo = i.saturating_sub(MATCH_WINDOW);
        let hi = (i + MATCH_WINDOW).min(recs.len());
        for (j, rec) in recs.iter().enumerate().take(hi).skip(lo) {
            let Some(client) = events(st, rec) else {
                continue;
            };
            if client.is_empty() || client.len() != rec.departed_ns.len() {
                continue;
            }
            if (rec.arrival_ns as f64) < st.start_ns - slack_ns {
                continue;
            }
            let mut sum = 0.0;
            let mut causal = true;
            for (c, &sent) in client.iter().zip(&rec.departed_ns) {
                let d = c - sent as f64;
                if d < -slack_ns {
                    causal = false;
                    break;
                }
                sum += d;
            }
            if causal {
                cands.push((sum / client.len() as f64, i, j));
            }
        }
    }
    cands.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut used_i, mut used_j) = (vec![false; clients.len()], vec![false; recs.len()]);
    let mut pairs = Vec::new();
    for (_, i, j) in cands {
        if !used_i[i] && !used_j[j] {
            used_i[i] = true;
            used_j[j] = true;
            pairs.push((i, j));
        }
    }
    pairs
}

/// Compares one client request's stamps with its server record.
pub(crate) fn compare_stamps(st: &Stamps, rec: &RequestRecord, s: &mut Samples) {
    let client = &st.chunks_ns;
    if client.len() != rec.departed_ns.len() || client.is_empty() {
        s.unmatched += 1;
        return;
    }
    let start = st.start_ns;
    s.events += client.len();
    s.kernel_sends += rec.departed_by_kernel;
    let ms = |ns: f64| ns / 1e6;
    let ttft = ms(client[0] - start);
    s.ttft_sched.push(ttft - TTFT_MS);
    s.ttft_sent
        .push(ttft - ms(rec.departed_ns[0] as f64 - rec.arrival_ns as f64));
    let n = client.len();
    if n > 1 {
        let sent_span = (rec.departed_ns[n - 1] - rec.departed_ns[0]) as f64;
        s.mean_itl_sent
            .push(ms(client[n - 1] - client[0] - sent_span) / (n - 1) as f64);
    }
    s.last_deliver
        .push(ms(client[n - 1] - rec.departed_ns[n - 1] as f64));
    for i in 0..client.len() {
        s.deliver.push(ms(client[i] - rec.departed_ns[i] as f64));
        s.server_late
            .push(ms(rec.departed_ns[i] as f64 - rec.due_ns[i] as f64));
        if i > 0 {
            let gap = ms(client[i] - client[i - 1]);
            s.itl_sched.push(gap - ITL_MS);
            s.itl_sent
                .push(gap - ms(rec.departed_ns[i] as f64 - rec.departed_ns[i - 1] as f64));
        }
    }
}

/// Waits until the emulator has dropped every stream body: a body pushes its record when
/// dropped, just after its last write, which may be after the client saw the end.
pub(crate) async fn settle(server: &Server) {
    for _ in 0..500 {
        if server.emu().stats().open_streams == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// One runner per closed-loop worker, the `k`-th naming itself `w{k}` in its requests'
/// `model`, which the emulator keeps in each record: a worker's requests run one after
/// another, so its `i`-th outcome is its `i`-th record. (Pairing by timing alone is not exact
/// at concurrency 100, where a hundred identical schedules start within a millisecond and
/// the emulator writes their chunks microseconds apart.)
pub(crate) struct Workers {
    client: tpsmeter_cli::bench::http::client::Client,
    spec: RequestSpec,
    origin: Instant,
    timeout: Duration,
    /// `kernel` or `reqwest`: where this client's read stamps come from.
    name: &'static str,
}

impl Workers {
    fn new(
        client: tpsmeter_cli::bench::http::client::Client,
        spec: RequestSpec,
        origin: Instant,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        let mut w = Workers {
            client,
            spec,
            origin,
            timeout,
            name: "",
        };
        w.name = if w.runner(0)?.stamp_source().contains("SO_TIMESTAMPNS") {
            "kernel"
        } else {
            "reqwest"
        };
        Ok(w)
    }

    fn runner(&self, k: usize) -> anyhow::Result<Arc<Runner>> {
        let spec = RequestSpec {
            model: format!("w{k}"),
            ..self.spec.clone()
        };
        let request = build_request(&spec)?;
        let r = Runner::new(
            self.client.clone(),
            spec.api,
            &request,
            self.origin,
            self.timeout,
            self.timeout,
        )?;
        Ok(r)
    }

    pub(crate) fn name(&self) -> &'static str {
        self.name
    }

    pub(crate) fn origin(&self) -> Instant {
        self.origin
    }
}

/// Runs `rounds` requests on each of `concurrency` workers (after one warm-up request each,
/// not measured, which opens the connections) and compares them with the server's records.
pub(crate) async fn level(
    server: &Server,
    workers: &Workers,
    concurrency: usize,
    rounds: usize,
) -> Samples {
    let runners: Vec<Arc<Runner>> = (0..concurrency)
        .map(|k| workers.runner(k).unwrap())
        .collect();
    let cancel = CancellationToken::new();
    let run_all = |n: usize| {
        let mut set = tokio::task::JoinSet::new();
        for (k, runner) in runners.iter().enumerate() {
            let (runner, cancel) = (runner.clone(), cancel.clone());
            set.spawn(async move {
                let mut outs = Vec::with_capacity(n);
                for _ in 0..n {
                    outs.push(runner.run(&cancel, None).await);
                }
                (k, outs)
            });
        }
        set
    };
    let mut warm = run_all(1);
    while warm.join_next().await.is_some() {}
    settle(server).await;
    let _ = server.emu().take_records();
    let mut set = run_all(rounds);
    let mut outs: Vec<Vec<Outcome>> = (0..concurrency).map(|_| Vec::new()).collect();
    while let Some(r) = set.join_next().await {
        let (k, o) = r.unwrap();
        outs[k] = o;
    }
    settle(server).await;
    let mut recs: std::collections::HashMap<String, Vec<RequestRecord>> = Default::default();
    for r in server.emu().take_records() {
        recs.entry(r.model.clone()).or_default().push(r);
    }
    let origin_ns = clock::instant_ns(workers.origin());
    let mut s = Samples::default();
    for (k, outs) in outs.iter().enumerate() {
        let mut mine = recs.remove(&format!("w{k}")).unwrap_or_default();
        mine.sort_by_key(|r| r.id);
        s.requests += outs.len();
        let ok = outs.iter().filter(|o| o.failure.is_none()).count();
        s.failed += outs.len() - ok;
        if mine.len() != outs.len() {
            // A failed request may or may not have reached the server: order no longer pairs.
            s.unmatched += ok;
            continue;
        }
        for (out, rec) in outs.iter().zip(&mine) {
            if out.failure.is_some() {
                continue;
            }
            // Equal counts could still be shifted by one (a failed request that never
            // arrived, and a stray record): the record must have arrived between the
            // request's start (less the start stamp's margin, see `CLI_START_SLACK_NS`)
            // and its first chunk.
            let st = stamps(out, origin_ns);
            let arrival = rec.arrival_ns as f64;
            if arrival < st.start_ns - CLI_START_SLACK_NS
                || st.chunks_ns.first().is_none_or(|&c| arrival > c)
            {
                s.unmatched += 1;
                continue;
            }
            compare_stamps(&st, rec, &mut s);
        }
    }
    s
}

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
            "unknown mode {other}: accuracy | capacity | levels L1,L2 ROUNDS | peer L1,L2 | browser [L1,L2 [ROUNDS [VARIANTS]]]"
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
            return browser::compare(&server, &workers, &levels, rounds, &variants).await;
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
