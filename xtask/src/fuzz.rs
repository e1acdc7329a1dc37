//! `cargo xtask fuzz [--runs N] [--jobs J] [--seconds S] [--fresh] [targets...]`: builds the
//! libFuzzer targets in `fuzz/` with cargo-fuzz, writes seed corpora from the real files, runs
//! each target for `N` executions under memory and time caps, and prints one row per target:
//! executions, exec/s, crashes, peak RSS and corpus size. Fails when any target crashed,
//! timed out or ran out of memory, naming the file libFuzzer wrote the input to.
//!
//! `--seconds` stops each target after S seconds even if N is not reached (the table says
//! how many ran); `--jobs` runs J targets at once; `--fresh` starts from the seeds alone
//! in a corpus of its own, so the time does not grow with what earlier campaigns found.
//!
//! Everything lands in the cache directory: cargo-fuzz (pinned) in `tools/`, the build in
//! `fuzz-target/` (apart from the main build, so neither waits on the other's lock), corpora
//! in `fuzz/corpus/<target>/`, crash inputs in `fuzz/artifacts/<target>/`, the logs of runs
//! that failed or were interrupted in `fuzz/logs/<target>-<pid>.log`.

use crate::assets::cache_dir;
use crate::fuzz_seeds;
use crate::sh::{self, repo_root};
use crate::tools::{cargo, tools_bin};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// cargo-fuzz, pinned: its build flags (sanitizer, coverage passes) change between releases,
/// and a CI result should not.
const CARGO_FUZZ_VERSION: &str = "0.13.2";

/// Executions per target when `--runs` is not given: a smoke run.
pub const DEFAULT_RUNS: u64 = 10_000;

/// RSS cap per target process (libFuzzer kills and reports past it). The parsers' own caps
/// bound what one input can make them allocate to a small multiple of its size; AddressSanitizer
/// and the corpus in memory account for the rest.
const RSS_LIMIT_MB: u64 = 2048;
/// AddressSanitizer's quarantine (freed memory it holds back to catch use-after-free): its
/// default 256 MB, with the allocator's retention around it, is RSS that no input owns. A
/// chat_template campaign reached 2,393 MB this way and was stopped as "out-of-memory" on an
/// input that alone peaks at 52 MB; its whole corpus (21,221 inputs) replayed in one process
/// peaks at 1,866 MB with the default quarantine, 740 MB with 64 MB and 103 MB without one.
/// 64 MB keeps the use-after-free net and leaves the RSS cap room to catch what an input holds.
const QUARANTINE_MB: u64 = 64;
/// Largest single allocation (AddressSanitizer's malloc hook reports it at once, before the
/// memory is touched): a length taken from input bytes and trusted shows up here.
const MALLOC_LIMIT_MB: u64 = 512;
/// Seconds one input may run: the chat template's fuel (50 M instructions) ends a hostile
/// loop in a few seconds; anything slower is a hang.
const TIMEOUT_S: u64 = 30;

/// One fuzz target and its input size cap.
struct Target {
    name: &'static str,
    /// `-max_len`: large enough for the real seeds, small enough that executions stay fast.
    max_len: usize,
}

/// Every target in `fuzz/fuzz_targets/`. max_len by target:
/// - GGUF (64 KiB): the shrunk SmolLM2 / Gemma 3 headers (1,024 tokens, their real chat
///   templates and keys) are 20-40 KiB; whole vocabularies (MiBs) would cost milliseconds
///   per execution and add nothing a 1,024-entry array does not exercise.
/// - stream_parser (8 KiB): the recorded streams are under 4 KiB; every input also runs one
///   byte at a time, which costs a parser call per byte.
/// - chat_template (16 KiB): real templates are 1-10 KiB, plus the messages.
/// - serve_request (16 KiB): a chat request with several messages; the server's own 4 MiB
///   body cap only scales the same JSON paths.
/// - redactor (4 KiB): an error message is capped at 1,000 characters before it is stored.
/// - dataset (16 KiB): a few entries of each shape; the caps' own paths are unit-tested with
///   small caps, as a 16 MiB line would cost milliseconds per execution.
const TARGETS: [Target; 8] = [
    Target {
        name: "gguf_slice",
        max_len: 64 << 10,
    },
    Target {
        name: "gguf_push",
        max_len: 64 << 10,
    },
    Target {
        name: "model_metadata",
        max_len: 64 << 10,
    },
    Target {
        name: "stream_parser",
        max_len: 8 << 10,
    },
    Target {
        name: "chat_template",
        max_len: 16 << 10,
    },
    Target {
        name: "serve_request",
        max_len: 16 << 10,
    },
    Target {
        name: "redactor",
        max_len: 4 << 10,
    },
    Target {
        name: "dataset",
        max_len: 16 << 10,
    },
];

