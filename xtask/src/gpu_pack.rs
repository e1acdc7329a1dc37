//! `cargo xtask gpu-pack [--out DIR] [--check]`: one folder that measures our engine and
//! llama.cpp on a bare NVIDIA machine with no network, started with one command.
//!
//! The machines this project can borrow (an H100 or H200) have CUDA, CMake, ninja and
//! Python 3, but no network, no Rust, Node, Chromium or Vulkan loader, take at most 64 MiB of
//! files per run and about 10 minutes per run. So the pack carries:
//!
//! - `bin/tpsmeter.xz`: the release CLI, stripped and xz-compressed (Python's `lzma` opens it
//!   there); it writes the synthetic models (`tpsmeter synthetic`) and runs them;
//! - `lib/libvulkan.so.1`: Debian's Vulkan loader (`libvulkan1`), used where the machine has
//!   none; the NVIDIA driver's ICD is found at its image's path;
//! - `src/llama.cpp.tar.xz`: llama.cpp's source from the same sdist as every other llama.cpp
//!   build here, pruned to what `llama-bench` with the CPU and CUDA backends needs (no docs,
//!   models, tests, examples or other backends), built there for that GPU's architecture only;
//! - `bin/llama-bench-vulkan.xz`: llama.cpp's Vulkan `llama-bench`, where `cargo xtask
//!   llama-vulkan` built one here (static ggml; it needs the machine's libstdc++);
//! - `run.py` (`xtask/gpu-pack/run.py`), the one command, standard library only;
//!   `README.txt` and `MANIFEST.json` (files, sizes, SHA-256, the commit).
//!
//! Refused above [`LIMIT`] bytes. `--check` proves it offline here: the pack copied into an
//! empty folder and run there (`run.py --quick`) in a network namespace of its own (`unshare
//! -n`), with a `PATH` holding python3 only (no cargo, Node or nvcc), on lavapipe, through
//! the pack's own Vulkan loader; the run must measure our engine (and llama.cpp's Vulkan
//! backend where the pack carries it) and report the CUDA step as skipped.

use crate::assets::{self, LLAMA_DIR, cache_dir};
use crate::sh::{self, repo_root};
use anyhow::{Context, Result, bail, ensure};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The pack's size limit: 56 MiB, leaving room under a run's 64 MiB for results.
pub const LIMIT: u64 = 56 * 1024 * 1024;

/// llama.cpp's top-level entries the pruned source keeps.
const LLAMA_KEEP: &[&str] = &[
    "CMakeLists.txt",
    "LICENSE",
    "cmake",
    "common",
    "ggml",
    "include",
    "licenses",
    "src",
    "vendor",
    "tools/llama-bench",
];

/// ggml backends the pack's build never enables.
const GGML_DROP: &[&str] = &[
    "ggml-blas",
    "ggml-cann",
    "ggml-et",
    "ggml-hexagon",
    "ggml-hip",
    "ggml-metal",
    "ggml-musa",
    "ggml-opencl",
    "ggml-openvino",
    "ggml-rpc",
    "ggml-sycl",
    "ggml-virtgpu",
    "ggml-vulkan",
    "ggml-webgpu",
    "ggml-zdnn",
    "ggml-zendnn",
];

pub fn run(args: &[String]) -> Result<()> {
    let mut out = repo_root().join("target").join("gpu-pack");
    let mut check = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--out" => out = PathBuf::from(it.next().context("--out needs a folder")?),
            "--check" => check = true,
            other => bail!("gpu-pack: unknown flag {other:?} (--out DIR, --check)"),
        }
    }
    let pack = out.join("tpsmeter-gpu-pack");
    build(&pack)?;
    if check {
        check_offline(&pack, &out.join("check"))?;
    }
    Ok(())
}

