//! `cargo xtask gpu-report`: one command for a machine with a GPU. Sets up what it can, then
//! measures, on every GGUF in the model cache (SmolLM2-135M first):
//!
//! 1. our engine natively (`tpsmeter run --json`, wgpu's high-performance adapter: the
//!    discrete GPU where there is one), prefill and decode, with its per-token cost counters
//!    where the CLI reports them;
//! 2. llama.cpp from the same sdist: `llama-bench` of the CPU build, of the Vulkan build
//!    (`cargo xtask llama-vulkan`) and, where `nvcc` exists, of a CUDA build, with the same
//!    prompt and generation lengths;
//! 3. headless Chromium with the flags that give WebGPU the real GPU: our engine's browser
//!    bench and wllama (llama.cpp in wasm, its WebGPU backend), with the adapter Chromium got
//!    (`tests/browser/bench/gpu-report.mjs`).
//!
//! and prints one table: runtime, backend, adapter, model, prefill and decode tok/s (medians of
//! N runs), dispatches and encode ms per token. Rows taken on a software adapter (lavapipe,
//! llvmpipe, SwiftShader) are marked as such. The table is also written as JSON and Markdown
//! under `$TPSMETER_CACHE/gpu-report/`. A step that cannot run (no network for a build, no
//! Chromium) becomes a row that says why; it never hides the rest.
//!
//! Flags: `--quick` (short runs, for testing the command), `--skip-llama`, `--skip-browser`,
//! `--models DIR` (every `*.gguf` there instead of the cache's), `--runs N`, `--adapter NAME`
//! (our engine's adapter by name, as `tpsmeter run --adapter`), `--offline` (installs and
//! builds nothing: a missing build becomes a row that says so).
//!
//! Offline (a lent GPU machine without network): everything comes from the cache. Run
//! `cargo xtask setup` and `cargo xtask pkg` on a networked machine, then make
//! `TPSMETER_CACHE` point at a copy of that cache; `TPSMETER_CLI_RELEASE` may name a
//! prebuilt `tpsmeter` binary and `TPSMETER_PKG_TARBALL` a packed npm package (no cargo
//! build of either then). Pass `--offline` there: `apt-get update` without a network can
//! wait on timeouts for minutes, and a CUDA build of llama.cpp takes minutes of a lent GPU.

use crate::assets::{self, cache_dir};
use crate::sh::{self, repo_root};
use crate::tools::{self, CHROMIUM};
use crate::{llama_cuda, llama_vulkan, pkg};
use anyhow::{Context, Result, bail};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Chromium's flags for WebGPU on the real GPU, headless, on Linux (NVIDIA and Mesa): Vulkan
/// for WebGPU and for ANGLE, no Vulkan surface (headless has no window to present to, and the
/// swap chain path fails there), the GPU blocklist ignored (it lists many Linux drivers).
/// From Chrome's "Supercharge Web AI model testing" guide (developer.chrome.com, headless
/// WebGPU on an NVIDIA T4) and gpuweb/gpuweb#5022 (`VulkanFromANGLE`, `DefaultANGLEVulkan`).
/// Without a GPU Chromium still falls back to SwiftShader with these: the adapter row says so.
pub const GPU_CHROMIUM_ARGS: &[&str] = &[
    "--headless=new",
    "--no-sandbox",
    "--no-first-run",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--enable-unsafe-webgpu",
    "--ignore-gpu-blocklist",
    "--enable-gpu",
    "--use-angle=vulkan",
    "--enable-features=Vulkan,VulkanFromANGLE,DefaultANGLEVulkan",
    "--disable-vulkan-surface",
];

/// Prompt and generation lengths and runs per figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lengths {
    pub prompt: usize,
    pub generated: usize,
    pub runs: usize,
}

impl Lengths {
    /// llama-bench's own defaults (pp512, tg128) with 5 repetitions; `--quick`: a check
    /// that every path runs, in minutes on a CPU rasteriser.
    pub fn new(quick: bool) -> Self {
        if quick {
            Lengths {
                prompt: 32,
                generated: 8,
                runs: 2,
            }
        } else {
            Lengths {
                prompt: 512,
                generated: 128,
                runs: 5,
            }
        }
    }
}

#[derive(Debug, Default)]
struct Opts {
    quick: bool,
    skip_llama: bool,
    skip_browser: bool,
    models: Option<PathBuf>,
    runs: Option<usize>,
    adapter: Option<String>,
    offline: bool,
}

