//! `cargo xtask ci`: what CI runs, in the order that fails fastest.

use crate::assets;
use crate::browser;
use crate::sh::{self, repo_root};
use anyhow::Result;
use std::process::Command;

pub fn run_ci(skip_setup: bool) -> Result<()> {
    if !skip_setup {
        assets::setup_all()?;
    }
    let root = repo_root();
    let cargo = || {
        let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        c.current_dir(&root);
        c
    };
    sh::run(cargo().args(["fmt", "--all", "--", "--check"]))?;
    sh::run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    // The browser build reuses the core and the engine unchanged: both must stay wasm-clean,
    // as must the boundary crate itself.
    sh::run(cargo().args([
        "clippy",
        "-p",
        "tpsmeter-core",
        "-p",
        "tpsmeter-gpu",
        "-p",
        "tpsmeter-wasm",
        "--target",
        "wasm32-unknown-unknown",
        "--",
        "-D",
        "warnings",
    ]))?;
    sh::run(
        cargo()
            .env("RUSTDOCFLAGS", "-D warnings")
            .args(["doc", "--workspace", "--no-deps"]),
    )?;
    // With TPSMETER_REQUIRE_ASSETS=1 a test that needs the model, llama-server or a GPU
    // adapter fails instead of skipping: CI must never pass because an asset was missing.
    let mut test = cargo();
    test.env("TPSMETER_REQUIRE_ASSETS", "1");
    for (k, v) in assets::asset_env() {
        test.env(k, v);
    }
    // Not `--all-targets`: the benches are `harness = false` programs that would run their
    // full measurements here. Clippy above already compiles them.
    sh::run(test.args(["test", "--workspace", "--lib", "--bins", "--tests"]))?;
    sh::run(cargo().args(["test", "--workspace", "--doc"]))?;
    // The core as the real-user meter's wasm build links it (no `json-error-detail`).
    sh::run(cargo().args([
        "test",
        "-p",
        "tpsmeter-core",
        "--no-default-features",
        "--lib",
    ]))?;
    // Every fuzz target a fixed number of runs from the seed corpora: a parser change that
    // panics, hangs or over-allocates on an input the corpus (or its first mutations) holds
    // fails here. The long campaigns are `cargo xtask fuzz --runs 10000000`.
    crate::fuzz::run(&[
        "--fresh".to_owned(),
        "--runs".to_owned(),
        crate::fuzz::CI_RUNS.to_string(),
    ])?;
    browser::run_browser_tests(true)
}

pub fn run(args: &[String]) -> Result<()> {
    run_ci(args.iter().any(|a| a == "--skip-setup"))
}