/// Builds the pack into `pack` (emptied first) and prints its size.
fn build(pack: &Path) -> Result<()> {
    if pack.exists() {
        std::fs::remove_dir_all(pack)?;
    }
    for d in ["bin", "lib", "src"] {
        std::fs::create_dir_all(pack.join(d))?;
    }
    // The CLI, stripped and compressed.
    sh::run(Command::new("cargo").args(["build", "--release", "-p", "tpsmeter-cli"]))?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"));
    pack_binary(
        &target.join("release").join("tpsmeter"),
        &pack.join("bin").join("tpsmeter"),
    )?;

    // llama.cpp's Vulkan llama-bench, where `cargo xtask llama-vulkan` built one here.
    let vulkan = crate::llama_vulkan::bin_dir().join("llama-bench");
    if vulkan.exists() {
        pack_binary(&vulkan, &pack.join("bin").join("llama-bench-vulkan"))?;
    } else {
        println!(
            "gpu-pack: no Vulkan llama-bench in the cache (cargo xtask llama-vulkan): the pack runs llama.cpp's CUDA backend only"
        );
    }

    // The Vulkan loader.
    let loader = vulkan_loader()?;
    std::fs::copy(&loader, pack.join("lib").join("libvulkan.so.1"))?;

    // llama.cpp, pruned.
    llama_source(&pack.join("src").join("llama.cpp.tar.xz"))?;

    let root = repo_root();
    std::fs::copy(root.join("xtask/gpu-pack/run.py"), pack.join("run.py"))?;
    std::fs::copy(
        root.join("xtask/gpu-pack/README.txt"),
        pack.join("README.txt"),
    )?;
    manifest(pack)?;
    let size = dir_size(pack)?;
    println!(
        "gpu-pack: {} ({} bytes, {:.1} MiB of the {} MiB limit)",
        pack.display(),
        size,
        size as f64 / 1048576.0,
        LIMIT / 1048576
    );
    for entry in walk(pack)? {
        let len = std::fs::metadata(&entry)?.len();
        println!(
            "  {:>10}  {}",
            len,
            entry.strip_prefix(pack).unwrap_or(&entry).display()
        );
    }
    ensure!(
        size <= LIMIT,
        "the pack is {size} bytes, over the limit of {LIMIT}"
    );
    Ok(())
}

/// `binary`, stripped, as `to.xz` (Python's `lzma` opens it on the machine).
fn pack_binary(binary: &Path, to: &Path) -> Result<()> {
    sh::run(
        Command::new("strip")
            .arg("--strip-all")
            .arg("-o")
            .arg(to)
            .arg(binary),
    )?;
    sh::run(Command::new("xz").args(["-9e", "-T0", "-f"]).arg(to))
}

/// Debian's `libvulkan.so.1` (the `libvulkan1` package), downloaded once into the cache.
fn vulkan_loader() -> Result<PathBuf> {
    let dir = cache_dir().join("gpu-pack").join("libvulkan1");
    let lib = dir.join("libvulkan.so.1");
    if lib.exists() {
        return Ok(lib);
    }
    let debs = dir.join("deb");
    std::fs::create_dir_all(&debs)?;
    sh::run(
        Command::new("apt-get")
            .current_dir(&debs)
            .args(["download", "libvulkan1"]),
    )?;
    let deb = std::fs::read_dir(&debs)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|e| e == "deb"))
        .context("apt-get download libvulkan1 left no .deb")?;
    let root = dir.join("root");
    sh::run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&root))?;
    let found = walk(&root)?
        .into_iter()
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("libvulkan.so.1."))
        })
        .context("no libvulkan.so.1.* in the libvulkan1 package")?;
    std::fs::copy(found, &lib)?;
    Ok(lib)
}

/// llama.cpp's source from the cached sdist, pruned ([`LLAMA_KEEP`], [`GGML_DROP`]), its
/// tools list cut to `llama-bench`, as a tar.xz at `out`.
fn llama_source(out: &Path) -> Result<()> {
    let src = cache_dir().join(LLAMA_DIR).join("vendor/llama.cpp");
    if !src.join("CMakeLists.txt").exists() {
        assets::setup_all(false)?;
    }
    let stage = out.with_extension("stage");
    if stage.exists() {
        std::fs::remove_dir_all(&stage)?;
    }
    let top = stage.join("llama.cpp");
    for keep in LLAMA_KEEP {
        let to = top.join(keep);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        sh::run(Command::new("cp").arg("-a").arg(src.join(keep)).arg(&to))?;
    }
    for drop in GGML_DROP {
        let d = top.join("ggml/src").join(drop);
        if d.exists() {
            std::fs::remove_dir_all(d)?;
        }
    }
    std::fs::write(
        top.join("tools/CMakeLists.txt"),
        "# tpsmeter's GPU pack: llama-bench only (the other tools are not in the pack).\n\
         find_package(Threads REQUIRED)\n\
         llama_add_compile_flags()\n\
         add_subdirectory(llama-bench)\n",
    )?;
    sh::run(
        Command::new("tar")
            .env("XZ_OPT", "-9 -T0")
            .arg("-C")
            .arg(&stage)
            .arg("-cJf")
            .arg(out)
            .arg("llama.cpp"),
    )?;
    std::fs::remove_dir_all(&stage)?;
    Ok(())
}

