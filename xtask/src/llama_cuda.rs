//! llama.cpp's CUDA backend from the same sdist as every other llama.cpp build here, built
//! only where `nvcc` exists (`cargo xtask gpu-report` on a machine with an NVIDIA GPU): the
//! strongest native peer on that GPU.

use crate::assets::{LLAMA_CMAKE_FLAGS, LLAMA_DIR, build_tools, cache_dir};
use crate::sh::{has, run};
use anyhow::{Result, bail};
use std::path::PathBuf;
use std::process::Command;

/// Where `llama-bench` of the CUDA build lands.
pub fn bin_dir() -> PathBuf {
    cache_dir().join("llama-cuda").join("bin")
}

/// `nvcc` on PATH, else where the CUDA toolkit installs it by default.
pub fn nvcc() -> Option<PathBuf> {
    if has("nvcc") {
        return Some(PathBuf::from("nvcc"));
    }
    let default = PathBuf::from("/usr/local/cuda/bin/nvcc");
    default.exists().then_some(default)
}

/// Builds `llama-bench` with `-DGGML_CUDA=ON` (once; cached). For the GPU of this machine
/// only (`CMAKE_CUDA_ARCHITECTURES=native`): the default list of architectures takes many
/// times as long to compile, and the binary is measured here, not shipped.
pub fn build() -> Result<PathBuf> {
    let bin = bin_dir();
    if bin.join("llama-bench").exists() {
        return Ok(bin);
    }
    let Some(nvcc) = nvcc() else {
        bail!("no nvcc (the CUDA toolkit) on this machine");
    };
    let cache = cache_dir();
    let src = cache.join(LLAMA_DIR).join("vendor/llama.cpp");
    anyhow::ensure!(
        src.join("CMakeLists.txt").exists(),
        "llama.cpp's source is not in the cache: run `cargo xtask setup` first"
    );
    let (cmake, ninja) = build_tools()?;
    let build = cache.join("llama-cuda");
    run(Command::new(&cmake)
        .arg("-S")
        .arg(&src)
        .arg("-B")
        .arg(&build)
        .args(["-G", "Ninja"])
        .arg(format!("-DCMAKE_MAKE_PROGRAM={}", ninja.display()))
        .arg(format!("-DCMAKE_CUDA_COMPILER={}", nvcc.display()))
        .args(LLAMA_CMAKE_FLAGS)
        .args(["-DGGML_CUDA=ON", "-DCMAKE_CUDA_ARCHITECTURES=native"]))?;
    run(Command::new(&cmake)
        .arg("--build")
        .arg(&build)
        .args(["--target", "llama-bench"]))?;
    Ok(bin)
}
