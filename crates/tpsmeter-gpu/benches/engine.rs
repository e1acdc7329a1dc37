//! Whole-engine benchmark on the model at `TPSMETER_MODEL`: prefill tok/s at 64 and 512
//! prompt tokens, decode tok/s at context 64, 512 and 2048, TTFT, cold (load and pipeline
//! compilation included) and warm, N runs with median and spread; dispatches and submits per
//! decoded token, bytes read back per token, weight bytes read per token and the GB/s that
//! implies; beside each decode and prefill rate, the host's cost per decoded token or prompt
//! chunk (dispatches, passes, submits, pipeline and bind-group changes, bytes written and
//! read, median CPU time from the step's start until its submit returned); where a token's time goes, per kernel. Then, on the same GGUF, llama.cpp on the
//! CPU with 2 threads (`llama-bench` from `TPSMETER_LLAMA_BIN`) and, where it was built
//! (`cargo xtask llama-vulkan`), llama.cpp's Vulkan backend on the same adapter
//! (`TPSMETER_LLAMA_VULKAN_BIN`), with our decode speed as a ratio to each.
//!
//! `cargo bench -p tpsmeter-gpu --bench engine` (`-- profile`, `-- prefill` or `-- decode`
//! for just the per-kernel profile, the first and warm 64-token prefills, or decode and its per-kernel
//! profile at each context); `TPSMETER_BENCH_RUNS` (default 5) sets N,
//! `TPSMETER_BENCH_DECODE` (default 32) the tokens timed per decode run, and
//! `TPSMETER_BENCH_PROFILE=gpu` forces the Gpu profile's kernels on any adapter, and
//! `TPSMETER_BENCH_KV_F32=1` loads the model with the exact f32 KV cache instead of the
//! f16 one (CPU-type adapters), for an A/B of the two. `TPSMETER_SYNTHETIC=NAME[:QUANT]`
//! benchmarks a synthetic model instead of a file (`tpsmeter_gpu::synthetic`).
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
    use std::sync::Arc;
    use std::time::Instant;

    use tpsmeter_gpu::gpu::{AdapterProfile, ContextOptions, GpuContext};
    use tpsmeter_gpu::runtime::GpuModel;
    use tpsmeter_model::gguf::GgufFile;
    use tpsmeter_model::options::ModelOptions;
    use tpsmeter_model::sample::SamplerConfig;

    fn show(label: &str, v: &[f64], unit: &str) -> f64 {
        let (m, lo, hi) = stats(v);
        println!(
            "{label:<34} median {m:>9.2} {unit}  (min {lo:.2}, max {hi:.2}, n={})",
            v.len()
        );
        m
    }

    /// Seconds for one prefill of `ids` from position 0 (the step also samples, so this is
    /// the time to the first token).
    fn prefill(m: &mut GpuModel, ids: &[u32]) -> f64 {
        let t = Instant::now();
        m.step_blocking(ids, 0).unwrap();
        t.elapsed().as_secs_f64()
    }

    /// Fills the cache with `ctx - 1` prompt tokens; returns the prompt length and the
    /// token sampled after it.
    fn fill(m: &mut GpuModel, ctx: usize) -> (usize, u32) {
        let ids = prompt(ctx.saturating_sub(1).max(1), m.config().vocab_size);
        (ids.len(), m.step_blocking(&ids, 0).unwrap())
    }

    /// Decode tok/s for `n` tokens from position `at` (the cache below it filled): each run
    /// overwrites the same positions, so every run decodes at the same context.
    fn decode(m: &mut GpuModel, at: usize, first: u32, n: usize) -> f64 {
        let mut next = first;
        let t = Instant::now();
        for pos in at..at + n {
            next = m.step_blocking(&[next], pos).unwrap();
        }
        n as f64 / t.elapsed().as_secs_f64()
    }

    pub fn main() {
        // TPSMETER_SYNTHETIC=NAME[:QUANT] measures a synthetic model (a real model's shapes
        // and tensor types, random weights) instead of a file: written to a temporary file
        // so that llama.cpp runs the same bytes.
        let (path, bytes) = if let Ok(spec) = std::env::var("TPSMETER_SYNTHETIC") {
            let spec = tpsmeter_gpu::synthetic::SyntheticSpec::parse(&spec).unwrap();
            let bytes = spec.build(1).unwrap();
            let path = std::env::temp_dir().join(format!(
                "tpsmeter-bench-{}.synthetic.gguf",
                spec.label().replace(':', ".")
            ));
            std::fs::write(&path, &bytes).unwrap();
            (path.into_os_string(), bytes)
        } else {
            let Some(path) = std::env::var_os("TPSMETER_MODEL") else {
                eprintln!(
                    "TPSMETER_MODEL (or TPSMETER_SYNTHETIC) is not set: nothing to benchmark"
                );
                return;
            };
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        };
        let runs = env_usize("TPSMETER_BENCH_RUNS", 5).max(1);
        let n_decode = env_usize("TPSMETER_BENCH_DECODE", 32).max(2);
        let file = GgufFile::parse(&bytes).unwrap();
        let quantized: u64 = file.header.tensors.iter().map(|t| t.n_bytes).sum();

        // Cold: device, upload, decode pipelines, then the first prefill (its pipelines
        // compile now) and the first decoded tokens.
        let t_cold = Instant::now();
        // TPSMETER_BENCH_PROFILE=gpu forces the kernels of real GPUs on any adapter (how the
        // Gpu profile's prefill is measured on lavapipe).
        let forced = std::env::var("TPSMETER_BENCH_PROFILE")
            .is_ok_and(|p| p == "gpu")
            .then_some(AdapterProfile::Gpu);
        let ctx_opts = ContextOptions {
            profile: forced,
            ..ContextOptions::default()
        };
        let ctx = Arc::new(GpuContext::new_blocking(&ctx_opts).unwrap());
        // Decode "at context c" runs positions c - 1 .. c - 1 + n_decode: room for the last.
        let opts = ModelOptions {
            max_context: 2048 + n_decode,
            kv_f16: std::env::var("TPSMETER_BENCH_KV_F32").is_err(),
            ..Default::default()
        };
        let mut m = GpuModel::load(ctx.clone(), &file, &opts).unwrap();
        let load_s = t_cold.elapsed().as_secs_f64();
        if std::env::args().any(|a| a == "profile") {
            profile(&mut m, runs);
            return;
        }
        if std::env::args().any(|a| a == "batch") {
            batch(&ctx, &file, runs, n_decode);
            return;
        }
        if std::env::args().any(|a| a == "prefill") {
            // The first 64-token prefill (its pipelines compile now), then warm ones only,
            // for quick comparisons of the matmul kernels.
            let ids = prompt(64, m.config().vocab_size);
            let cold = prefill(&mut m, &ids);
            println!(
                "{:<34} {:>9.2} ms",
                "TTFT, first 64-token prompt",
                cold * 1e3
            );
            m.compile_blocking(None).unwrap();
            let v: Vec<f64> = (0..runs).map(|_| 64.0 / prefill(&mut m, &ids)).collect();
            show("prefill, 64 tokens", &v, "tok/s");
            return;
        }
        // Decode at each context only, for quick comparisons of the attention kernels.
        let decode_only = std::env::args().any(|a| a == "decode");
        println!(
            "adapter: {} ({:?}, {:?})",
            ctx.info.name, ctx.info.backend, ctx.info.device_type
        );
        println!(
            "model: {} ({} MiB of tensors)",
            path.to_string_lossy(),
            quantized >> 20
        );
        println!("runs: {runs}, decoded tokens per decode run: {n_decode}");
        println!("KV cache: {:?}", m.kv_store());
        if !decode_only {
            cold_and_prefill(&mut m, load_s, runs, n_decode);
        }
        let mut decode_64 = 0.0;
        for c in [64, 512, 2048] {
            let (at, first) = fill(&mut m, c);
            let before = m.stats();
            let mark = m.cost_mark();
            let v: Vec<f64> = (0..runs)
                .map(|_| decode(&mut m, at, first, n_decode))
                .collect();
            let med = show(&format!("decode at context {c}"), &v, "tok/s");
            if let Some(cost) = m.cost_since(&mark).decode {
                println!("{:<34} {cost}", "  per decoded token");
            }
            if c != 64 {
                println!(
                    "{:<34} {:>9.2} x",
                    "  / decode at context 64",
                    med / decode_64
                );
            }
            if c == 64 {
                decode_64 = med;
            }
            if decode_only {
                // Where a token's time goes at this context (kernels only: the whole-step
                // rows would restart the sequence at position 0).
                println!("-- decode time per token by kernel at context {c}");
                let all: Vec<_> = (0..runs)
                    .map(|_| m.profile_decode_kernels(10).unwrap())
                    .collect();
                profile_table(&all, m.dispatches_per_token());
            }
            if c == 64 && !decode_only {
                // Work per decoded token, from the counters of these runs (decode steps only).
                let after = m.stats();
                let steps = (runs * n_decode) as u64;
                let submits = after.submits - before.submits;
                let readback = after.readback_bytes - before.readback_bytes;
                println!(
                    "{:<34} {:>9.2}",
                    "submits per decoded token",
                    submits as f64 / steps as f64
                );
                println!(
                    "{:<34} {:>9}",
                    "dispatches per decoded token",
                    m.dispatches_per_token()
                );
                println!(
                    "{:<34} {:>9.2}",
                    "bytes read back per token",
                    readback as f64 / steps as f64
                );
            }
        }
        if decode_only {
            return;
        }
        let wbytes = m.weight_bytes_per_token();
        println!(
            "{:<34} {:>9.2} MB ({:.3} x the file's {:.2} MB of tensors)",
            "weight bytes read per token",
            wbytes as f64 / 1e6,
            wbytes as f64 / quantized as f64,
            quantized as f64 / 1e6
        );
        println!(
            "{:<34} {:>9.2} GB/s (at the context-64 decode median)",
            "implied weight bandwidth",
            wbytes as f64 * decode_64 / 1e9
        );
        profile(&mut m, runs);
        drop(m);
        batch(&ctx, &file, runs, n_decode);
        llama_cpp(&path.to_string_lossy(), decode_64);
    }

    /// The cold figures (first prompt, first tokens), then warm TTFT and prefill.
    fn cold_and_prefill(m: &mut GpuModel, load_s: f64, runs: usize, n_decode: usize) {
        let vocab = m.config().vocab_size;
        let p64 = prompt(64, vocab);
        let cold_ttft = prefill(m, &p64);
        let (at, first) = fill(m, 64);
        let cold_decode = decode(m, at, first, n_decode);
        println!("-- cold (first use; pipeline compilation included)");
        println!(
            "{:<34} {:>9.2} s",
            "load (upload + decode pipelines)", load_s
        );
        println!(
            "{:<34} {:>9.2} ms",
            "TTFT, 64-token prompt",
            cold_ttft * 1e3
        );
        println!("{:<34} {:>9.2} tok/s", "decode at context 64", cold_decode);

        println!("-- warm");
        m.compile_blocking(None).unwrap();
        let ttft: Vec<f64> = (0..runs).map(|_| prefill(m, &p64) * 1e3).collect();
        show("TTFT, 64-token prompt", &ttft, "ms");
        for n in [64, 512] {
            let ids = prompt(n, vocab);
            let mark = m.cost_mark();
            let v: Vec<f64> = (0..runs).map(|_| n as f64 / prefill(m, &ids)).collect();
            show(&format!("prefill, {n} tokens"), &v, "tok/s");
            if let Some(cost) = m.cost_since(&mark).prefill {
                println!("{:<34} {cost}", "  per 64-token chunk");
            }
        }
    }

    /// Batched decode (what `tpsmeter serve` runs under concurrency): B sequences, each after
    /// its own 64-token prompt in its own slot, decoded together; aggregate tok/s (B tokens per
    /// step) and the step time, for B = 1, 2, 4, 8.
    fn batch(ctx: &Arc<GpuContext>, file: &GgufFile<'_>, runs: usize, n_decode: usize) {
        let opts = ModelOptions {
            max_context: 64 + n_decode + 1,
            slots: 8,
            ..Default::default()
        };
        let mut m = GpuModel::load(ctx.clone(), file, &opts).unwrap();
        m.compile_blocking(None).unwrap();
        let vocab = m.config().vocab_size;
        let greedy = SamplerConfig::default();
        println!("-- batched decode (slots of one cache, one step for all; context 64)");
        for b in [1usize, 2, 4, 8] {
            let mut v = Vec::new();
            let mut step_ms = Vec::new();
            for _ in 0..runs {
                let mut next = Vec::new();
                for slot in 0..b {
                    let ids: Vec<u32> = prompt(64 + slot, vocab)[slot..].to_vec();
                    m.submit_slot_prompt(slot, &ids, 0, &greedy, true).unwrap();
                    next.push(m.read_slots_blocking().unwrap()[0]);
                }
                let t = Instant::now();
                for _ in 0..n_decode {
                    let steps: Vec<(usize, u32)> = next.iter().copied().enumerate().collect();
                    m.submit_slots(&steps).unwrap();
                    next = m.read_slots_blocking().unwrap();
                }
                let s = t.elapsed().as_secs_f64();
                v.push((b * n_decode) as f64 / s);
                step_ms.push(s * 1e3 / n_decode as f64);
            }
            show(&format!("batch {b}: aggregate decode"), &v, "tok/s");
            show(&format!("batch {b}: step"), &step_ms, "ms");
        }
    }

    /// Where a decoded token's and a 64-token prefill's time goes, per kind of kernel.
    fn profile(m: &mut GpuModel, runs: usize) {
        println!("-- decode time per token by kernel (each kind alone, 10 tokens per submit)");
        let all: Vec<_> = (0..runs).map(|_| m.profile_decode(10).unwrap()).collect();
        profile_table(&all, m.dispatches_per_token());
        println!("-- prefill time per 64-token chunk by kernel (each kind alone)");
        let all: Vec<_> = (0..runs)
            .map(|_| m.profile_prefill(64, 1).unwrap())
            .collect();
        let n: usize = all[0].iter().map(|r| r.1).sum();
        profile_table(&all, n);
    }

    /// Medians over runs of per-kernel rows, and their sum.
    fn profile_table(all: &[Vec<(String, usize, f64)>], dispatches: usize) {
        let mut total = 0.0;
        for (key, n, _) in &all[0] {
            let v: Vec<f64> = all
                .iter()
                .filter_map(|r| r.iter().find(|(k, _, _)| k == key).map(|x| x.2))
                .collect();
            let (med, lo, hi) = stats(&v);
            if !key.starts_with("step/") {
                total += med;
            }
            println!("{key:<24} {n:>4} dispatches  {med:>8.2} ms  (min {lo:.2}, max {hi:.2})");
        }
        println!(
            "{:<24} {:>4} dispatches  {total:>8.2} ms",
            "sum of kernels", dispatches
        );
    }

    /// Runs llama-bench on the CPU (2 threads) and prints our decode speed as a ratio.
    fn llama_cpp(model: &str, ours: f64) {
        match std::env::var_os("TPSMETER_LLAMA_BIN") {
            Some(dir) => llama_bench(
                "llama.cpp, CPU, 2 threads, same GGUF",
                std::process::Command::new(std::path::Path::new(&dir).join("llama-bench"))
                    .args(["-t", "2", "-p", "64,512", "-n", "64"]),
                model,
                ours,
            ),
            None => println!("-- llama.cpp CPU: TPSMETER_LLAMA_BIN is not set, skipped"),
        }
        // llama.cpp's Vulkan backend on the same adapter (`cargo xtask llama-vulkan` builds it;
        // lavapipe is a CPU-type Vulkan device, which ggml only uses when asked by index:
        // GGML_VK_VISIBLE_DEVICES, default 0 here). It runs ~1 tok/s there, so fewer tokens
        // and 2 repetitions keep this under a few minutes.
        match std::env::var_os("TPSMETER_LLAMA_VULKAN_BIN") {
            Some(dir) => {
                let device = std::env::var("GGML_VK_VISIBLE_DEVICES").unwrap_or("0".into());
                llama_bench(
                    "llama.cpp, Vulkan backend, all layers offloaded, same GGUF",
                    std::process::Command::new(std::path::Path::new(&dir).join("llama-bench"))
                        .env("GGML_VK_VISIBLE_DEVICES", device)
                        .args(["-ngl", "99", "-t", "2", "-p", "64", "-n", "32", "-r", "2"]),
                    model,
                    ours,
                )
            }
            None => println!(
                "-- llama.cpp Vulkan: TPSMETER_LLAMA_VULKAN_BIN is not set (cargo xtask \
                 llama-vulkan), skipped"
            ),
        }
    }

    /// Runs a `llama-bench` command (threads, tests, device already set) on `model` and
    /// prints our decode speed as a ratio to its decode.
    fn llama_bench(label: &str, cmd: &mut std::process::Command, model: &str, ours: f64) {
        println!("-- {label}");
        let bin = std::path::PathBuf::from(cmd.get_program());
        let out = cmd.args(["-m", model, "-o", "json"]).output();
        let out = match out {
            Ok(o) if o.status.success() => o,
            Ok(o) => {
                println!(
                    "{} failed: {}",
                    bin.display(),
                    String::from_utf8_lossy(&o.stderr)
                );
                return;
            }
            Err(e) => {
                println!("cannot run {}: {e}", bin.display());
                return;
            }
        };
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&out.stdout) else {
            println!("unreadable llama-bench output");
            return;
        };
        let mut decode = None;
        for r in v.as_array().into_iter().flatten() {
            let np = r["n_prompt"].as_u64().unwrap_or(0);
            let ng = r["n_gen"].as_u64().unwrap_or(0);
            let ts = r["avg_ts"].as_f64().unwrap_or(0.0);
            let sd = r["stddev_ts"].as_f64().unwrap_or(0.0);
            let label = if ng > 0 {
                decode = Some(ts);
                format!("llama.cpp decode, {ng} tokens")
            } else {
                format!("llama.cpp prefill, {np} tokens")
            };
            println!("{label:<34} mean {ts:>9.2} tok/s  (sd {sd:.2})");
        }
        if let Some(backends) = v
            .as_array()
            .and_then(|a| a.first())
            .map(|r| format!("{} {}", r["backends"], r["gpu_info"]))
        {
            println!("{:<34} {backends}", "llama.cpp backend, device");
        }
        if let Some(d) = decode.filter(|d| *d > 0.0) {
            println!(
                "{:<34} {:>9.2} x",
                "our decode (ctx 64) / llama.cpp",
                ours / d
            );
        }
    }
}
