//! The CPU backend against llama.cpp's CPU backend, in one run, on the same GGUF and the
//! same threads: prefill of 64 and 512 tokens and decode of 64 tokens from an empty cache
//! (llama-bench's `pp64`, `pp512` and `tg64`), N runs each with median and spread, the
//! resident size after load against the file's, then `llama-bench` (`TPSMETER_LLAMA_BIN`)
//! with the same tests and threads, and our figures as ratios to its.
//!
//! `cargo bench -p tpsmeter-gpu --bench cpu`, with `TPSMETER_MODEL` (default the SmolLM2 file
//! in the set-up cache), `TPSMETER_BENCH_THREADS` (default 2), `TPSMETER_BENCH_RUNS`
//! (default 5), `TPSMETER_BENCH_PORTABLE=1` for the portable kernels instead of AVX2.
#![allow(clippy::unwrap_used)]

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    native::main();
}

#[cfg(not(target_arch = "wasm32"))]
mod common;

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use super::common::{env_usize, prompt, stats};
    use std::time::Instant;

    use tpsmeter_gpu::cpu::{CpuModel, CpuOptions};
    use tpsmeter_model::generate::TokenStep;
    use tpsmeter_model::gguf::GgufFile;
    use tpsmeter_model::options::ModelOptions;

    /// Resident set size of this process, from /proc (Linux), in bytes.
    fn rss() -> Option<u64> {
        let s = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    }

    /// GB/s of `threads` threads summing a 256 MiB buffer (each its own part), median of
    /// `runs`: the bound on a decode step, which reads every weight once.
    fn read_bandwidth(threads: usize, runs: usize) -> f64 {
        use rayon::prelude::*;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let buf: Vec<u64> = (0..(256usize << 20) / 8).map(|i| i as u64).collect();
        let mut v = Vec::new();
        for _ in 0..=runs {
            let t = Instant::now();
            let sum: u64 = pool.install(|| {
                buf.par_chunks(buf.len() / threads)
                    .map(|c| c.iter().fold(0u64, |a, &x| a.wrapping_add(x)))
                    .reduce(|| 0, u64::wrapping_add)
            });
            std::hint::black_box(sum);
            v.push((buf.len() * 8) as f64 / t.elapsed().as_secs_f64() / 1e9);
        }
        stats(&v[1..]).0
    }

    pub fn main() {
        let path = std::env::var("TPSMETER_MODEL").unwrap_or_else(|_| {
            let home = std::env::var("HOME").unwrap_or_default();
            format!("{home}/.cache/tpsmeter/models/SmolLM2-135M-Instruct.Q4_1.gguf")
        });
        let threads = env_usize("TPSMETER_BENCH_THREADS", 2);
        let runs = env_usize("TPSMETER_BENCH_RUNS", 5);
        let portable = std::env::var("TPSMETER_BENCH_PORTABLE").as_deref() == Ok("1");
        let before = rss().unwrap_or(0);
        let bytes = std::fs::read(&path).unwrap();
        let file_len = bytes.len() as u64;
        let t0 = Instant::now();
        let mut m = {
            let file = GgufFile::parse(&bytes).unwrap();
            let opts = ModelOptions {
                max_context: 1024,
                ..Default::default()
            };
            CpuModel::load(
                &file,
                &opts,
                CpuOptions {
                    threads: Some(threads),
                    portable,
                    ..Default::default()
                },
            )
            .unwrap()
        };
        drop(bytes);
        let load_s = t0.elapsed().as_secs_f64();
        println!("model: {path}");
        println!(
            "ours: {} threads, {} kernels, load {:.0} ms",
            m.threads(),
            m.simd().name(),
            load_s * 1e3
        );
        let gbps = read_bandwidth(threads, runs);
        let weights = m.resident_bytes() as f64;
        println!(
            "streaming read, {threads} threads: {gbps:.1} GB/s: a decode step reads every weight \
             once ({:.1} MB), so at most {:.0} tok/s",
            weights / 1e6,
            gbps * 1e9 / weights
        );
        let vocab = m.config().vocab_size;
        let mut rows = Vec::new();
        for n in [64, 512] {
            let ids = prompt(n, vocab);
            let mut v = Vec::new();
            for _ in 0..=runs {
                m.forget();
                let t = Instant::now();
                m.logits(&ids, 0).unwrap();
                v.push(n as f64 / t.elapsed().as_secs_f64());
            }
            // The first run pays for page faults in fresh buffers: left out.
            rows.push((format!("pp{n}"), stats(&v[1..])));
        }
        let mut v = Vec::new();
        for _ in 0..=runs {
            m.forget();
            let mut tok = pollster::block_on(m.step(&[1000], 0)).unwrap();
            let t = Instant::now();
            for pos in 1..64 {
                tok = pollster::block_on(m.step(&[tok], pos)).unwrap();
            }
            v.push(63.0 / t.elapsed().as_secs_f64());
        }
        rows.push(("tg64".into(), stats(&v[1..])));
        let resident = rss().unwrap_or(0).saturating_sub(before);
        println!(
            "resident after the runs: {:.1} MB ({:.2}x the {:.1} MB file; model's own count {:.1} MB)",
            resident as f64 / 1e6,
            resident as f64 / file_len as f64,
            file_len as f64 / 1e6,
            m.resident_bytes() as f64 / 1e6
        );
        for (name, (med, lo, hi)) in &rows {
            println!(
                "ours {name:<6} median {med:>8.1} tok/s  (min {lo:.1}, max {hi:.1}, {runs} runs)"
            );
        }
        let Some(dir) = std::env::var_os("TPSMETER_LLAMA_BIN") else {
            println!("-- llama.cpp: TPSMETER_LLAMA_BIN is not set, skipped");
            return;
        };
        let bench = std::path::Path::new(&dir).join("llama-bench");
        let out = std::process::Command::new(&bench)
            .args([
                "-m",
                &path,
                "-t",
                &threads.to_string(),
                "-p",
                "64,512",
                "-n",
                "64",
            ])
            .args(["-r", &runs.to_string(), "-o", "json"])
            .output();
        // The set-up builds llama.cpp's test binaries only: say what is missing, keep ours.
        let out = match out {
            Ok(out) => out,
            Err(e) => {
                println!(
                    "-- llama.cpp: {} could not run ({e}); build llama.cpp's `llama-bench` there for the comparison",
                    bench.display()
                );
                return;
            }
        };
        if !out.status.success() {
            println!(
                "llama-bench failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            return;
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        println!("-- llama.cpp CPU ({threads} threads, same GGUF)");
        for r in v.as_array().into_iter().flatten() {
            let (np, ng) = (
                r["n_prompt"].as_u64().unwrap_or(0),
                r["n_gen"].as_u64().unwrap_or(0),
            );
            let name = if ng > 0 {
                format!("tg{ng}")
            } else {
                format!("pp{np}")
            };
            let ts = r["avg_ts"].as_f64().unwrap_or(0.0);
            let sd = r["stddev_ts"].as_f64().unwrap_or(0.0);
            let ours = rows.iter().find(|(n, _)| *n == name).map(|(_, s)| s.0);
            println!(
                "llama.cpp {name:<6} mean {ts:>8.1} tok/s  (sd {sd:.1}){}",
                ours.map_or(String::new(), |o| format!(
                    "   ours / llama.cpp: {:.2}x",
                    o / ts
                ))
            );
        }
    }
}