fn parse_args(args: &[String]) -> Result<Opts> {
    let mut o = Opts::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => o.quick = true,
            "--skip-llama" => o.skip_llama = true,
            "--skip-browser" => o.skip_browser = true,
            "--offline" => o.offline = true,
            "--models" => o.models = Some(it.next().context("--models needs a directory")?.into()),
            "--runs" => {
                let n: usize = it
                    .next()
                    .context("--runs needs a number")?
                    .parse()
                    .context("--runs needs a number")?;
                o.runs = Some(n.max(1));
            }
            "--adapter" => o.adapter = Some(it.next().context("--adapter needs a name")?.clone()),
            other => bail!(
                "unknown gpu-report flag {other:?} (--quick, --skip-llama, --skip-browser, \
                 --models DIR, --runs N, --adapter NAME, --offline)"
            ),
        }
    }
    Ok(o)
}

mod table;

pub use table::*;

pub fn run(args: &[String]) -> Result<()> {
    let opts = parse_args(args)?;
    let mut len = Lengths::new(opts.quick);
    if let Some(n) = opts.runs {
        len.runs = n;
    }
    let out_dir = cache_dir().join("gpu-report");
    std::fs::create_dir_all(&out_dir).with_context(|| format!("create {}", out_dir.display()))?;
    let load_start = load_average();
    eprintln!("gpu-report: load average at start {load_start}");

    // Set-up: each part that fails becomes a row that says so, never the end of the report.
    let mut rows = Vec::new();
    if opts.offline {
        eprintln!("gpu-report: --offline: nothing is installed or built");
    } else if let Err(e) = assets::apt_install(&["mesa-vulkan-drivers", "libvulkan1"]) {
        eprintln!("gpu-report: system packages: {e:#} (going on with what is installed)");
    }
    let models = find_models(opts.models.as_deref())?;
    if models.is_empty() {
        bail!(
            "no *.gguf in {}: run `cargo xtask setup` (or pass --models DIR)",
            opts.models
                .clone()
                .unwrap_or_else(|| cache_dir().join("models"))
                .display()
        );
    }
    let names: Vec<String> = models.iter().map(|m| file_name(m)).collect();
    eprintln!("gpu-report: models {names:?}; {len:?}");

    // 1. Our engine, natively.
    let native_real = match cli_binary() {
        Ok(cli) => {
            let mut real = false;
            for (m, name) in models.iter().zip(&names) {
                let row = native(&cli, m, name, len, opts.adapter.as_deref());
                real |= !row.software && row.decode.is_some();
                rows.push(row);
            }
            real
        }
        Err(e) => {
            for name in &names {
                rows.push(Row::failed(
                    "tpsmeter (native)",
                    "wgpu",
                    name,
                    format!("{e:#}"),
                ));
            }
            false
        }
    };

    // 2. llama.cpp.
    if !opts.skip_llama {
        rows.extend(llama_rows(&models, &names, len, native_real, opts.offline));
    }

    // 3. Chromium.
    if !opts.skip_browser {
        rows.extend(browser_rows(&models, &names, len, &out_dir));
    }

    let load_end = load_average();
    let table = plain(&rows);
    let md = format!(
        "{}\nLoad average {load_start} at start, {load_end} at end; {} cores; prompt {} and {} generated tokens, medians of {} runs.\n",
        markdown(&rows),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        len.prompt,
        len.generated,
        len.runs,
    );
    let doc = json!({
        "lengths": {"prompt": len.prompt, "gen": len.generated, "runs": len.runs},
        "load_average_start": load_start,
        "load_average_end": load_end,
        "gpus": nvidia_gpus(),
        "rows": rows.iter().map(Row::to_json).collect::<Vec<_>>(),
    });
    let json_path = out_dir.join("report.json");
    let md_path = out_dir.join("report.md");
    std::fs::write(&json_path, serde_json::to_string_pretty(&doc)?)?;
    std::fs::write(&md_path, &md)?;
    println!(
        "\n== gpu-report: prompt {} tokens, {} generated, medians of {} runs; load average {load_start} → {load_end}",
        len.prompt, len.generated, len.runs
    );
    if let Some(g) = nvidia_gpus() {
        println!("nvidia-smi: {g}");
    }
    print!("{table}");
    println!(
        "\nwritten: {}\n         {}",
        json_path.display(),
        md_path.display()
    );
    Ok(())
}

/// Every `*.gguf` in `dir` (default: the cache's models), SmolLM2 first, then by name.
fn find_models(dir: Option<&Path>) -> Result<Vec<PathBuf>> {
    let dir = dir.map_or_else(|| cache_dir().join("models"), Path::to_path_buf);
    let mut models: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "gguf"))
            .collect(),
        Err(_) => Vec::new(),
    };
    models.sort_by_key(|p| (!file_name(p).starts_with("SmolLM2"), file_name(p)));
    Ok(models)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// The release CLI: `TPSMETER_CLI_RELEASE` (prebuilt, for a machine without a registry),
