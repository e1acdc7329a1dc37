//! The CLI's client and the npm package's `bench()` in headless Chromium, side by side, at the
//! same levels against the same emulator (the schedule of `accuracy`: TTFT 50 ms, ITL 20 ms,
//! 64 one-token chunks, OpenAI chat over HTTP/1.1).
//!
//!   cargo xtask pkg                                                # the packed package
//!   cargo bench -p tpsmeter-cli --bench timing -- browser           # levels 1 and 4
//!   cargo bench -p tpsmeter-cli --bench timing -- browser 1,6 10    # levels, rounds per worker
//!   cargo bench -p tpsmeter-cli --bench timing -- browser 1,4 20 worker+r,page+r  # variants
//!
//! Each level runs the page in four variants, one after the other (or those named):
//! `worker+r` and `page+r` put the text on screen as it arrives (`render`), `worker` and
//! `page` do not; `worker*` read the streams in bench()'s reader Worker (the default),
//! `page*` on the page's main thread (`worker: false`). The paint lag (paint − arrival) of the
//! rendered variants is printed beside the arrival errors: arrival is what the network
//! delivered, paint lag what the page added before the user saw it.
//!
//! For each level the CLI's client runs first (the code of `accuracy`: one warm-up request per
//! worker, then `rounds` each; 20 at concurrency 1, 10 above unless given), then
//! `node tests/browser/bench/timing.mjs <emulator> <concurrency> <requests>` runs the packed
//! package's `bench()` on a cross-origin-isolated page (COOP same-origin + COEP require-corp;
//! the emulator sends CORP cross-origin) with as many warm-up requests as workers, and prints
//! every record (`chunk_times_ms`, `start_ms` on the page's `performance.now()` clock) with
//! `crossOriginIsolated`, the measured timer resolution and a clock mapping (below). The
//! package comes from `TPSMETER_PKG_TARBALL`, `TPSMETER_PKG_DIR`, or else the newest
//! `target/npm/tpsmeter-*.tgz`, else a built `pkg/`; Chromium from `TPSMETER_CHROMIUM`
//! (default `/usr/bin/chromium`); node from `TPSMETER_NODE` (default `node`).
//!
//! The figures are clock-offset-free, as the CLI's `vs sent` columns: TTFT error = measured
//! TTFT − (first chunk sent − request arrival at the server), ITL error = measured gap − sent
//! gap; only differences of page stamps and differences of server stamps are used.
//!
//! Pairing browser records with the server's records needs the two clocks on one axis, only
//! roughly: the page reads one paced stream from the emulator before and one after the run
//! and takes min(read stamp − `x_sent_ns`) over its events, i.e. `performance.now()` minus
//! CLOCK_MONOTONIC up to the smallest delivery delay (Chromium's `performance.now()` runs on
//! CLOCK_MONOTONIC on Linux, so the two readings agree to within that delay; both are
//! printed). Then `pair_by` pairs as `pair_up` does, with its causality checks relaxed by
//! [`PAIR_SLACK_NS`] for the mapping's error. A record keeps one stamp per read: when a read
//! carried several events (the page read late, or the network coalesced them), each event of
//! a candidate server record is given the stamp of the first read after its send time (on the
//! mapped clock, within [`EXPAND_SLACK_NS`]; every read must carry at least one event), which
//! is what the CLI's client does with a read's events. Such records are counted and printed.
//!
//! Chromium allows 6 HTTP/1.1 connections per host, so 6 is the highest level at which the
//! browser's figures measure the client and not its queue.
//!
//! In each engine (Chromium, Firefox ESR, WebKitGTK: the fifth argument, comma-separated,
//! default `chromium`) the `floor` variant makes the same requests with no library at all
//! (fetch() and a plain reader loop on the main thread, each read stamped at once): the best
//! any client in that page can do. `floor-w` runs that loop in a Worker of its own with the
//! page idle: what a Worker costs by itself in that engine, apart from the package's work.
//! The summary gives each variant's ITL error p99 over its engine's floor at the same level,
//! against `floor.rs`'s `OVER_FLOOR_MS`:
//!
//!   cargo bench -p tpsmeter-cli --bench timing -- browser 1,4 20 worker,floor chromium,firefox,webkit

use std::borrow::Cow;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tpsmeter_emulator::RequestRecord;

use super::floor::over_floor;
use super::{Samples, Server, Stamps, abs, compare_stamps, level, pair_by, pct, settle};