/// `MANIFEST.json`: every file's size and SHA-256, the commit and the date.
fn manifest(pack: &Path) -> Result<()> {
    let mut files = serde_json::Map::new();
    for f in walk(pack)? {
        let out = Command::new("sha256sum").arg(&f).output()?;
        let sum = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned();
        let rel = f.strip_prefix(pack)?.display().to_string();
        files.insert(
            rel,
            serde_json::json!({ "bytes": std::fs::metadata(&f)?.len(), "sha256": sum }),
        );
    }
    let commit = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(repo_root())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let doc = serde_json::json!({ "commit": commit, "llama_cpp": LLAMA_DIR, "files": files });
    std::fs::write(
        pack.join("MANIFEST.json"),
        serde_json::to_string_pretty(&doc)?,
    )?;
    Ok(())
}

/// Runs the pack offline here and checks what it reports.
fn check_offline(pack: &Path, dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir)?;
    let copy = dir.join("pack");
    sh::run(Command::new("cp").arg("-a").arg(pack).arg(&copy))?;
    // A PATH with python3 alone: the interpreter itself, not a version manager's shim.
    let py = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()?;
    let python = PathBuf::from(String::from_utf8_lossy(&py.stdout).trim());
    let bin = dir.join("path");
    std::fs::create_dir_all(&bin)?;
    std::os::unix::fs::symlink(&python, bin.join("python3"))?;
    let results = dir.join("results");
    let t0 = std::time::Instant::now();
    let status = Command::new("unshare")
        .arg("-n")
        .arg("env")
        .arg("-i")
        .arg(format!("PATH={}", bin.display()))
        .arg(format!("HOME={}", dir.display()))
        .arg("python3")
        .arg(copy.join("run.py"))
        .arg("--quick")
        .arg("--pack-loader")
        .arg("--out")
        .arg(&results)
        .status()
        .context("unshare -n (needs root or user namespaces)")?;
    let secs = t0.elapsed().as_secs_f64();
    let doc: serde_json::Value = serde_json::from_slice(
        &std::fs::read(results.join("results.json")).context("the run wrote no results.json")?,
    )?;
    ensure!(status.success(), "the offline run failed ({status})");
    let steps = doc["steps"].as_array().cloned().unwrap_or_default();
    let status = |name: &str| -> String {
        steps
            .iter()
            .find(|s| s["step"] == name)
            .and_then(|s| s["status"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    let cuda = status("llama.cpp CUDA");
    ensure!(
        cuda.starts_with("skipped"),
        "the CUDA step should be skipped here: {cuda:?}"
    );
    // The pack's own Vulkan loader ran our engine (the machine's is not used).
    let loader = doc["machine"]["vulkan_loader"].as_str().unwrap_or_default();
    ensure!(loader.starts_with("the pack's"), "loader: {loader:?}");
    if pack.join("bin/llama-bench-vulkan.xz").exists() {
        let vk = status("llama.cpp Vulkan");
        ensure!(
            !vk.starts_with("failed") && !vk.starts_with("skipped"),
            "llama.cpp Vulkan: {vk}"
        );
    }
    let ours = doc["ours"].as_object().cloned().unwrap_or_default();
    ensure!(!ours.is_empty(), "the offline run measured no model");
    for (model, r) in &ours {
        let tps = r["contexts"]["64"]["decode_tps"].as_f64().unwrap_or(0.0);
        ensure!(tps > 0.0, "{model}: no decode rate");
    }
    println!(
        "gpu-pack --check: offline run passed in {secs:.0} s (no network, PATH with python3 only); CUDA: {cuda}"
    );
    for s in &steps {
        println!(
            "  {:<22} {:>7} s  {}",
            s["step"].as_str().unwrap_or(""),
            s["seconds"],
            s["status"].as_str().unwrap_or("")
        );
    }
    Ok(())
}

fn walk(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let p = e?.path();
            let meta = std::fs::symlink_metadata(&p)?;
            if meta.is_dir() {
                stack.push(p);
            } else if meta.is_file() {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn dir_size(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for f in walk(dir)? {
        total += std::fs::metadata(f)?.len();
    }
    Ok(total)
}