/// What one target's run gave.
#[derive(Debug, Default)]
struct Stats {
    executions: u64,
    exec_per_sec: u64,
    peak_rss_mb: u64,
    corpus_files: usize,
    /// Crash, timeout or out-of-memory inputs libFuzzer wrote.
    findings: Vec<String>,
    exit_ok: bool,
    /// libFuzzer stopped on a signal (Ctrl-C, `kill`): its non-zero exit is not a finding.
    interrupted: bool,
}

pub fn run(args: &[String]) -> Result<()> {
    let mut runs = DEFAULT_RUNS;
    let mut jobs = 1usize;
    let mut seconds: Option<u64> = None;
    let mut fresh = false;
    let mut names = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--runs" => runs = it.next().context("--runs needs a number")?.parse()?,
            "--jobs" => jobs = it.next().context("--jobs needs a number")?.parse()?,
            "--fresh" => fresh = true,
            "--seconds" => {
                seconds = Some(it.next().context("--seconds needs a number")?.parse()?);
            }
            other if other.starts_with('-') => bail!("unknown fuzz option {other:?}"),
            other => names.push(other.to_owned()),
        }
    }
    let targets: Vec<&Target> = if names.is_empty() {
        TARGETS.iter().collect()
    } else {
        names
            .iter()
            .map(|n| {
                TARGETS
                    .iter()
                    .find(|t| t.name == n)
                    .with_context(|| format!("no fuzz target {n:?}"))
            })
            .collect::<Result<_>>()?
    };
    let cargo_fuzz = install_cargo_fuzz()?;
    let toolchain = Toolchain::detect();
    build(&cargo_fuzz, toolchain)?;
    let root = cache_dir().join("fuzz");
    // libFuzzer replays its whole corpus before the first mutation: a corpus grown by
    // campaigns would make CI's time grow with them, so CI starts from the seeds alone.
    let corpus_root = root.join(if fresh { "ci-corpus" } else { "corpus" });
    if fresh {
        let _ = std::fs::remove_dir_all(&corpus_root);
    }
    fuzz_seeds::write_all(&corpus_root)?;

    let mut results: Vec<(&str, Stats)> = Vec::new();
    for batch in targets.chunks(jobs.max(1)) {
        let children = batch
            .iter()
            .map(|t| {
                // CI's runs take a fixed random seed: the same code fuzzes the same inputs,
                // so CI fails on a change, never by chance on a known open finding.
                let seed = fresh.then_some(CI_SEED);
                start(t, runs, seconds, seed, &root, &corpus_root).map(|c| (t.name, c))
            })
            .collect::<Result<Vec<_>>>()?;
        for (name, (mut child, log, corpus)) in children {
            let status = child.wait()?;
            let mut stats = parse_stats(&std::fs::read_to_string(&log)?);
            stats.exit_ok = status.success();
            stats.corpus_files = std::fs::read_dir(&corpus).map_or(0, |d| d.count());
            if stats.exit_ok && stats.findings.is_empty() {
                // The table holds its figures; logs of failed runs stay for reading.
                let _ = std::fs::remove_file(&log);
            } else {
                eprintln!("fuzz {name}: exit {status}; log {}", log.display());
            }
            results.push((name, stats));
        }
    }
    print_table(runs, &results);
    let failed: Vec<&str> = results
        .iter()
        .filter(|(_, s)| !s.exit_ok || !s.findings.is_empty())
        .map(|(n, _)| *n)
        .collect();
    if !failed.is_empty() {
        for (name, s) in &results {
            for f in &s.findings {
                eprintln!("fuzz {name}: finding written to {f}");
            }
        }
        // Every target that did not pass was stopped by a signal, and none wrote an input.
        let only_interrupted = results
            .iter()
            .all(|(_, s)| s.findings.is_empty() && (s.exit_ok || s.interrupted));
        if only_interrupted {
            bail!(
                "fuzz interrupted: {} (no finding; logs in {})",
                failed.join(", "),
                root.join("logs").display()
            );
        }
        bail!(
            "fuzz targets failed: {} (logs in {})",
            failed.join(", "),
            root.join("logs").display()
        );
    }
    Ok(())
}