/// How far the page-to-CLOCK_MONOTONIC mapping may be off when pairing (its error is at most
/// the smallest delivery delay of the clock-sync streams, well under a millisecond here).
const PAIR_SLACK_NS: f64 = 2e6;
/// How much earlier than an event's send time a read may appear on the mapped clock and still
/// be taken to carry it (the mapping runs early by the sync streams' smallest delivery delay).
const EXPAND_SLACK_NS: f64 = 0.5e6;
/// Longest a `timing.mjs` run may take beyond the requests' own time.
const NODE_GRACE: Duration = Duration::from_secs(120);
/// The accuracy target for chunk arrival in the browser (the ITL error vs sent gaps), ms:
/// issue 26's "p99 <= 1 ms at concurrency 1 and 4 with `render` on" (issue 7 had asked for
/// 2 ms). TTFT error is printed beside it, not judged: in the browser it includes fetch()
/// dispatch (Resource Timing's queue), which users pay too.
const TARGET_P99_MS: f64 = 1.0;

fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    here.canonicalize().unwrap_or(here)
}

/// `/proc/loadavg`'s three averages (1, 5, 15 min), or "?" off Linux.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "?".into())
}

/// The smallest non-zero step between consecutive `Instant::now()` readings, in µs.
fn instant_resolution_us() -> f64 {
    let mut best = f64::INFINITY;
    let mut last = Instant::now();
    for _ in 0..100_000 {
        let now = Instant::now();
        let d = now.duration_since(last).as_secs_f64();
        if d > 0.0 {
            best = best.min(d);
        }
        last = now;
    }
    best * 1e6
}

/// One way of running the page: where it reads its streams, whether it renders the text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Variant {
    pub(crate) label: &'static str,
    /// `timing.mjs`'s flags.
    flags: &'static [&'static str],
}

/// Every variant, in the order they run (the floors only when named).
pub(crate) const VARIANTS: [Variant; 6] = [
    Variant {
        label: "worker+r",
        flags: &["render"],
    },
    Variant {
        label: "page+r",
        flags: &["render", "page"],
    },
    Variant {
        label: "worker",
        flags: &[],
    },
    Variant {
        label: "page",
        flags: &["page"],
    },
    Variant {
        label: "floor",
        flags: &["floor"],
    },
    // The same plain loop in a Worker of its own, the page idle: the Worker's own cost.
    Variant {
        label: "floor-w",
        flags: &["floor-worker"],
    },
];

/// The variants named in `list` (comma-separated labels), or all of them.
pub(crate) fn variants(list: Option<&str>) -> anyhow::Result<Vec<Variant>> {
    let Some(list) = list else {
        return Ok(VARIANTS[..4].to_vec());
    };
    list.split(',')
        .map(|name| {
            VARIANTS
                .iter()
                .find(|v| v.label == name)
                .copied()
                .ok_or_else(|| {
                    let all: Vec<&str> = VARIANTS.iter().map(|v| v.label).collect();
                    anyhow::anyhow!("unknown variant {name}: {}", all.join(", "))
                })
        })
        .collect()
}

/// Runs `node tests/browser/bench/timing.mjs`; returns its JSON. Progress goes to stderr.
fn run_page(
    base_url: &str,
    concurrency: usize,
    requests: usize,
    variant: Variant,
    engine: &str,
) -> anyhow::Result<Value> {
    let root = repo_root();
    let node = std::env::var_os("TPSMETER_NODE").unwrap_or_else(|| "node".into());
    let script = root.join("tests/browser/bench/timing.mjs");
    let engine_flag = format!("engine={engine}");
    eprintln!(
        "  $ node {} {base_url} {concurrency} {requests} {} {engine_flag}",
        script.display(),
        variant.flags.join(" ")
    );
    let mut child = Command::new(&node)
        .arg(&script)
        .args([
            base_url.to_owned(),
            concurrency.to_string(),
            requests.to_string(),
        ])
        .args(variant.flags)
        .arg(&engine_flag)
        .current_dir(&root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| anyhow::anyhow!("cannot run {}: {e}", node.to_string_lossy()))?;
    // Read stdout while waiting: the JSON is larger than a pipe's buffer.
    let mut stdout = child
        .stdout
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        stdout.read_to_string(&mut s).map(|_| s)
    });
    // Each request takes about TTFT + 63 ITL (1.3 s); `requests / concurrency` rounds.
    let limit = NODE_GRACE + Duration::from_secs_f64(1.5 * (requests + concurrency) as f64);
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!("timing.mjs ran past {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let out = reader
        .join()
        .map_err(|_| anyhow::anyhow!("stdout reader panicked"))??;
    anyhow::ensure!(status.success(), "timing.mjs exited with {status}");
    let line = out
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .ok_or_else(|| anyhow::anyhow!("timing.mjs printed no JSON"))?;
    Ok(serde_json::from_str(line)?)
}

