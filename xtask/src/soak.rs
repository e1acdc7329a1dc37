//! `cargo xtask soak [--minutes M] [--clients C]`: `tpsmeter serve` under a bounded mix of
//! good and hostile clients on loopback, for M minutes (default 10) with C client threads
//! (default 12), watching the server's memory.
//!
//! Each client thread draws, request after request, from a fixed mix: good streamed and
//! whole answers (each must come back complete), clients that leave mid-stream, malformed
//! JSON, absurd sampling values, a wrong content type, a body announced over the cap, a
//! chunked body past the cap, a prompt past the context, a client stalling in its headers or
//! its body, and a burst of 50 connections opened and dropped. Every hostile one must get the
//! status the server promises for it. The server's resident memory (VmRSS of
//! `/proc/<pid>/status`) is sampled every 5 s.
//!
//! It prints the counts per kind and the memory over time, and fails if any good request was
//! not answered in full, any hostile one got another status, the server died, or its memory
//! at the end is more than 32 MiB over its level after the first minute (a warm server's
//! graphs, pools and caches are all made by then; growth past that is a leak).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::assets;
use crate::demo::{free_port, release_cli, start};

/// Memory growth past the first minute's level that fails the soak.
const GROWTH_LIMIT_KIB: u64 = 32 << 10;
/// `tpsmeter serve`'s caps (`crates/tpsmeter-cli/src/serve/listen.rs, http.rs`).
const MAX_BODY_BYTES: usize = 1 << 20;
const CONTEXT: usize = 512;

#[derive(Default)]
struct Tally {
    /// Per kind: (sent, as promised).
    kinds: BTreeMap<&'static str, (u64, u64)>,
    /// What broke a promise, first few.
    failures: Vec<String>,
}