/// else built now.
fn cli_binary() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("TPSMETER_CLI_RELEASE") {
        let p = PathBuf::from(p);
        anyhow::ensure!(
            p.exists(),
            "TPSMETER_CLI_RELEASE={} does not exist",
            p.display()
        );
        return Ok(p);
    }
    crate::demo::release_cli()
}

/// `len.runs` processes of `tpsmeter run --json`, each with one warm-up generation first, so
/// the figures are warm (pipelines compiled) and each run is independent.
fn native(cli: &Path, model: &Path, name: &str, len: Lengths, adapter: Option<&str>) -> Row {
    let mut runs = Vec::new();
    for salt in 0..len.runs {
        let mut cmd = Command::new(cli);
        // Our GPU engine, whatever the adapter (`auto` would take the CPU backend on a
        // software one).
        cmd.args(["run", "--backend", "gpu"])
            .arg("--model")
            .arg(model)
            .args(["--prompt", &prompt(len.prompt, salt)])
            .args(["--max-tokens", &len.generated.to_string()])
            .args(["--context", &(len.prompt + len.generated + 64).to_string()])
            .args(["--ignore-eos", "--warmup", "1", "--json"]);
        if let Some(a) = adapter {
            cmd.args(["--adapter", a]);
        }
        eprintln!("$ {}", sh::describe(&cmd));
        let parsed = cmd.output().context("start tpsmeter run").and_then(|o| {
            if !o.status.success() {
                bail!(
                    "tpsmeter run failed: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
            }
            parse_run_json(&String::from_utf8_lossy(&o.stdout))
        });
        match parsed {
            Ok(r) => runs.push(r),
            Err(e) => return Row::failed("tpsmeter (native)", "wgpu", name, format!("{e:#}")),
        }
    }
    native_row(name, &runs)
}

/// llama.cpp on the CPU (the cached build), on Vulkan and, where `nvcc` exists, on CUDA.
fn llama_rows(
    models: &[PathBuf],
    names: &[String],
    len: Lengths,
    real_gpu: bool,
    offline: bool,
) -> Vec<Row> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .to_string();
    let mut rows = Vec::new();
    let mut builds: Vec<(&str, &str, Result<PathBuf>)> = vec![(
        "llama.cpp",
        "CPU",
        Ok(assets::llama_bin("")).and_then(|d| {
            anyhow::ensure!(
                d.join("llama-bench").exists(),
                "no llama.cpp CPU build: run `cargo xtask setup`"
            );
            Ok(d)
        }),
    )];
    // Offline, only what the cache holds: a build there would need a registry (Vulkan) or
    // minutes of the lent GPU machine (CUDA).
    let cached = |dir: PathBuf, how: &str| -> Result<PathBuf> {
        anyhow::ensure!(
            dir.join("llama-bench").exists(),
            "--offline and no build in {} ({how})",
            dir.display()
        );
        Ok(dir)
    };
    builds.push((
        "llama.cpp",
        "Vulkan",
        if offline {
            cached(llama_vulkan::bin_dir(), "cargo xtask llama-vulkan")
        } else {
            llama_vulkan::build().map(|()| llama_vulkan::bin_dir())
        },
    ));
    if llama_cuda::nvcc().is_some() {
        builds.push((
            "llama.cpp",
            "CUDA",
            if offline {
                cached(
                    llama_cuda::bin_dir(),
                    "gpu-report without --offline builds it",
                )
            } else {
                llama_cuda::build()
            },
        ));
    } else {
        eprintln!("gpu-report: no nvcc here: no llama.cpp CUDA row");
    }
    for (runtime, backend, bin) in builds {
        let bin = match bin {
            Ok(b) => b,
            Err(e) => {
                for n in names {
                    rows.push(Row::failed(
                        runtime,
                        backend,
                        n,
                        format!("not built: {e:#}"),
                    ));
                }
                continue;
            }
        };
        for (m, name) in models.iter().zip(names) {
            let mut cmd = Command::new(bin.join("llama-bench"));
            cmd.arg("-m")
                .arg(m)
                .args(["-p", &len.prompt.to_string()])
                .args(["-n", &len.generated.to_string()])
                .args(["-r", &len.runs.to_string()])
                .args(["-o", "json"]);
            match backend {
                "CPU" => {
                    cmd.args(["-ngl", "0", "-t", &threads]);
                }
                _ => {
                    cmd.args(["-ngl", "99"]);
                }
            }
            // ggml's Vulkan backend skips CPU-type devices (lavapipe) unless one is named:
            // without a GPU, name device 0 so the row measures lavapipe rather than failing.
            if backend == "Vulkan"
                && !real_gpu
                && std::env::var_os("GGML_VK_VISIBLE_DEVICES").is_none()
            {
                cmd.env("GGML_VK_VISIBLE_DEVICES", "0");
            }
            eprintln!("$ {}", sh::describe(&cmd));
            let row = cmd.output().context("start llama-bench").and_then(|o| {
                if !o.status.success() {
                    let err = String::from_utf8_lossy(&o.stderr);
                    let tail: Vec<&str> = err.lines().rev().take(3).collect();
                    bail!("llama-bench failed: {}", tail.join(" / "));
                }
                parse_llama_bench(&String::from_utf8_lossy(&o.stdout), runtime, backend, name)
            });
            rows.push(
                row.unwrap_or_else(|e| Row::failed(runtime, backend, name, format!("{e:#}"))),
            );
        }
    }
    rows
}