/// The stamp of each of `sent`'s events from one stamp per read: the first read at or after
/// the event's send time (less [`EXPAND_SLACK_NS`]). None when the reads cannot have carried
/// these events (an event after the last read, or a read left without any).
fn expand(reads: &[f64], sent: &[u64]) -> Option<Vec<f64>> {
    let mut out = Vec::with_capacity(sent.len());
    let (mut r, mut carried) = (0, 0);
    for &s in sent {
        let earliest = s as f64 - EXPAND_SLACK_NS;
        while *reads.get(r)? < earliest {
            if carried == 0 {
                return None;
            }
            r += 1;
            carried = 0;
        }
        out.push(reads[r]);
        carried += 1;
    }
    (r + 1 == reads.len() && carried > 0).then_some(out)
}

/// A record's stamps for `rec`'s events: its own when it has one per event, else expanded.
fn events<'a>(st: &'a Stamps, rec: &RequestRecord) -> Option<Cow<'a, [f64]>> {
    use std::cmp::Ordering::{Equal, Less};
    match st.chunks_ns.len().cmp(&rec.departed_ns.len()) {
        Equal => Some(Cow::Borrowed(&st.chunks_ns[..])),
        Less => expand(&st.chunks_ns, &rec.departed_ns).map(Cow::Owned),
        _ => None,
    }
}

/// What a page run measured, beside its samples.
struct PageRun {
    samples: Samples,
    isolated: bool,
    /// Smallest and median non-zero `performance.now()` step, µs.
    resolution_us: (f64, f64),
    /// Measured, paired records with fewer reads than events (some read carried several).
    coalesced: usize,
    /// Paint lag p50 / p99, ms, when the text was rendered.
    paint_lag: Option<(f64, f64)>,
    notes: Vec<String>,
}

