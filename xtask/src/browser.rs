//! `cargo xtask browser-test`: everything that runs in headless Chromium.
//!
//! 1. `tpsmeter-core`'s integration tests and `tpsmeter-gpu`'s kernel tests (every kernel
//!    against its CPU twin, on the page's WebGPU adapter: SwiftShader here), compiled to
//!    wasm32 and run in Chromium by `wasm-bindgen-test-runner` through chromedriver (the same
//!    test functions as natively; see the top of each file in `crates/tpsmeter-core/tests/`
//!    and `crates/tpsmeter-gpu/tests/common/mod.rs`);
//! 2. `cargo xtask pkg` (the npm package, packed), then the site (`www/`, built against it);
//! 3. the `tpsmeter-emulator` and `tpsmeter` binaries (dev profile) the end-to-end tests talk to;
//! 4. `npm ci` and `node --test` in `tests/browser/`, which drive Debian's Chromium through
//!    playwright-core, and (engines.test.mjs) Firefox ESR through puppeteer-core and WebKitGTK
//!    through WebKitWebDriver, never a browser of their own, against the packed package.
//!
//! The CPU backend's kernels also run in Firefox (the relaxed-SIMD build) and WebKitGTK (the
//! plain one: WebKit has no relaxed SIMD), through `tests/browser/support/wasm-runner.mjs`.
//! WebKitGTK's MiniBrowser opens a window: a private Xvfb is started when `DISPLAY` is unset
//! (`display.rs`).

use crate::assets::{self, cache_dir};
use crate::display::Display;
use crate::lanes::{self, TestBinary};
use crate::sh::{self, repo_root};
use crate::steps::timed;
use crate::tools::{
    self, CHROMEDRIVER, CHROMIUM, FIREFOX, WEBKIT_DRIVER, cargo, npm_install, target_dir,
};
use crate::{pkg, www};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Chromium flags that work headless as root in a container without a GPU, with nothing
/// fetched in the background. chromedriver gives each session a fresh profile directory;
/// wasm-bindgen-test-runner adds `headless`, `no-sandbox` and `disable-dev-shm-usage` itself.
const CHROMIUM_ARGS: &[&str] = &[
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    // WebGPU on SwiftShader (the kernel tests); `--disable-gpu` only turns off the GPU process's
    // hardware paths.
    "--enable-unsafe-webgpu",
];

/// The `tpsmeter-gpu` tests that run in the browser: every WebGPU kernel against its CPU twin,
/// and the CPU backend's kernels (wasm SIMD) against their oracle. The rest read model files
/// from disk or need native threads.
const GPU_BROWSER_TESTS: &[&str] = &[
    "cpu_kernels",
    "kernel_attention",
    "kernel_fused_matvec",
    "kernel_matvec",
    "kernel_ops",
    "kernel_probe",
    "kernel_rope_kv",
    "kernel_sample",
];

/// Seconds each wasm test binary may take in the browser. The runner's default is 20 s; each
/// binary takes under a second here, but the property tests run thousands of cases and a
/// loaded CI machine should fail on a result, never on this timer.
const WASM_TEST_TIMEOUT_S: u32 = 600;

/// Every browser step; `before_e2e` runs just before the end-to-end tests (CI waits there for
/// llama.cpp, which only they and the last native tests need).
pub fn run_browser_tests(
    require_assets: bool,
    before_e2e: impl FnOnce() -> Result<()>,
) -> Result<()> {
    let _lock = sh::exclusive("pkg-build")?;
    let tmp = PrivateTmp::new()?;
    let display = Display::get()?;
    timed("core tests in Chromium", || wasm_tests(&tmp))?;
    timed("kernel tests in Chromium (WebGPU)", || gpu_wasm_tests(&tmp))?;
    timed("CPU kernels in Firefox and WebKit", || {
        engine_kernel_tests(&tmp, &display)
    })?;
    end_to_end(require_assets, &[], &tmp, &display, before_e2e)
}