/// How to get the nightly features cargo-fuzz needs (`-Zsanitizer`, sanitizer coverage).
#[derive(Debug, Clone, Copy)]
enum Toolchain {
    /// rustup has a nightly toolchain.
    Nightly,
    /// Only stable: `RUSTC_BOOTSTRAP=1` unlocks the same flags on it (CI machines may have no
    /// nightly, and installing one is a download CI does not need).
    StableBootstrap,
}

impl Toolchain {
    fn detect() -> Self {
        let list = Command::new("rustup")
            .args(["toolchain", "list"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        if list.lines().any(|l| l.starts_with("nightly")) {
            Toolchain::Nightly
        } else {
            Toolchain::StableBootstrap
        }
    }

    /// `cargo fuzz` runs plain `cargo` from PATH (rustup's proxy), which obeys
    /// `RUSTUP_TOOLCHAIN`; `cargo xtask` itself may run under a toolchain-specific `CARGO`.
    fn apply(self, cmd: &mut Command) {
        match self {
            Toolchain::Nightly => {
                cmd.env("RUSTUP_TOOLCHAIN", "nightly");
            }
            Toolchain::StableBootstrap => {
                cmd.env("RUSTC_BOOTSTRAP", "1");
            }
        }
    }
}

fn install_cargo_fuzz() -> Result<PathBuf> {
    let bin = tools_bin().join("cargo-fuzz");
    let installed = Command::new(&bin)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    // `cargo-fuzz 0.13.2`
    if installed.is_some_and(|v| v.split_whitespace().nth(1) == Some(CARGO_FUZZ_VERSION)) {
        return Ok(bin);
    }
    sh::run(
        Command::new(cargo())
            .args(["install", "cargo-fuzz", "--locked", "--force", "--version"])
            .arg(CARGO_FUZZ_VERSION)
            .arg("--root")
            .arg(cache_dir().join("tools")),
    )?;
    Ok(bin)
}

fn fuzz_target_dir() -> PathBuf {
    cache_dir().join("fuzz-target")
}

/// All targets in one `cargo fuzz build`: they share every dependency's build. AddressSanitizer
/// (cargo-fuzz's default) is on: it is what makes `-malloc_limit_mb` work.
fn build(cargo_fuzz: &Path, toolchain: Toolchain) -> Result<()> {
    let mut cmd = Command::new(cargo_fuzz);
    cmd.current_dir(repo_root())
        .arg("build")
        .arg("--target-dir")
        .arg(fuzz_target_dir())
        // The main build's directory must not leak in through the environment.
        .env_remove("CARGO_TARGET_DIR");
    toolchain.apply(&mut cmd);
    let start = std::time::Instant::now();
    sh::run(&mut cmd)?;
    eprintln!(
        "fuzz: targets built in {:.0} s",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Starts one target's run; returns the child, its log and its corpus directory.
fn start(
    t: &Target,
    runs: u64,
    seconds: Option<u64>,
    seed: Option<u64>,
    root: &Path,
    corpus_root: &Path,
) -> Result<(std::process::Child, PathBuf, PathBuf)> {
    let bin = fuzz_target_dir()
        .join("x86_64-unknown-linux-gnu/release")
        .join(t.name);
    let corpus = corpus_root.join(t.name);
    let artifacts = root.join("artifacts").join(t.name);
    let logs = root.join("logs");
    for d in [&corpus, &artifacts, &logs] {
        std::fs::create_dir_all(d).with_context(|| format!("create {}", d.display()))?;
    }
    // Named by this process too: a second campaign on the same target must not overwrite the
    // first one's log, which the first reads its figures from when its run ends.
    let log = logs.join(format!("{}-{}.log", t.name, std::process::id()));
    let out = std::fs::File::create(&log)?;
    let mut cmd = Command::new(&bin);
    // First directory: the corpus libFuzzer grows; then the committed hand seeds (read only).
    cmd.arg(&corpus);
    let hand = repo_root().join("fuzz/seeds").join(t.name);
    if hand.is_dir() {
        cmd.arg(hand);
    }
    cmd.arg(format!("-runs={runs}"))
        .arg(format!("-max_len={}", t.max_len))
        .arg(format!("-rss_limit_mb={RSS_LIMIT_MB}"))
        .arg(format!("-malloc_limit_mb={MALLOC_LIMIT_MB}"))
        .arg(format!("-timeout={TIMEOUT_S}"))
        .arg("-print_final_stats=1")
        .args(seconds.map(|s| format!("-max_total_time={s}")))
        .args(seed.map(|s| format!("-seed={s}")))
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .env("ASAN_OPTIONS", asan_options())
        // The targets print nothing of their own; keep a failing input's panic message.
        .stdout(Stdio::from(out.try_clone()?))
        .stderr(Stdio::from(out));
    eprintln!("$ {} (log {})", sh::describe(&cmd), log.display());
    let child = cmd
        .spawn()
        .with_context(|| format!("start {} (was it built?)", bin.display()))?;
    Ok((child, log, corpus))
}

/// libFuzzer's `-seed` for `--fresh` (CI) runs.
const CI_SEED: u64 = 20_261_124;

/// Reads libFuzzer's `-print_final_stats` block and the paths of the inputs it wrote.
fn parse_stats(log: &str) -> Stats {
    let mut s = Stats::default();
    for line in log.lines() {
        let field = |name: &str| {
            line.strip_prefix(name)
                .and_then(|v| v.trim().parse::<u64>().ok())
        };
        if let Some(v) = field("stat::number_of_executed_units:") {
            s.executions = v;
        } else if let Some(v) = field("stat::average_exec_per_sec:") {
            s.exec_per_sec = v;
        } else if let Some(v) = field("stat::peak_rss_mb:") {
            s.peak_rss_mb = v;
        } else if line.contains("libFuzzer: run interrupted") {
            s.interrupted = true;
        } else if let Some(path) = line
            .split_once("Test unit written to ")
            .map(|(_, p)| p.trim().to_owned())
        {
            s.findings.push(path);
        }
    }
    s
}

fn print_table(runs: u64, results: &[(&str, Stats)]) {
    println!(
        "fuzz: -runs={runs}, -rss_limit_mb={RSS_LIMIT_MB}, -malloc_limit_mb={MALLOC_LIMIT_MB}, -timeout={TIMEOUT_S}, ASAN_OPTIONS={}",
        asan_options()
    );
    println!(
        "{:<16} {:>12} {:>8} {:>8} {:>13} {:>8} {:>7}",
        "target", "executions", "exec/s", "crashes", "peak RSS MB", "corpus", "max_len"
    );
    for (name, s) in results {
        let max_len = TARGETS
            .iter()
            .find(|t| t.name == *name)
            .map_or(0, |t| t.max_len);
        // A non-zero exit without an input written (a crash in libFuzzer itself, a kill by
        // the OOM killer) still counts as one; an interrupt does not.
        let unexplained = !s.exit_ok && !s.interrupted;
        let crashes = s.findings.len().max(usize::from(unexplained));
        println!(
            "{:<16} {:>12} {:>8} {:>8} {:>13} {:>8} {:>7}{}",
            name,
            s.executions,
            s.exec_per_sec,
            crashes,
            s.peak_rss_mb,
            s.corpus_files,
            max_len,
            if s.interrupted { "  interrupted" } else { "" }
        );
    }
}

/// The sanitizer options of every target run: the user's own `ASAN_OPTIONS`, then the
/// quarantine cap (later options win).
fn asan_options() -> String {
    let quarantine = format!("quarantine_size_mb={QUARANTINE_MB}");
    match std::env::var("ASAN_OPTIONS") {
        Ok(own) if !own.is_empty() => format!("{own}:{quarantine}"),
        _ => quarantine,
    }
}

#[cfg(test)]
mod tests {
    use super::parse_stats;

    #[test]
    fn final_stats_findings_and_interrupts_are_read_from_the_log() {
        let log = "INFO: Seed: 1\n\
            ==12== libFuzzer: run interrupted; exiting\n\
            stat::number_of_executed_units: 889061\n\
            stat::average_exec_per_sec:     836\n\
            stat::peak_rss_mb:              1026\n";
        let s = parse_stats(log);
        assert_eq!(
            (s.executions, s.exec_per_sec, s.peak_rss_mb),
            (889_061, 836, 1026)
        );
        assert!(s.interrupted);
        assert!(s.findings.is_empty());

        let crash = "==13== ERROR: libFuzzer: deadly signal\n\
            artifact_prefix='/a/'; Test unit written to /a/crash-0123\n";
        let s = parse_stats(crash);
        assert!(!s.interrupted);
        assert_eq!(s.findings, vec!["/a/crash-0123".to_owned()]);
    }
}
