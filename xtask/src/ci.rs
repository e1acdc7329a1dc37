//! `cargo xtask ci`: what CI runs, in the order that fails fastest, each step timed against
//! its budget ([`BUDGETS`]; the table at the end is also `<target>/ci-times.json`).

use crate::assets;
use crate::browser;
use crate::sh::{self, repo_root};
use crate::steps::{self, timed};
use crate::tools::target_dir;
use anyhow::Result;
use std::process::Command;

/// Seconds each step may take on a fresh 2-core machine, as CI's is (nothing cached: every
/// dependency compiled, llama.cpp and the wasm-bindgen CLI built), from measured runs
/// (docs/testing.md has the figures and their load); a step past its budget by 25 % is a
/// warning in the table. The browser steps are `browser-test`'s own. With a warm cache most
/// steps take a fraction of theirs.
pub const BUDGETS: &[(&str, u64)] = &[
    ("map paths", 1),
    // Packages, models and llama.cpp's source: ~50 s from nothing.
    ("setup", 90),
    ("fmt", 10),
    ("clippy (native)", 300),
    ("clippy (wasm32)", 120),
    ("rustdoc", 60),
    ("fuzz seeds", 10),
    // 790 s before dependencies lost their debug info (and incremental caches went); 421 s
    // after, with the set-up builds beside it.
    ("tests (native): build", 480),
    // llama.cpp at full speed once the test build is done: the background thread gets few
    // idle cycles before (the wasm-bindgen CLI, not much more).
    ("setup builds (wait)", 360),
    // Most of it is lavapipe compiling shaders with Mesa's cache cold (kernel_attention and
    // kernel_matvec, ~400 s).
    ("tests (native)", 1100),
    ("doc tests", 60),
    ("core without json-error-detail", 60),
    ("core tests in Chromium", 100),
    ("kernel tests in Chromium (WebGPU)", 300),
    // Two browser launches and the cpu_kernels binaries Chromium's step built: 8 + 4 s.
    ("CPU kernels in Firefox and WebKit", 30),
    // Seven wasm-release builds, two with a std built from source, from nothing: 522 s
    // (325 s with the dependencies already built).
    ("pkg", 560),
    ("site", 20),
    ("test binaries", 30),
    ("package unit tests", 30),
    // 418 s measured before the CPU backend's browser tests (the engine on the CPU against
    // the native one, the demo without WebGPU: about 100 s more on two cores); the
    // engines suite runs the package, the page and the CPU demo in three engines.
    ("end-to-end tests", 640),
];

pub fn run_ci(skip_setup: bool) -> Result<()> {
    steps::set_budgets(BUDGETS);
    let outcome = run_steps(skip_setup);
    // The table is printed (and written) whether the run passed or failed: a failure late in
    // the run still shows where the time went.
    let over = steps::report(&target_dir().join("ci-times.json"))?;
    if !over.is_empty() {
        eprintln!(
            "ci: WARNING: over budget by more than 25 %: {} (docs/testing.md: where a test belongs)",
            over.join(", ")
        );
    }
    outcome
}

fn run_steps(skip_setup: bool) -> Result<()> {
    // First, before the set-up and the long stages: a path in the map that a move left
    // behind fails in milliseconds, not after half an hour of tests.
    timed("map paths", || {
        let root = repo_root();
        crate::map::check_file(&root, &root.join("ARCHITECTURE.md"))?;
        crate::layers::check(&root)
    })?;
    // Downloads in the foreground; the two long set-up builds in the background, on the cores
    // the workspace's builds leave idle, joined before anything needs them.
    let builds = if skip_setup {
        None
    } else {
        timed("setup", assets::setup_downloads)?;
        Some(crate::background::Background::spawn()?)
    };
    let root = repo_root();
    let cargo = || {
        let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        c.current_dir(&root);
        c
    };
    timed("fmt", || {
        sh::run(cargo().args(["fmt", "--all", "--", "--check"]))
    })?;
    timed("clippy (native)", || {
        sh::run(cargo().args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]))
    })?;
    // The browser build reuses the core and the engine unchanged: both must stay wasm-clean,
    // as must the boundary crate itself.
    timed("clippy (wasm32)", || {
        sh::run(cargo().args([
            "clippy",
            "-p",
            "tpsmeter-core",
            "-p",
            "tpsmeter-gpu",
            "-p",
            "tpsmeter-wasm",
            // Every engine build (WebGPU, CPU, threads, relaxed SIMD), which the default features
            // leave out.
            "--features",
            "tpsmeter-wasm/gpu,tpsmeter-wasm/threads,tpsmeter-wasm/relaxed",
            "--target",
            "wasm32-unknown-unknown",
            "--",
            "-D",
            "warnings",
        ]))
    })?;
    timed("rustdoc", || {
        sh::run(cargo().env("RUSTDOCFLAGS", "-D warnings").args([
            "doc",
            "--workspace",
            "--no-deps",
        ]))
    })?;
    // The fuzz targets' checks replay their seed corpora (and mutations of every seed) as an
    // ordinary test (`crates/tpsmeter-cli/tests/fuzz_replay.rs`), so CI builds no sanitizer
    // toolchain: the coverage-guided campaigns are `cargo xtask fuzz`. Written fresh, so the
    // test's inputs are exactly the seeds of this checkout and the cached models.
    let corpus = timed("fuzz seeds", crate::fuzz_seeds::write_replay_corpus)?;
    // With TPSMETER_REQUIRE_ASSETS=1 a test that needs the model, llama-server or a GPU
    // adapter fails instead of skipping: CI must never pass because an asset was missing.
    let native_test = || {
        let mut test = cargo();
        test.env("TPSMETER_REQUIRE_ASSETS", "1");
        for (k, v) in assets::asset_env() {
            test.env(k, v);
        }
        test.env("TPSMETER_FUZZ_CORPUS", &corpus);
        test
    };
    // Not `--all-targets`: the benches are `harness = false` programs that would run their
    // full measurements here. Clippy above already compiles them. Built first (`--no-run`),
    // while the set-up builds still have idle cores to use, then run once those are done.
    const TEST_ARGS: &[&str] = &["test", "--workspace", "--lib", "--bins", "--tests"];
    timed("tests (native): build", || {
        sh::run(native_test().args(TEST_ARGS).arg("--no-run"))
    })?;
    if let Some(builds) = builds {
        timed("setup builds (wait)", || builds.join())?;
    }
    timed("tests (native)", || sh::run(native_test().args(TEST_ARGS)))?;
    timed("doc tests", || {
        sh::run(cargo().args(["test", "--workspace", "--doc"]))
    })?;
    // The core as the real-user meter's wasm build links it (no `json-error-detail`).
    timed("core without json-error-detail", || {
        sh::run(cargo().args([
            "test",
            "-p",
            "tpsmeter-core",
            "--no-default-features",
            "--lib",
        ]))
    })?;
    browser::run_browser_tests(true)
}

pub fn run(args: &[String]) -> Result<()> {
    run_ci(args.iter().any(|a| a == "--skip-setup"))
}