/// The CPU backend's kernels against their oracle in the other two engines' wasm: Firefox
/// validates relaxed SIMD (its build, as the page loads it there), WebKit does not (the
/// plain build). Chromium ran both in [`gpu_wasm_tests`]; these binaries are built already.
fn engine_kernel_tests(tmp: &PrivateTmp, display: &Display) -> Result<()> {
    browser_npm()?;
    let script = repo_root().join("tests/browser/support/wasm-runner.mjs");
    for (engine, features) in [("firefox", Some("relaxed-simd")), ("webkit", None)] {
        let mut cmd = wasm_test_command(tmp)?;
        cmd.env("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER", &script)
            .env(
                "WASM_BINDGEN_TEST_RUNNER",
                tools::wasm_bindgen_test_runner(),
            )
            .env("TPSMETER_WASM_ENGINE", engine)
            .env("TPSMETER_FIREFOX", FIREFOX)
            .env("TPSMETER_WEBKIT_DRIVER", WEBKIT_DRIVER)
            .env("DISPLAY", &display.name)
            .args([
                "test",
                "-p",
                "tpsmeter-gpu",
                "--target",
                "wasm32-unknown-unknown",
            ]);
        if let Some(f) = features {
            cmd.args(["--features", f]);
        }
        sh::run(cmd.args(["--test", "cpu_kernels"]))?;
    }
    Ok(())
}

/// `npm ci` in `tests/browser/`, once per run (the kernel step and the end-to-end step both
/// need its packages; a second `npm ci` would delete and reinstall them).
fn browser_npm() -> Result<()> {
    static DONE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    if DONE.get().is_some() {
        return Ok(());
    }
    npm_install(&repo_root().join("tests").join("browser"))?;
    let _ = DONE.set(());
    Ok(())
}

/// Step 2 to 4: the package, the site, the binaries and `node --test` over `files` (every
/// `tests/browser/*.test.mjs` when empty).
fn end_to_end(
    require_assets: bool,
    files: &[String],
    tmp: &PrivateTmp,
    display: &Display,
    before_e2e: impl FnOnce() -> Result<()>,
) -> Result<()> {
    let tarball = timed("pkg", pkg::build)?;
    let site = timed("site", www::build_site)?;
    let (emulator, cli) = timed("test binaries", test_binaries)?;
    // The package's and the page's logic in Node first: seconds, and a failure there names
    // the function, not a page.
    if files.is_empty() {
        timed("package unit tests", || {
            unit_tests(require_assets, &tarball, &emulator, &cli, tmp)
        })?;
    }
    before_e2e()?;
    timed("end-to-end tests", || {
        let built = Built {
            tarball: &tarball,
            site: &site,
            emulator: &emulator,
            cli: &cli,
        };
        node_tests(require_assets, files, &built, tmp, display)
    })
}

/// The temporary directory the browsers and the tests of one run use (`TMPDIR`), removed
/// with everything in it when the run ends, passed or failed. Without it each run left
/// ~2.3 GB in /tmp on this machine: chromedriver's per-session profiles
/// (`org.chromium.Chromium.scoped_dir.*`, which it deletes only when a session is quit, and
/// wasm-bindgen-test-runner ends it without quitting), Chromium's singleton-socket
/// directories, and each test process's scratch npm project. Private to the run (named by
/// its pid), so a run beside it keeps its own.
struct PrivateTmp(PathBuf);

