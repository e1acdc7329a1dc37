//! The same levels driven by GuideLLM, side by side with tpsmeter's client.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use tpsmeter_emulator::{RequestRecord, clock};

use super::{Samples, Server, abs, level, pct};

/// GuideLLM runs that take longer than this are reported as failed (it may not keep up).
const PEER_TIMEOUT: Duration = Duration::from_secs(240);

fn guidellm() -> Option<PathBuf> {
    let path = std::env::var_os("TPSMETER_GUIDELLM")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(".cache/tpsmeter/peers/guidellm/bin/guidellm"))
        })?;
    path.exists().then_some(path)
}

/// CLOCK_MONOTONIC ns minus CLOCK_REALTIME ns, read back to back: converts GuideLLM's
/// `time.time()` stamps to the emulator's clock.
fn realtime_to_monotonic_ns() -> f64 {
    let mono = clock::monotonic_ns() as f64;
    let real = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as f64)
        .unwrap_or(0.0);
    mono - real
}

/// Runs GuideLLM at `concurrency` for `requests` requests; returns its JSON report.
fn run_guidellm(
    bin: &PathBuf,
    base_url: &str,
    concurrency: usize,
    requests: usize,
) -> anyhow::Result<Value> {
    let dir = std::env::temp_dir().join(format!("tpsmeter-peer-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let prompts = dir.join("prompts.txt");
    let lines: String = (0..requests.max(1))
        .map(|i| format!("Say something, number {i}.\n"))
        .collect();
    std::fs::write(&prompts, lines)?;
    let out = dir.join(format!("guidellm-{concurrency}.json"));
    let _ = std::fs::remove_file(&out);
    let args = [
        "run".to_owned(),
        "--backend".into(),
        format!("kind=openai_http,target={base_url},model=emulator"),
        "--data".into(),
        format!("kind=text_file,path={}", prompts.display()),
        "--profile".into(),
        format!("kind=concurrent,streams={concurrency}"),
        "--constraint".into(),
        format!("kind=max_requests,count={requests}"),
        "--output".into(),
        format!("kind=json,path={}", out.display()),
        "--disable-console".into(),
    ];
    eprintln!("  $ HF_HUB_OFFLINE=1 {} {}", bin.display(), args.join(" "));
    let mut child = Command::new(bin)
        .args(&args)
        .env("HF_HUB_OFFLINE", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            anyhow::ensure!(status.success(), "guidellm exited with {status}");
            break;
        }
        if start.elapsed() > PEER_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!("guidellm ran past {PEER_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(serde_json::from_slice(&std::fs::read(&out)?)?)
}

/// GuideLLM's successful requests, compared with the server's records.
fn guidellm_samples(report: &Value, records: &[RequestRecord], offset_ns: f64) -> Samples {
    let mut s = Samples::default();
    let reqs = &report["benchmarks"][0]["requests"];
    s.failed = ["errored", "incomplete"]
        .iter()
        .map(|k| reqs[*k].as_array().map_or(0, Vec::len))
        .sum();
    let ok = reqs["successful"].as_array().cloned().unwrap_or_default();
    s.requests = ok.len() + s.failed;
    for r in &ok {
        let id = r["response_id"]
            .as_str()
            .and_then(|i| i.strip_prefix("chatcmpl-"))
            .and_then(|i| i.parse::<u64>().ok());
        let Some(rec) = id.and_then(|id| records.iter().find(|rec| rec.id == id)) else {
            s.unmatched += 1;
            continue;
        };
        let t = &r["info"]["timings"];
        let at = |k: &str| t[k].as_f64().map(|sec| sec * 1e9 + offset_ns);
        let (Some(start), Some(first), Some(last)) = (
            at("request_start"),
            at("first_token_iteration"),
            at("last_token_iteration"),
        ) else {
            s.unmatched += 1;
            continue;
        };
        let n = rec.departed_ns.len();
        if n < 2 {
            s.unmatched += 1;
            continue;
        }
        let ms = |ns: f64| ns / 1e6;
        let ttft = ms(first - start);
        s.ttft_sent
            .push(ttft - ms(rec.departed_ns[0] as f64 - rec.arrival_ns as f64));
        let sent_span = (rec.departed_ns[n - 1] - rec.departed_ns[0]) as f64;
        s.mean_itl_sent
            .push(ms(last - first - sent_span) / (n - 1) as f64);
        s.last_deliver
            .push(ms(last - rec.departed_ns[n - 1] as f64));
    }
    s
}

fn cells(s: &Samples) -> String {
    let pair = |v: &[f64]| {
        let mut a = abs(v);
        format!("{:.3} / {:.3}", pct(&mut a, 50.0), pct(&mut a, 99.0))
    };
    format!(
        "{:>6} {:>5} {:>15} {:>15} {:>15}",
        s.requests,
        s.failed + s.unmatched,
        pair(&s.ttft_sent),
        pair(&s.mean_itl_sent),
        pair(&s.last_deliver)
    )
}

pub(crate) async fn compare(
    server: &Server,
    workers: &super::Workers,
    levels: &[usize],
) -> anyhow::Result<()> {
    let bin = guidellm();
    if bin.is_none() {
        eprintln!(
            "GuideLLM not found (run crates/tpsmeter-emulator/scripts/peer.sh or set TPSMETER_GUIDELLM): tpsmeter only"
        );
    }
    println!(
        "{:>9} {:>6} | {:>6} {:>5} {:>15} {:>15} {:>15}",
        "tool", "conc", "reqs", "fail", "TTFT vs sent", "meanITL vs sent", "last deliver"
    );
    println!(
        "{:>9} {:>6} | {:>6} {:>5} {:>15} {:>15} {:>15}",
        "", "", "", "", "p50 / p99 ms", "p50 / p99 ms", "p50 / p99 ms"
    );
    for &c in levels {
        let ours = level(server, workers, c, 2).await;
        println!("{:>9} {:>6} | {}", "tpsmeter", c, cells(&ours));
        let Some(bin) = bin.as_ref() else { continue };
        super::settle(server).await;
        let _ = server.emu().take_records();
        let offset = realtime_to_monotonic_ns();
        let base = server.emu().base_url();
        let (bin2, requests) = (bin.clone(), 2 * c);
        let report =
            tokio::task::spawn_blocking(move || run_guidellm(&bin2, &base, c, requests)).await?;
        super::settle(server).await;
        let records = server.emu().take_records();
        match report {
            Ok(report) => {
                let theirs = guidellm_samples(&report, &records, offset);
                println!("{:>9} {:>6} | {}", "guidellm", c, cells(&theirs));
            }
            Err(e) => println!("{:>9} {:>6} | failed: {e}", "guidellm", c),
        }
    }
    Ok(())
}
