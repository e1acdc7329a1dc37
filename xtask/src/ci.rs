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
    // lavapipe compiling shaders with Mesa's cache cold, unoptimised (GALLIVM_PERF=nopt),
    // two binaries at a time: 206 s here (371-381 s one after another).
    ("tests (native): kernels", 260),
    // Everything else but llama.cpp's comparisons; llama.cpp builds in its idle cycles.
    ("tests (native)", 500),
    ("doc tests", 60),
    ("core without json-error-detail", 60),
    // The wasm-bindgen CLI was built beside the test build: nothing left to wait for.
    ("setup builds (wait): wasm-bindgen", 30),
    ("core tests in Chromium", 100),
    // 342 s in a fresh rehearsal one binary after another (about one core: SwiftShader);
    // two jobs at a time since, 217 -> 139 s warm.
    ("kernel tests in Chromium (WebGPU)", 300),
    // Two browser launches and the cpu_kernels binaries Chromium's step built: 8 + 4 s.
    ("CPU kernels in Firefox and WebKit", 30),
    // The wasm-release builds, two with a std built from source, from nothing: 522 s
    // (325 s with the dependencies already built) when there were seven; the meter's one
    // became seven (one per wire family), each ~1 s of tpsmeter-wasm and a link after the
    // first, and ~1 s of wasm-bindgen, wasm-opt and esbuild.
    ("pkg", 560),
    ("site", 20),
    ("test binaries", 30),
    ("package unit tests", 30),
    // llama.cpp (~630 core-seconds) in the idle cycles of everything above; what is left.
    ("setup builds (wait): llama.cpp", 120),
    // The comparisons with llama.cpp (model_llamacpp 61 s and cpu_llamacpp 58 s with each
    // test's llama-server on one thread, reference_llamacpp, quant_variants, the tokenizer
    // and llama-server tests): ~200 s here.
    ("tests (native, llama.cpp)", 300),
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
            "tpsmeter-model",
            "-p",
            "tpsmeter-cpu",
            "-p",
            "tpsmeter-gpu",
            "-p",
            "tpsmeter-wasm",
            // Every engine build (WebGPU, CPU, threads, relaxed SIMD) and the tokenizer's,
            // which the default features leave out.
            "--features",
            "tpsmeter-wasm/gpu,tpsmeter-wasm/threads,tpsmeter-wasm/relaxed,tpsmeter-wasm/tokenizer",
            "--target",
            "wasm32-unknown-unknown",
            "--",
            "-D",
            "warnings",
        ]))?;
        // The meter's builds (no `bench`: their own `Exchange` decoders), all families at
        // once: ~6 s, the core without `json-error-detail` checked again.
        sh::run(cargo().args([
            "clippy",
            "-p",
            "tpsmeter-wasm",
            "--no-default-features",
            "--features",
            "meter-openai-chat,meter-openai-completions,meter-openai-responses,meter-anthropic,\
             meter-gemini,meter-ollama,meter-vercel-ui",
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
    // while the set-up builds still have idle cores to use.
    const TEST_ARGS: &[&str] = &["test", "--workspace", "--lib", "--bins", "--tests"];
    let binaries = timed("tests (native): build", || {
        crate::lanes::build(native_test().args(TEST_ARGS).arg("--no-run"))
    })?;
    // Every test binary but llama.cpp's comparisons runs now, while llama.cpp builds in the
    // idle cycles they leave (a binary's last slow test, a model load on one thread); before,
    // the run waited ~320 s for that build here. Without llama.cpp's variables: a test that
    // needs it and is missing from `LLAMA_TESTS` fails (`TPSMETER_REQUIRE_ASSETS=1`), never
    // runs a half-linked binary.
    let tests = test_targets()?;
    // The kernel binaries first, on a lavapipe that does not optimise (`GALLIVM_PERF=nopt`):
    // each compares small dispatches of many shader variants with their CPU twins, so their
    // time is Mesa compiling shaders (cold on a fresh machine) and LLVM's optimiser is most
    // of that. Measured on `kernel_attention`: 214 s against ~490 s of CPU. What they check
    // (a kernel's results against its twin) does not depend on how lavapipe compiles. The
    // model and engine binaries run long dispatches, where unoptimised shaders lose.
    let without_llama = || {
        let mut test = native_test();
        for var in LLAMA_VARS {
            test.env_remove(var);
        }
        test
    };
    // Two binaries at a time: a kernel test compiles its shaders on its own thread, and the
    // longest (attention's, matvec's) each held one core for minutes while the other idled.
    let kernels = kernel_binaries(&binaries, &tests.kernels)?;
    timed("tests (native): kernels", || {
        crate::lanes::run(&kernels, 2, |bin| {
            let cargo = without_llama();
            let mut test = Command::new(&bin.path);
            test.current_dir(&bin.dir).env("GALLIVM_PERF", "nopt");
            for (k, v) in cargo.get_envs() {
                match v {
                    Some(v) => test.env(k, v),
                    None => test.env_remove(k),
                };
            }
            test
        })
    })?;
    timed("tests (native)", || {
        sh::run(
            without_llama()
                .args(["test", "--workspace", "--lib", "--bins"])
                .args(&tests.other),
        )
    })?;
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
    let mut builds = builds;
    if let Some(builds) = builds.as_mut() {
        timed("setup builds (wait): wasm-bindgen", || {
            builds.wait_for(crate::background::WASM_BINDGEN)
        })?;
    }
    browser::run_browser_tests(true, || {
        if let Some(builds) = builds {
            timed("setup builds (wait): llama.cpp", || builds.join())?;
        }
        timed("tests (native, llama.cpp)", || {
            sh::run(
                native_test()
                    .args(["test", "--workspace"])
                    .args(&tests.llama),
            )
        })
    })
}

/// The kernel binaries (`names`: `--test NAME` pairs) among those built, longest first
/// ([`LONGEST_KERNELS`]): the lanes take them in this order.
fn kernel_binaries(
    built: &[crate::lanes::TestBinary],
    names: &[String],
) -> Result<Vec<crate::lanes::TestBinary>> {
    let mut bins = Vec::new();
    for name in names.iter().filter(|n| *n != "--test") {
        let Some(bin) = built.iter().find(|b| b.kind == "test" && &b.name == name) else {
            anyhow::bail!("the test build made no binary for the kernel test `{name}`");
        };
        bins.push(bin.clone());
    }
    bins.sort_by_key(|b| {
        LONGEST_KERNELS
            .iter()
            .position(|l| *l == b.name)
            .unwrap_or(LONGEST_KERNELS.len())
    });
    Ok(bins)
}

/// The kernel binaries that take longest with Mesa's cache cold (`kernel_attention` ~190 s,
/// `kernel_matvec` ~175 s of one core each here): started first, one in each lane.
const LONGEST_KERNELS: &[&str] = &["kernel_attention", "kernel_matvec"];

/// The integration-test binaries that run llama.cpp's own binaries (the comparisons, the
/// tokenizer's and llama-server's tests): they run once the set-up builds have built it.
/// Every other test binary runs while it builds.
const LLAMA_TESTS: &[&str] = &[
    "cpu_llamacpp",
    "llama_server",
    "model_llamacpp",
    "quant_variants",
    "reference_llamacpp",
    "tokenizer",
    "tokenizer_llama_cpp",
];

/// The variables that point the tests at llama.cpp's build ([`assets::asset_env`]); its
/// source (`TPSMETER_LLAMA_SRC`) is there from the set-up's downloads on.
const LLAMA_VARS: &[&str] = &["TPSMETER_LLAMA_BIN", "TPSMETER_LLAMA_SERVER"];

/// The workspace's integration tests as `--test NAME` arguments, in the three groups CI runs
/// them in.
#[derive(Debug)]
struct TestGroups {
    /// The engine's `kernel_*`: one kernel against its CPU twin, on lavapipe.
    kernels: Vec<String>,
    /// [`LLAMA_TESTS`].
    llama: Vec<String>,
    /// The rest.
    other: Vec<String>,
}

/// The workspace's integration tests (from `cargo metadata`) in their [`TestGroups`]. A
/// name in [`LLAMA_TESTS`] that no crate has is an error, so a renamed test cannot drop out
/// of the run unseen.
fn test_targets() -> Result<TestGroups> {
    let out = Command::new(crate::tools::cargo())
        .current_dir(repo_root())
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .output()?;
    if !out.status.success() {
        anyhow::bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let mut names: Vec<(String, String)> = Vec::new();
    for package in meta["packages"].as_array().into_iter().flatten() {
        let crate_name = package["name"].as_str().unwrap_or_default();
        for target in package["targets"].as_array().into_iter().flatten() {
            let is_test = target["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "test"));
            if let (true, Some(name)) = (is_test, target["name"].as_str()) {
                names.push((crate_name.to_owned(), name.to_owned()));
            }
        }
    }
    names.sort();
    names.dedup();
    split_tests(&names)
}

/// `names`: (crate, integration test) pairs.
fn split_tests(names: &[(String, String)]) -> Result<TestGroups> {
    if let Some(missing) = LLAMA_TESTS
        .iter()
        .find(|l| !names.iter().any(|(_, n)| n == *l))
    {
        anyhow::bail!(
            "LLAMA_TESTS names `{missing}`, which is no integration test of the workspace"
        );
    }
    let mut groups = TestGroups {
        kernels: Vec::new(),
        llama: Vec::new(),
        other: Vec::new(),
    };
    for (crate_name, name) in names {
        let group = if LLAMA_TESTS.contains(&name.as_str()) {
            &mut groups.llama
        } else if crate_name == "tpsmeter-gpu" && name.starts_with("kernel_") {
            &mut groups.kernels
        } else {
            &mut groups.other
        };
        group.extend(["--test".to_owned(), name.clone()]);
    }
    Ok(groups)
}

pub fn run(args: &[String]) -> Result<()> {
    run_ci(args.iter().any(|a| a == "--skip-setup"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_test_runs_in_exactly_one_group() -> Result<()> {
        let pair = |c: &str, n: &str| (c.to_owned(), n.to_owned());
        let mut names: Vec<_> = LLAMA_TESTS
            .iter()
            .map(|n| pair("tpsmeter-gpu", n))
            .collect();
        names.push(pair("tpsmeter-gpu", "kernel_matvec"));
        names.push(pair("tpsmeter-gpu", "engine_chain"));
        // The CLI's kernel stamps run no shader.
        names.push(pair("tpsmeter-cli", "kernel_stamps"));
        let groups = split_tests(&names)?;
        assert_eq!(groups.kernels, ["--test", "kernel_matvec"]);
        assert_eq!(
            groups.other,
            ["--test", "engine_chain", "--test", "kernel_stamps"]
        );
        assert_eq!(groups.llama.len(), 2 * LLAMA_TESTS.len());
        for name in LLAMA_TESTS {
            assert!(groups.llama.iter().any(|a| a == name));
        }
        Ok(())
    }

    #[test]
    fn a_llama_test_that_is_gone_is_an_error() {
        let names = vec![("tpsmeter-gpu".to_owned(), "kernel_matvec".to_owned())];
        assert!(split_tests(&names).is_err());
    }
}