impl PrivateTmp {
    fn new() -> Result<Self> {
        let dir = cache_dir()
            .join("browser")
            .join(format!("tmp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
        Ok(Self(dir))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.0) {
            eprintln!("browser-test: could not remove {}: {e}", self.0.display());
        }
    }
}

/// `cargo xtask browser-test [--require-assets] [--kernels | --e2e [FILE...]]`: `--kernels`
/// runs only `tpsmeter-gpu`'s kernel tests in Chromium (a kernel change's quick check);
/// `--e2e` only the end-to-end tests, all of them or the named files
/// (`tests/browser/www.test.mjs`; node's own flags such as `--test-name-pattern=…` pass
/// through), skipping the wasm test binaries.
pub fn run(args: &[String]) -> Result<()> {
    if args.iter().any(|a| a == "--kernels") {
        let tmp = PrivateTmp::new()?;
        return timed("kernel tests in Chromium (WebGPU)", || gpu_wasm_tests(&tmp));
    }
    if let Some(at) = args.iter().position(|a| a == "--e2e") {
        let _lock = sh::exclusive("pkg-build")?;
        let files: Vec<String> = args[at + 1..]
            .iter()
            .filter(|a| *a != "--require-assets")
            .cloned()
            .collect();
        let tmp = PrivateTmp::new()?;
        let display = Display::get()?;
        let require = args.iter().any(|a| a == "--require-assets");
        return end_to_end(require, &files, &tmp, &display, || Ok(()));
    }
    run_browser_tests(args.iter().any(|a| a == "--require-assets"), || Ok(()))
}

/// `cargo test -p tpsmeter-core --target wasm32-unknown-unknown --tests` in headless Chromium.
fn wasm_tests(tmp: &PrivateTmp) -> Result<()> {
    check_browser_lines()?;
    sh::run(wasm_test_command(tmp)?.args([
        "test",
        "-p",
        "tpsmeter-core",
        "--target",
        "wasm32-unknown-unknown",
        "--tests",
    ]))
}

/// `tpsmeter-gpu`'s kernel tests in headless Chromium, on its WebGPU adapter, two at a
/// time: SwiftShader compiles and runs a page's shaders on about one core (1.1 busy on
/// average over the step run one binary after another, 217 s), and `kernel_matvec` alone
/// was 175 s of that, so its longest test (the GPU profile's prefill kernels, ~110 s) runs
/// as a job of its own beside the rest.
fn gpu_wasm_tests(tmp: &PrivateTmp) -> Result<()> {
    let build = |features: &[&str], tests: &[&str]| -> Result<Vec<TestBinary>> {
        let mut cmd = wasm_test_command(tmp)?;
        cmd.args([
            "test",
            "-p",
            "tpsmeter-gpu",
            "--target",
            "wasm32-unknown-unknown",
            "--no-run",
        ])
        .args(features);
        for t in tests {
            cmd.args(["--test", t]);
        }
        lanes::build(&mut cmd)
    };
    let plain = build(&[], GPU_BROWSER_TESTS)?;
    // The CPU kernels again as the relaxed-SIMD build the browser loads where it can.
    let mut relaxed = build(&["--features", "relaxed-simd"], &["cpu_kernels"])?;
    for bin in &mut relaxed {
        bin.name.push_str(" (relaxed SIMD)");
    }
    let jobs = browser_jobs(plain.into_iter().chain(relaxed).collect())?;
    // The runner as cargo would start it: in the package's directory, the binary first;
    // `lanes::run` appends each job's filter.
    let runner = tools::wasm_bindgen_test_runner();
    let webdriver = webdriver_json()?;
    lanes::run(&jobs, 2, |bin| {
        let mut cmd = Command::new(&runner);
        runner_env(&mut cmd, &webdriver, tmp)
            .current_dir(&bin.dir)
            .arg(&bin.path);
        cmd
    })
}

/// The browser's kernel tests that take most of the step in SwiftShader, each run as a job of
/// its own (`binary`, `test`), first; the rest of its binary runs as another job. One test
/// per binary.
const LONG_BROWSER_TESTS: &[(&str, &str)] = &[(
    "kernel_matvec",
    "gpu_matmul_kernels_match_twin_on_ragged_tiles",
)];

/// The binaries built for the browser as the lanes run them: each test of
/// [`LONG_BROWSER_TESTS`] alone, then the rest of its binary, then the other binaries.
fn browser_jobs(mut built: Vec<TestBinary>) -> Result<Vec<TestBinary>> {
    let mut jobs = Vec::new();
    for (binary, test) in LONG_BROWSER_TESTS {
        let Some(i) = built.iter().position(|b| b.name == *binary) else {
            bail!("the browser's test build made no binary `{binary}`");
        };
        let mut others = built.remove(i);
        let mut alone = others.clone();
        alone.name = format!("{binary} {test}");
        alone.args = vec![(*test).to_owned(), "--exact".to_owned()];
        others.name = format!("{binary} (the rest)");
        others.args = vec!["--skip".to_owned(), (*test).to_owned()];
        jobs.extend([alone, others]);
    }
    jobs.extend(built);
    Ok(jobs)
}

/// `cargo` with wasm-bindgen-test-runner as the wasm32 runner, driving Chromium.
fn wasm_test_command(tmp: &PrivateTmp) -> Result<Command> {
    let runner = tools::wasm_bindgen_test_runner();
    for needed in [runner.as_path(), CHROMEDRIVER.as_ref(), CHROMIUM.as_ref()] {
        if !needed.exists() {
            bail!("{} is missing: run `cargo xtask setup`", needed.display());
        }
    }
    let mut cmd = Command::new(cargo());
    cmd.current_dir(repo_root())
        .env("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER", &runner);
    runner_env(&mut cmd, &webdriver_json()?, tmp);
    Ok(cmd)
}

/// What wasm-bindgen-test-runner reads to drive Chromium (`webdriver`: [`webdriver_json`]),
/// whether cargo starts it or xtask.
fn runner_env<'a>(cmd: &'a mut Command, webdriver: &Path, tmp: &PrivateTmp) -> &'a mut Command {
    cmd.env("CHROMEDRIVER", CHROMEDRIVER)
        .env("WASM_BINDGEN_TEST_WEBDRIVER_JSON", webdriver)
        .env("WASM_BINDGEN_TEST_TIMEOUT", WASM_TEST_TIMEOUT_S.to_string())
        .env("TMPDIR", tmp.path())
}