/// Pairs the page's records with the server's and compares them as the CLI's are.
fn page_samples(out: &Value, recs: &[RequestRecord]) -> anyhow::Result<PageRun> {
    let offset_ms = out["clock"]["offsetMs"]
        .as_f64()
        .ok_or_else(|| anyhow::anyhow!("no clock.offsetMs in the page's output"))?;
    let records = out["records"]
        .as_array()
        .ok_or_else(|| anyhow::anyhow!("no records in the page's output"))?;
    let to_ns = |ms: f64| (ms - offset_ms) * 1e6;
    let mut s = Samples::default();
    let mut coalesced = 0;
    // Every successful record takes part in the pairing, warm-ups too (they own server
    // records); only measured ones are compared.
    let mut ok: Vec<(bool, Option<f64>, Stamps)> = Vec::new();
    for r in records {
        let warmup = r["warmup"].as_bool().unwrap_or(false);
        let failed = !r["error"].is_null();
        if !warmup {
            s.requests += 1;
            s.failed += usize::from(failed);
        }
        let chunks: Vec<f64> = r["chunk_times_ms"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_f64).map(to_ns).collect())
            .unwrap_or_default();
        if failed || chunks.is_empty() {
            continue;
        }
        let start_ns = r["start_ms"].as_f64().map(to_ns).unwrap_or(f64::NAN);
        ok.push((
            warmup,
            r["queue_ms"].as_f64(),
            Stamps {
                start_ns,
                chunks_ns: chunks,
            },
        ));
    }
    ok.sort_by(|a, b| a.2.start_ns.total_cmp(&b.2.start_ns));
    let mut recs = recs.to_vec();
    recs.sort_by_key(|r| r.arrival_ns);
    let (meta, stamps): (Vec<(bool, Option<f64>)>, Vec<Stamps>) =
        ok.into_iter().map(|(w, q, st)| ((w, q), st)).unzip();
    let measured_ok = meta.iter().filter(|(w, _)| !w).count();
    let mut matched = 0;
    // Resource Timing's wait between fetch() and the request going out, and the TTFT error
    // without it (what remains: the network service, the response's way back, the reads).
    let (mut queue, mut ttft_less_queue) = (Vec::new(), Vec::new());
    for (i, j) in pair_by(&stamps, &recs, PAIR_SLACK_NS, events) {
        let (warmup, queue_ms) = meta[i];
        if !warmup {
            matched += 1;
            let Some(per_event) = events(&stamps[i], &recs[j]) else {
                continue;
            };
            if stamps[i].chunks_ns.len() < recs[j].departed_ns.len() {
                coalesced += 1;
            }
            let st = Stamps {
                start_ns: stamps[i].start_ns,
                chunks_ns: per_event.into_owned(),
            };
            compare_stamps(&st, &recs[j], &mut s);
            if let (Some(q), Some(e)) = (queue_ms, s.ttft_sent.last()) {
                queue.push(q);
                ttft_less_queue.push(e - q);
            }
        }
    }
    s.unmatched += measured_ok - matched;

    // Paint lag (paint − arrival, per painted piece of text) over the measured records.
    let mut lag: Vec<f64> = records
        .iter()
        .filter(|r| !r["warmup"].as_bool().unwrap_or(false))
        .flat_map(|r| {
            r["metrics"]["paint"]["lag_ms"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|v| v.as_f64())
        .collect();
    let paint_lag = (!lag.is_empty()).then(|| (pct(&mut lag, 50.0), pct(&mut lag, 99.0)));

    let f = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    let res = &out["timerResolutionMs"];
    let clock = &out["clock"];
    let mut notes = vec![format!(
        "clock map (page ms − CLOCK_MONOTONIC ms, min over sync reads): before {:.3}, after {:.3} ({} reads); used {:.3}",
        f(&clock["beforeMs"]),
        f(&clock["afterMs"]),
        clock["reads"].as_u64().unwrap_or(0),
        offset_ms
    )];
    let pair = |v: &[f64]| {
        let mut a = abs(v);
        format!("{:.3} / {:.3}", pct(&mut a, 50.0), pct(&mut a, 99.0))
    };
    notes.push(format!(
        "queue_ms (Resource Timing: fetch() until the request went out) p50 / p99: {} ms; |TTFT err − queue_ms| p50 / p99: {} ms ({} records)",
        pair(&queue),
        pair(&ttft_less_queue),
        queue.len()
    ));
    let note = |k: &str| out["notes"][k].as_str().unwrap_or("?").to_owned();
    notes.push(format!(
        "stamps taken on: {}; clock map {}; Worker isolated {}, timer {} ms",
        note("stamp_thread"),
        note("stamp_clock_map"),
        note("worker_cross_origin_isolated"),
        note("worker_timer_resolution_ms")
    ));
    if let Some(ua) = out["userAgent"].as_str() {
        notes.push(format!("browser: {ua}"));
    }
    if let Some(v) = out["httpVersions"].as_array() {
        let v: Vec<&str> = v.iter().filter_map(Value::as_str).collect();
        notes.push(format!("HTTP: {}", v.join(", ")));
    }
    for w in out["warnings"].as_array().into_iter().flatten() {
        notes.push(format!(
            "bench warning {}: {}",
            w["code"].as_str().unwrap_or("?"),
            w["message"].as_str().unwrap_or("")
        ));
    }
    Ok(PageRun {
        paint_lag,
        samples: s,
        isolated: out["crossOriginIsolated"].as_bool().unwrap_or(false),
        resolution_us: (f(&res["min"]) * 1e3, f(&res["median"]) * 1e3),
        coalesced,
        notes,
    })
}

fn header() {
    println!(
        "{:>8} {:>5} {:>5} {:>8} | {:>15} {:>15} | {:>9} | {:>5} {:>17} | {:>7}",
        "client",
        "conc",
        "reqs",
        "fail/unm",
        "|TTFT err|",
        "|ITL err|",
        "ITL<=1ms",
        "COI",
        "timer resolution",
        "load 1m"
    );
    println!(
        "{:>8} {:>5} {:>5} {:>8} | {:>15} {:>15} | {:>9} | {:>5} {:>17} | {:>7}",
        "", "", "", "", "p50 / p99 ms", "p50 / p99 ms", "", "", "", ""
    );
}

/// One row of the table (figures vs the emulator's send stamps).
fn row(client: &str, concurrency: usize, s: &Samples, coi: &str, resolution: &str, load: &str) {
    let pair = |v: &[f64]| {
        let mut a = abs(v);
        (pct(&mut a, 50.0), pct(&mut a, 99.0))
    };
    let f = |(a, b): (f64, f64)| format!("{a:.3} / {b:.3}");
    let (ttft, itl) = (pair(&s.ttft_sent), pair(&s.itl_sent));
    let met = if s.ttft_sent.is_empty() {
        "n/a"
    } else if itl.1 <= TARGET_P99_MS {
        "yes"
    } else {
        "NO"
    };
    let met = if s.failed + s.unmatched > 0 && !s.ttft_sent.is_empty() {
        format!("{met}*")
    } else {
        met.to_owned()
    };
    let load1 = load.split_whitespace().next().unwrap_or("?");
    println!(
        "{:>8} {:>5} {:>5} {:>8} | {:>15} {:>15} | {:>9} | {:>5} {:>17} | {:>7}",
        client,
        concurrency,
        s.requests,
        format!("{}/{}", s.failed, s.unmatched),
        f(ttft),
        f(itl),
        met,
        coi,
        resolution,
        load1
    );
}

pub(crate) async fn compare(
    server: &Server,
    workers: &super::Workers,
    levels: &[usize],
    rounds: usize,
    variants: &[Variant],
    engines: &[&'static str],
) -> anyhow::Result<()> {
    println!("load average (1, 5, 15 min) at start: {}", load_average());
    let cli_res = format!("{:.3} µs Instant", instant_resolution_us());
    let mut cli_rows = Vec::new();
    let mut page_rows = Vec::new();
    let mut errors = Vec::new();
    for &c in levels {
        let r = if rounds > 0 {
            rounds
        } else if c == 1 {
            20
        } else {
            10
        };
        let s = level(server, workers, c, r).await;
        let load = load_average();
        cli_rows.push((c, s, load));

        for (&engine, &v) in engines
            .iter()
            .flat_map(|e| variants.iter().map(move |v| (e, v)))
        {
            settle(server).await;
            let _ = server.emu().take_records();
            let base = server.emu().base_url();
            let requests = c * r;
            let before = server.emu().stats();
            let out = tokio::task::spawn_blocking(move || run_page(&base, c, requests, v, engine))
                .await?;
            settle(server).await;
            let recs = server.emu().take_records();
            let after = server.emu().stats();
            let load = load_average();
            match out.and_then(|o| page_samples(&o, &recs)) {
                Ok(mut p) => {
                    let served = after.requests_served - before.requests_served;
                    p.notes.push(format!(
                        "the emulator served {served} requests to the page ({} streams incl. 2 clock-sync ones, {} others: CORS preflights) on {} new connections",
                        recs.len(),
                        served.saturating_sub(recs.len() as u64),
                        after.connections - before.connections
                    ));
                    page_rows.push((c, engine, v, p, load));
                }
                Err(e) => errors.push(format!("{engine} {} c={c}: {e:#}", v.label)),
            }
        }
    }

    println!();
    println!(
        "timing error vs the emulator's send stamps (TTFT: measured − (first sent − arrival); ITL: measured gap − sent gap)"
    );
    println!(
        "target: chunk-arrival (ITL) error p99 <= {TARGET_P99_MS} ms; TTFT error is shown beside it and includes the browser's fetch() dispatch (queue_ms below)"
    );
    header();
    for (c, s, load) in &cli_rows {
        row("CLI", *c, s, "n/a", &cli_res, load);
    }
    for (c, engine, v, p, load) in &page_rows {
        let res = format!("{:.1} µs (med {:.1})", p.resolution_us.0, p.resolution_us.1);
        let label = if engines.len() > 1 {
            format!("{}:{}", &engine[..2], v.label)
        } else {
            v.label.to_owned()
        };
        row(
            &label,
            *c,
            &p.samples,
            if p.isolated { "yes" } else { "NO" },
            &res,
            load,
        );
    }
    println!(
        "(*: over the paired requests only; fail/unm = failed / not paired with a server record)"
    );
    println!();
    for (c, _, load) in &cli_rows {
        println!("CLI c={c}: load average after the level: {load}");
    }
    for (c, engine, v, p, _) in &page_rows {
        if let Some((p50, p99)) = p.paint_lag {
            println!(
                "{engine} {} c={c}: paint lag (paint − arrival) p50 / p99: {p50:.2} / {p99:.2} ms",
                v.label
            );
        }
    }
    for (c, engine, v, p, load) in &page_rows {
        let label = format!("{engine} {}", v.label);
        println!("{label} c={c}: load average after the level: {load}");
        if p.coalesced > 0 {
            println!(
                "{label} c={c}: {} measured records had reads carrying several events (each event given its read's stamp, as the CLI does)",
                p.coalesced
            );
        }
        for n in &p.notes {
            println!("{label} c={c}: {n}");
        }
    }
    over_floor(
        page_rows
            .iter()
            .map(|(c, engine, v, p, _)| (*c, *engine, v.label, &p.samples)),
    );
    println!("load average (1, 5, 15 min) at end: {}", load_average());
    if !errors.is_empty() {
        for e in &errors {
            println!("{e}");
        }
        anyhow::bail!("{} browser level(s) failed", errors.len());
    }
    Ok(())
}
