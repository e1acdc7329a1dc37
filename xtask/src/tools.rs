//! The browser tool chain: Debian's Chromium and its WebDriver, the `wasm-bindgen` CLI at the
//! lock's version, and npm with its cache. Everything lands in the cache directory (or in the
//! system through apt), never in the repository; no tool downloads a browser or binary of its
//! own.

use crate::assets::{apt_install, cache_dir};
use crate::sh::{repo_root, run};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Debian's Chromium and the chromedriver built from the same sources (versions always match).
pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
pub const CHROMIUM_PACKAGES: &[&str] = &["chromium", "chromium-driver"];

/// Debian's Firefox ESR (driven over WebDriver BiDi by puppeteer-core), WebKitGTK's
/// WebDriver with its MiniBrowser, and Xvfb for MiniBrowser's window: the other two engines
/// of the cross-engine tests. Debian packages no geckodriver; puppeteer-core speaks BiDi to
/// Firefox itself.
pub const FIREFOX: &str = "/usr/bin/firefox-esr";
pub const WEBKIT_DRIVER: &str = "/usr/bin/WebKitWebDriver";
pub const ENGINE_PACKAGES: &[&str] = &["firefox-esr", "webkit2gtk-driver", "xvfb"];

/// Installs the browser tool chain (part of `setup`): Chromium, and with `engines` Firefox
/// and WebKitGTK too (the tests need them; the demo does not).
pub fn setup(engines: bool) -> Result<()> {
    if engines {
        apt_install(&[CHROMIUM_PACKAGES, ENGINE_PACKAGES].concat())?;
    } else {
        apt_install(CHROMIUM_PACKAGES)?;
    }
    wasm_bindgen_cli(None)
}

/// Where `cargo install --root` puts the CLIs.
pub fn tools_bin() -> PathBuf {
    cache_dir().join("tools").join("bin")
}

pub fn wasm_bindgen() -> PathBuf {
    tools_bin().join("wasm-bindgen")
}

pub fn wasm_bindgen_test_runner() -> PathBuf {
    tools_bin().join("wasm-bindgen-test-runner")
}

/// The `wasm-bindgen` version in Cargo.lock: the CLI must be exactly this version, or the glue
/// it generates does not match the crate's schema and it refuses to run.
pub fn locked_wasm_bindgen_version() -> Result<String> {
    let lock = repo_root().join("Cargo.lock");
    let text =
        std::fs::read_to_string(&lock).with_context(|| format!("read {}", lock.display()))?;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line == "name = \"wasm-bindgen\""
            && let Some(v) = lines
                .next()
                .and_then(|l| l.strip_prefix("version = \""))
                .and_then(|l| l.strip_suffix('"'))
        {
            return Ok(v.to_string());
        }
    }
    bail!("no wasm-bindgen package in {}", lock.display())
}

/// `wasm-bindgen-cli` (`wasm-bindgen` and `wasm-bindgen-test-runner`) at the lock's version,
/// built once into the cache (about 2 minutes on two cores); through `bg` (niced, logged)
/// when given.
pub fn wasm_bindgen_cli(bg: Option<&crate::background::Niced>) -> Result<()> {
    let want = locked_wasm_bindgen_version()?;
    let installed = Command::new(wasm_bindgen())
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    // `wasm-bindgen 0.2.130` (sometimes followed by a commit hash).
    if installed.is_some_and(|v| v.split_whitespace().nth(1) == Some(want.as_str()))
        && wasm_bindgen_test_runner().exists()
    {
        return Ok(());
    }
    // Not `--locked`: the CLI's own lock pins versions that no longer build with today's
    // compiler; the version of the CLI itself is what must match.
    let mut install = Command::new(cargo());
    // Its own temporary target directory: in the workspace's, it would wait for the lock of
    // whatever cargo builds beside it (CI runs it in the background).
    // Without its default `rustls-tls`: its test runner speaks plain HTTP to the local
    // WebDriver, and nothing here fetches over TLS, so rustls and ring were ~35 of its 318
    // compile-unit seconds (measured alone: 163 s wall on two cores) for nothing.
    install
        .env_remove("CARGO_TARGET_DIR")
        .args([
            "install",
            "wasm-bindgen-cli",
            "--no-default-features",
            "--force",
        ])
        .arg("--version")
        .arg(&want)
        .arg("--root")
        .arg(cache_dir().join("tools"));
    crate::background::run_on(&mut install, bg)
}

pub fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// The directory cargo builds into (`CARGO_TARGET_DIR`, else `target/` in the repo).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| {
            if p.is_relative() {
                repo_root().join(p)
            } else {
                p
            }
        })
        .unwrap_or_else(|| repo_root().join("target"))
}

/// `npm <args>` in `dir`, with its download cache in the cache directory, no audit or funding
/// requests (registry traffic CI does not need), and Playwright and Puppeteer told never to fetch a browser
/// (the tests drive Debian's Chromium; `playwright-core` has no download step, but a package
/// that pulls in `playwright` would).
pub fn npm(dir: &Path) -> Command {
    let mut cmd = Command::new("npm");
    cmd.current_dir(dir)
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        .env("PUPPETEER_SKIP_DOWNLOAD", "1")
        .arg("--cache")
        .arg(cache_dir().join("npm"))
        .args(["--no-audit", "--no-fund", "--prefer-offline"]);
    cmd
}

/// `npm ci` when the directory has a lock file, else `npm install` (which writes one).
pub fn npm_install(dir: &Path) -> Result<()> {
    let verb = if dir.join("package-lock.json").exists() {
        "ci"
    } else {
        "install"
    };
    run(npm(dir).arg(verb))
}