/// The line every core test file needs so that its `#[test]` functions run in the browser.
/// Without it (and the `use ... as test` above it) the file still compiles for wasm32, but
/// its tests are plain libtest tests the runner does not see: it reports "no tests to run!"
/// and passes, so a missing line is an error here instead.
const BROWSER_LINE: &str = "wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);";

fn check_browser_lines() -> Result<()> {
    let dir = repo_root().join("crates/tpsmeter-core/tests");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("read {}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "rs")
            && !std::fs::read_to_string(&path)?.contains(BROWSER_LINE)
        {
            missing.push(path);
        }
    }
    if !missing.is_empty() {
        bail!(
            "these test files would not run in the browser: {missing:?}\n\
             add at their top (after the inner attributes):\n\
             #[cfg(target_arch = \"wasm32\")]\n\
             use wasm_bindgen_test::wasm_bindgen_test as test;\n\
             #[cfg(target_arch = \"wasm32\")]\n\
             {BROWSER_LINE}"
        );
    }
    Ok(())
}

/// The WebDriver capabilities for the runner: Debian's Chromium with [`CHROMIUM_ARGS`].
/// Written to the cache (the runner otherwise looks for `webdriver.json` in the current
/// directory) so the flags live in one place, here.
fn webdriver_json() -> Result<PathBuf> {
    let args: Vec<String> = CHROMIUM_ARGS.iter().map(|a| format!("\"{a}\"")).collect();
    let json = format!(
        "{{\"goog:chromeOptions\": {{\"binary\": \"{CHROMIUM}\", \"args\": [{}]}}}}\n",
        args.join(", ")
    );
    let dir = cache_dir().join("browser");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("webdriver.json");
    std::fs::write(&path, json).with_context(|| format!("write {}", path.display()))?;
    Ok(path)
}

/// The emulator and the CLI (the end-to-end tests' servers and native peer) in the dev
/// profile: `cargo test --workspace` has already compiled everything they need there (the
/// workspace optimises dev builds), while a release build would cost a fresh machine about
/// seven more minutes. The timing benchmarks build release binaries of their own.
fn test_binaries() -> Result<(PathBuf, PathBuf)> {
    // Built as `cargo test --workspace` builds them (for the crates' own integration tests),
    // not with `cargo build -p`: that resolves dependency features without the workspace's
    // dev-dependencies, so it recompiled shared dependencies (3.4 min on a cold target) only
    // to overwrite the same two binaries. After CI's test step this is a no-op.
    sh::run(Command::new(cargo()).current_dir(repo_root()).args([
        "test",
        "--workspace",
        "--lib",
        "--bins",
        "--tests",
        "--no-run",
    ]))?;
    let dir = target_dir().join("debug");
    Ok((dir.join("tpsmeter-emulator"), dir.join("tpsmeter")))
}

/// `node --test tests/unit/`: the package's logic (option checks through the wasm,
/// redaction, the CSV and permalink round trips) in Node's test runner, against the built
/// `pkg/` and, for a real report, the CLI and the emulator. No browser.
fn unit_tests(
    require_assets: bool,
    tarball: &Path,
    emulator: &Path,
    cli: &Path,
    tmp: &PrivateTmp,
) -> Result<()> {
    let root = repo_root();
    let mut node = Command::new("node");
    node.current_dir(&root)
        .args(["--test", "tests/unit/"])
        .env("TPSMETER_PKG_DIR", root.join("pkg"))
        .env("TPSMETER_PKG_TARBALL", tarball)
        .env("TPSMETER_EMULATOR_BIN", emulator)
        .env("TPSMETER_CLI_BIN", cli)
        .env("TMPDIR", tmp.path());
    if require_assets {
        node.env("TPSMETER_REQUIRE_ASSETS", "1");
    }
    sh::run(&mut node)
}

