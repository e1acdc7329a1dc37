//! `cargo xtask serve-bench --burst`: eight new requests at once against a fresh
//! `tpsmeter serve --parallel 8`, the case continuous batching's prefill scheduling decides
//! (TTFT p50 against p99: do the prompts of a burst prefill together or one after another).
//!
//! Each trial starts a fresh server (empty slots: no prompt is reused), runs `tpsmeter bench
//! --concurrency 8 --requests 8 --warmup 0` against it and reads TTFT p50, p99 and aggregate
//! TPS from the JSON report. Variants (another binary, say one built from main, or other
//! serve flags) alternate trial by trial, in a rotating order, so that the machine's load
//! falls on all of them alike; the table gives each variant's medians, with `uptime` before
//! and after.
//!
//! `--variant LABEL=[BIN][:SERVE ARGS]` adds one (BIN empty: this checkout's release build;
//! SERVE ARGS split on spaces); without any, this checkout's build alone. `--trials N`
//! (default 5). Where several checkouts share one target directory, copy each binary out and
//! name it: another checkout's build may replace `target/release/tpsmeter` mid-run.

use crate::assets;
use crate::demo::{BENCH_PROMPT, free_port, release_cli, start};
use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use std::process::Command;

struct Variant {
    label: String,
    bin: PathBuf,
    serve_args: Vec<String>,
}

/// One trial's figures.
#[derive(Clone, Copy)]
struct Figures {
    ttft_p50: f64,
    ttft_p99: f64,
    agg_tps: f64,
}

pub fn run(args: &[String]) -> Result<()> {
    assets::setup_all(false)?;
    let mut trials = 5usize;
    let mut variants = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--trials" => {
                trials = it
                    .next()
                    .context("--trials N")?
                    .parse()
                    .context("--trials N")?;
            }
            "--variant" => {
                let v = it.next().context("--variant LABEL=[BIN][:ARGS]")?;
                let (label, rest) = v.split_once('=').context("--variant LABEL=[BIN][:ARGS]")?;
                let (bin, serve_args) = rest.split_once(':').unwrap_or((rest, ""));
                variants.push(Variant {
                    label: label.to_owned(),
                    bin: if bin.is_empty() {
                        release_cli()?
                    } else {
                        PathBuf::from(bin)
                    },
                    serve_args: serve_args.split_whitespace().map(str::to_owned).collect(),
                });
            }
            other => bail!("serve-bench --burst: unknown argument {other:?}"),
        }
    }
    if variants.is_empty() {
        variants.push(Variant {
            label: "this checkout".into(),
            bin: release_cli()?,
            serve_args: Vec::new(),
        });
    }
    let model = assets::model_path();
    let dir = std::env::temp_dir().join(format!("tpsmeter-burst-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let load_before = uptime();
    let mut results: Vec<Vec<Figures>> = vec![Vec::new(); variants.len()];
    for trial in 0..trials {
        for k in 0..variants.len() {
            let i = (trial + k) % variants.len();
            let v = &variants[i];
            let f = one_burst(v, &model, &dir.join(format!("{trial}-{i}.json")))?;
            println!(
                "trial {trial} {:<16} TTFT p50 {:7.0} ms  p99 {:7.0} ms  aggregate {:6.1} tok/s",
                v.label, f.ttft_p50, f.ttft_p99, f.agg_tps
            );
            results[i].push(f);
        }
    }
    let load_after = uptime();
    println!(
        "\n8 new requests at once, serve --parallel 8 --context 2048, --max-tokens 64, \
         {trials} trials, medians:"
    );
    println!(
        "{:<16} {:>12} {:>12} {:>8} {:>16}",
        "variant", "TTFT p50 ms", "TTFT p99 ms", "p99/p50", "aggregate tok/s"
    );
    for (v, r) in variants.iter().zip(&results) {
        let p50 = median(r.iter().map(|f| f.ttft_p50));
        let p99 = median(r.iter().map(|f| f.ttft_p99));
        let tps = median(r.iter().map(|f| f.agg_tps));
        println!(
            "{:<16} {:>12.0} {:>12.0} {:>8.2} {:>16.1}",
            v.label,
            p50,
            p99,
            p99 / p50,
            tps
        );
    }
    println!("load before: {load_before}\nload after:  {load_after}");
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// A fresh server of variant `v`, eight requests at once against it.
fn one_burst(v: &Variant, model: &std::path::Path, json: &std::path::Path) -> Result<Figures> {
    let port = free_port()?;
    let server = start(
        Command::new(&v.bin)
            .arg("serve")
            .arg("--model")
            .arg(model)
            .args(["--parallel", "8", "--context", "2048"])
            .args(["--port", &port.to_string()])
            .args(&v.serve_args),
        port,
        "tpsmeter serve",
    )?;
    let out = Command::new(&v.bin)
        .args(["bench", "--api", "openai-chat", "--url"])
        .arg(format!("http://127.0.0.1:{port}"))
        .args(["--model", "SmolLM2-135M-Instruct"])
        .args(["--concurrency", "8", "--requests", "8", "--warmup", "0"])
        .args(["--max-tokens", "64", "--prompt", BENCH_PROMPT, "--quiet"])
        // A burst on a loaded 2-core machine can keep a stream silent for tens of seconds
        // before its prompt runs: a figure, not a failure.
        .args(["--timeout", "600", "--idle-timeout", "600"])
        .arg("--json")
        .arg(json)
        .output()
        .context("run tpsmeter bench")?;
    drop(server);
    if !out.status.success() {
        bail!(
            "tpsmeter bench failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = std::fs::read_to_string(json)?;
    Ok(Figures {
        ttft_p50: field(&text, "\"ttft_ms\"", "\"p50\"")?,
        ttft_p99: field(&text, "\"ttft_ms\"", "\"p99\"")?,
        agg_tps: field(&text, "\"aggregate_output_tps\"", "")?,
    })
}

/// The number after `key` (then `inner`, inside the object that follows `key`) at its first
/// occurrence in the report: the first level's summary comes before the per-request records.
fn field(text: &str, key: &str, inner: &str) -> Result<f64> {
    let at = text
        .find(key)
        .with_context(|| format!("{key} in the report"))?
        + key.len();
    let mut rest = &text[at..];
    if !inner.is_empty() {
        let i = rest
            .find(inner)
            .with_context(|| format!("{key}.{inner} in the report"))?;
        rest = &rest[i + inner.len()..];
    }
    let rest = rest.trim_start_matches([':', ' ']);
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | 'e' | 'E' | '+')))
        .unwrap_or(rest.len());
    rest[..end]
        .parse()
        .with_context(|| format!("{key} {inner} in the report: {:?}", &rest[..end]))
}

fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn uptime() -> String {
    Command::new("uptime")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}