pub fn run(args: &[String]) -> Result<()> {
    let mut minutes = 10.0f64;
    let mut clients = 12usize;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let v = it.next().with_context(|| format!("{a} needs a value"))?;
        match a.as_str() {
            "--minutes" => minutes = v.parse().context("--minutes")?,
            "--clients" => clients = v.parse().context("--clients")?,
            _ => bail!("unknown argument {a} (--minutes M, --clients C)"),
        }
    }
    anyhow::ensure!(
        minutes > 0.0 && clients > 0,
        "--minutes and --clients must be positive"
    );
    assets::setup_all(false)?;
    let tpsmeter = release_cli()?;
    let port = free_port()?;
    let server = start(
        Command::new(&tpsmeter)
            .arg("serve")
            .arg("--model")
            .arg(assets::model_path())
            .args(["--parallel", "4", "--context", &CONTEXT.to_string()])
            .args(["--host", "127.0.0.1", "--port", &port.to_string()]),
        port,
        "tpsmeter serve",
    )?;
    let pid = server.0.id();
    println!(
        "soak: tpsmeter serve (pid {pid}, --parallel 4, --context {CONTEXT}) on 127.0.0.1:{port}, \
         {clients} client threads for {minutes} min"
    );
    let tally = Arc::new(Mutex::new(Tally::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let end = t0 + Duration::from_secs_f64(minutes * 60.0);
    let threads: Vec<_> = (0..clients)
        .map(|i| {
            let (tally, stop) = (tally.clone(), stop.clone());
            std::thread::spawn(move || client(port, i as u64, end, &tally, &stop))
        })
        .collect();
    let mut rss: Vec<(f64, u64)> = Vec::new();
    while Instant::now() < end {
        let kib = rss_kib(pid).context("the server is gone")?;
        let at = t0.elapsed().as_secs_f64();
        rss.push((at, kib));
        if rss.len() % 12 == 1 {
            println!(
                "  {:>5.1} min  RSS {:>7.1} MiB",
                at / 60.0,
                kib as f64 / 1024.0
            );
        }
        std::thread::sleep(
            Duration::from_secs(5).min(end.saturating_duration_since(Instant::now())),
        );
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    let last = rss_kib(pid).context("the server died during the soak")?;
    rss.push((t0.elapsed().as_secs_f64(), last));
    let tally = tally
        .lock()
        .map_err(|_| anyhow::anyhow!("a client thread panicked"))?;

    println!(
        "\n{:<24} {:>8} {:>12}",
        "client kind", "sent", "as promised"
    );
    let (mut sent, mut kept) = (0, 0);
    for (kind, (n, ok)) in &tally.kinds {
        println!("{kind:<24} {n:>8} {ok:>12}");
        sent += n;
        kept += ok;
    }
    println!("{:<24} {sent:>8} {kept:>12}", "all");
    let warm: Vec<u64> = rss
        .iter()
        .filter(|(t, _)| (60.0..120.0).contains(t))
        .map(|&(_, k)| k)
        .collect();
    let base = warm
        .iter()
        .copied()
        .max()
        .or_else(|| rss.first().map(|r| r.1))
        .unwrap_or(0);
    let peak = rss.iter().map(|r| r.1).max().unwrap_or(0);
    let mib = |k: u64| k as f64 / 1024.0;
    println!(
        "server RSS: {:.1} MiB after the first minute, {:.1} MiB at the end, peak {:.1} MiB \
         ({} samples; load average now {})",
        mib(base),
        mib(last),
        mib(peak),
        rss.len(),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    for f in tally.failures.iter().take(10) {
        println!("  broken promise: {f}");
    }
    let good_lost = tally
        .kinds
        .iter()
        .filter(|(k, _)| k.starts_with("good"))
        .any(|(_, (n, ok))| n != ok);
    if kept != sent || good_lost {
        bail!(
            "{} of {sent} requests did not get what the server promises",
            sent - kept
        );
    }
    if last > base + GROWTH_LIMIT_KIB {
        bail!(
            "server memory grew {:.1} MiB after its first minute (limit {} MiB)",
            mib(last - base),
            GROWTH_LIMIT_KIB >> 10
        );
    }
    println!("soak passed: every request answered as promised, no memory growth past the limit");
    Ok(())
}

fn rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The kinds of client, in the order a thread cycles through them (weights by repetition).
const MIX: &[&str] = &[
    "good stream",
    "good whole",
    "good stream",
    "leaves mid-stream",
    "malformed json",
    "good stream",
    "absurd values",
    "wrong content type",
    "good whole",
    "announced too large",
    "prompt past context",
    "good stream",
    "chunked too large",
    "stalls in headers",
    "good stream",
    "stalls in body",
    "connection burst",
];

fn client(port: u16, seed: u64, end: Instant, tally: &Mutex<Tally>, stop: &AtomicBool) {
    let mut i = seed as usize * 7;
    while Instant::now() < end && !stop.load(Ordering::Relaxed) {
        let kind = MIX[i % MIX.len()];
        i += 1;
        let outcome = one(port, kind, i);
        if let Ok(mut t) = tally.lock() {
            let e = t.kinds.entry(kind).or_default();
            e.0 += 1;
            match outcome {
                Ok(()) => e.1 += 1,
                Err(why) => t.failures.push(format!("{kind}: {why}")),
            }
        }
    }
}

fn connect(port: u16) -> std::io::Result<TcpStream> {
    let s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(120)))?;
    Ok(s)
}

/// Status and body of the one response on a connection read to its end.
fn response(s: &mut TcpStream) -> Result<(u16, String)> {
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .with_context(|| format!("no status line in {:?}", &raw[..raw.len().min(80)]))?;
    Ok((status, body.to_owned()))
}

fn post(port: u16, content_type: &str, body: &str) -> Result<(u16, String)> {
    let mut s = connect(port)?;
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    response(&mut s)
}

fn chat_body(content: &str, stream: bool, max_tokens: usize, extra: &str) -> String {
    let msg = format!("{content:?}");
    format!(
        r#"{{"messages":[{{"role":"user","content":{msg}}}],"max_tokens":{max_tokens},"temperature":0.7,"seed":7,"stream":{stream}{extra}}}"#
    )
}

fn expect(status: u16, want: u16, body: &str) -> Result<()> {
    if status != want {
        bail!(
            "status {status}, promised {want}: {}",
            &body[..body.len().min(200)]
        );
    }
    if want != 200 && !body.contains("\"error\"") {
        bail!("a {status} without OpenAI's error object: {body:.200}");
    }
    Ok(())
}

fn one(port: u16, kind: &str, i: usize) -> Result<()> {
    let prompts = [
        "Name a color.",
        "Write one sentence about the sea.",
        "What is 2 + 2?",
        "Say hello in French.",
    ];
    let prompt = prompts[i % prompts.len()];
    match kind {
        "good stream" => {
            let (status, body) = post(port, "application/json", &chat_body(prompt, true, 24, ""))?;
            expect(status, 200, &body)?;
            if !body.contains("data: [DONE]") {
                bail!("stream without [DONE]");
            }
            Ok(())
        }
        "good whole" => {
            let (status, body) = post(port, "application/json", &chat_body(prompt, false, 24, ""))?;
            expect(status, 200, &body)?;
            if !body.contains("\"finish_reason\"") {
                bail!("answer without finish_reason: {body:.200}");
            }
            Ok(())
        }
        "leaves mid-stream" => {
            let mut s = connect(port)?;
            let body = chat_body(prompt, true, 400, r#","ignore_eos":true"#);
            write!(
                s,
                "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\n\r\n{body}",
                body.len()
            )?;
            let mut first = [0u8; 64];
            let n = s.read(&mut first)?;
            let _ = s.shutdown(Shutdown::Both);
            if !first[..n].starts_with(b"HTTP/1.1 200") {
                bail!("{:?}", String::from_utf8_lossy(&first[..n]));
            }
            Ok(())
        }
        "malformed json" => {
            let (status, body) = post(port, "application/json", r#"{"messages": [ {"role""#)?;
            expect(status, 400, &body)
        }
        "absurd values" => {
            let extra = [
                r#","top_p":9"#,
                r#","temperature":-1"#,
                r#","repeat_penalty":0"#,
                r#","n":3"#,
            ][i % 4];
            let (status, body) =
                post(port, "application/json", &chat_body(prompt, true, 8, extra))?;
            expect(status, 400, &body)
        }
        "wrong content type" => {
            let (status, body) = post(
                port,
                "application/x-www-form-urlencoded",
                &chat_body(prompt, false, 8, ""),
            )?;
            expect(status, 415, &body)
        }
        "announced too large" => {
            let mut s = connect(port)?;
            write!(
                s,
                "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\n\r\n",
                1u64 << 36
            )?;
            let (status, body) = response(&mut s)?;
            expect(status, 413, &body)
        }
        "chunked too large" => {
            let mut s = connect(port)?;
            write!(
                s,
                "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                 Transfer-Encoding: chunked\r\n\r\n"
            )?;
            let chunk = vec![b' '; 64 << 10];
            let mut sent = 0;
            while sent <= MAX_BODY_BYTES {
                let ok = write!(s, "{:x}\r\n", chunk.len()).is_ok()
                    && s.write_all(&chunk).is_ok()
                    && s.write_all(b"\r\n").is_ok();
                if !ok {
                    break;
                }
                sent += chunk.len();
            }
            let (status, body) = response(&mut s)?;
            expect(status, 413, &body)
        }
        "prompt past context" => {
            let long = "word ".repeat(2 * CONTEXT);
            let (status, body) = post(port, "application/json", &chat_body(&long, true, 8, ""))?;
            expect(status, 400, &body)?;
            if !body.contains("context_length_exceeded") {
                bail!("{body:.200}");
            }
            Ok(())
        }
        "stalls in headers" => {
            let mut s = connect(port)?;
            s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-")?;
            // The server drops the connection at its header timeout; reading waits for that.
            let mut rest = Vec::new();
            let _ = s.read_to_end(&mut rest);
            Ok(())
        }
        "stalls in body" => {
            let mut s = connect(port)?;
            write!(
                s,
                "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                 Content-Length: 500\r\n\r\n{{\"messages\""
            )?;
            let (status, body) = response(&mut s)?;
            expect(status, 408, &body)
        }
        "connection burst" => {
            let burst: Vec<TcpStream> = (0..50).filter_map(|_| connect(port).ok()).collect();
            if burst.len() != 50 {
                bail!("only {} of 50 connections opened", burst.len());
            }
            drop(burst);
            Ok(())
        }
        other => bail!("unknown client kind {other}"),
    }
}