/// What the end-to-end tests test: the packed package, the site, the test binaries.
struct Built<'a> {
    tarball: &'a Path,
    site: &'a Path,
    emulator: &'a Path,
    cli: &'a Path,
}

/// `node --test tests/browser/` against the packed package and the test binaries, in the
/// three engines (WebKit's window on `display`).
fn node_tests(
    require_assets: bool,
    files: &[String],
    built: &Built<'_>,
    tmp: &PrivateTmp,
    display: &Display,
) -> Result<()> {
    let root = repo_root();
    let dir = root.join("tests").join("browser");
    if !dir.join("package.json").exists() {
        eprintln!(
            "browser-test: skipping the end-to-end tests: {} does not exist yet",
            dir.join("package.json").display()
        );
        return Ok(());
    }
    browser_npm()?;
    let mut node = Command::new("node");
    node.current_dir(&root).arg("--test");
    // node's own flags first, wherever they were given: after a file name node takes them
    // for files (`Could not find '.../--test-name-pattern=…'`).
    let (flags, names): (Vec<&String>, Vec<&String>) =
        files.iter().partition(|f| f.starts_with("--"));
    node.args(flags);
    if names.is_empty() {
        node.arg("tests/browser/");
    } else {
        node.args(names);
    }
    node.env("TPSMETER_CHROMIUM", CHROMIUM)
        .env("TPSMETER_FIREFOX", FIREFOX)
        .env("TPSMETER_WEBKIT_DRIVER", WEBKIT_DRIVER)
        .env("DISPLAY", &display.name)
        .env("TPSMETER_PKG_TARBALL", built.tarball)
        .env("TPSMETER_PKG_DIR", root.join("pkg"))
        .env("TPSMETER_WWW_DIR", built.site)
        // The site's screenshots (every view, desktop and phone, light and dark).
        .env("TPSMETER_ARTIFACTS", root.join("target").join("artifacts"))
        .env("TPSMETER_EMULATOR_BIN", built.emulator)
        .env("TPSMETER_CLI_BIN", built.cli)
        .env("TMPDIR", tmp.path());
    // The OTLP receiver's protobuf types (seconds, and nothing when cached).
    assets::otlp_proto()?;
    for (k, v) in assets::asset_env() {
        node.env(k, v);
    }
    if require_assets {
        node.env("TPSMETER_REQUIRE_ASSETS", "1");
    }
    sh::run(&mut node)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn bin(name: &str) -> TestBinary {
        TestBinary {
            name: name.into(),
            kind: "test".into(),
            dir: PathBuf::from("/w/crates/tpsmeter-gpu"),
            path: PathBuf::from(format!("/t/{name}.wasm")),
            args: Vec::new(),
        }
    }

    #[test]
    fn a_long_test_runs_alone_first_and_its_binary_without_it() {
        let jobs = browser_jobs(vec![bin("kernel_ops"), bin("kernel_matvec")]).unwrap();
        let (binary, test) = LONG_BROWSER_TESTS[0];
        let shown: Vec<(&str, Vec<&str>)> = jobs
            .iter()
            .map(|j| (j.name.as_str(), j.args.iter().map(String::as_str).collect()))
            .collect();
        assert_eq!(
            shown,
            [
                (format!("{binary} {test}").as_str(), vec![test, "--exact"]),
                (
                    format!("{binary} (the rest)").as_str(),
                    vec!["--skip", test]
                ),
                ("kernel_ops", vec![]),
            ]
        );
        assert!(
            jobs.iter()
                .take(2)
                .all(|j| j.path.ends_with("kernel_matvec.wasm"))
        );
    }

    #[test]
    fn a_long_tests_binary_that_was_not_built_is_an_error() {
        let err = browser_jobs(vec![bin("kernel_ops")]).unwrap_err();
        assert!(err.to_string().contains("kernel_matvec"), "{err}");
    }
}