/// The package, the browser tests' npm packages (playwright-core, wllama), then
/// `gpu-report.mjs` with the real-GPU flags.
fn browser_rows(models: &[PathBuf], names: &[String], len: Lengths, out_dir: &Path) -> Vec<Row> {
    let result = (|| -> Result<Vec<Row>> {
        anyhow::ensure!(
            Path::new(CHROMIUM).exists(),
            "no Chromium at {CHROMIUM}: run `cargo xtask setup`"
        );
        // A packed package named by TPSMETER_PKG_TARBALL (a machine without the wasm tool
        // chain, or a build to compare), else built now.
        let tarball = match std::env::var_os("TPSMETER_PKG_TARBALL") {
            Some(t) => PathBuf::from(t),
            None => {
                let _lock = sh::exclusive("pkg-build")?;
                pkg::build()?
            }
        };
        let root = repo_root();
        tools::npm_install(&root.join("tests").join("browser"))?;
        // The script serves one directory as /models/.
        let dirs: std::collections::BTreeSet<_> =
            models.iter().filter_map(|m| m.parent()).collect();
        anyhow::ensure!(dirs.len() == 1, "the models lie in several directories");
        let out = out_dir.join("browser.json");
        let script = |gpu_flags: bool| -> Result<(String, Vec<Row>)> {
            let _ = std::fs::remove_file(&out);
            let mut node = Command::new("node");
            node.current_dir(&root)
                .arg("tests/browser/bench/gpu-report.mjs")
                .arg(&out)
                .args([len.prompt, len.generated, len.runs].map(|n| n.to_string()))
                .args(models)
                .env("TPSMETER_PKG_TARBALL", &tarball)
                .env("TPSMETER_CHROMIUM", CHROMIUM);
            if gpu_flags {
                let args: Vec<String> =
                    GPU_CHROMIUM_ARGS.iter().map(|s| format!("{s:?}")).collect();
                node.env(
                    "TPSMETER_GPU_REPORT_CHROMIUM_ARGS",
                    format!("[{}]", args.join(",")),
                );
            }
            sh::run(&mut node)?;
            let text =
                std::fs::read_to_string(&out).with_context(|| format!("read {}", out.display()))?;
            parse_browser(&text)
        };
        let (adapter, mut rows) = script(true)?;
        eprintln!("gpu-report: Chromium's WebGPU adapter with the GPU flags: {adapter}");
        if adapter.starts_with("no adapter") {
            // No WebGPU adapter through Vulkan (no GPU, or a driver Chromium refuses): the
            // tests' flags still give SwiftShader, which the rows then say they ran on.
            let (default_adapter, fallback) = script(false)?;
            eprintln!(
                "gpu-report: Chromium's WebGPU adapter with its default flags: {default_adapter}"
            );
            rows = fallback;
            for r in &mut rows {
                r.note = format!("GPU flags gave {adapter:?}; default flags. {}", r.note)
                    .trim_end()
                    .to_string();
            }
        }
        Ok(rows)
    })();
    result.unwrap_or_else(|e| {
        names
            .iter()
            .map(|n| Row::failed("Chromium", "WebGPU", n, format!("{e:#}")))
            .collect()
    })
}

/// `nvidia-smi`'s GPU names and driver, where it exists.
fn nvidia_gpus() -> Option<String> {
    let o = Command::new("nvidia-smi")
        .args(["--query-gpu=name,driver_version", "--format=csv,noheader"])
        .output()
        .ok()?;
    o.status.success().then(|| {
        String::from_utf8_lossy(&o.stdout)
            .trim()
            .replace('\n', "; ")
    })
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}
