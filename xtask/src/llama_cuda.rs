//! llama.cpp's CUDA backend from the same sdist as every other llama.cpp build here, built
//! only where `nvcc` exists (`cargo xtask gpu-report` on a machine with an NVIDIA GPU): the
//! strongest native peer on that GPU.

use crate::assets::{build_llama_bench, cache_dir};
use crate::sh::which;
use anyhow::{Result, bail};
use std::path::PathBuf;

/// Where `llama-bench` of the CUDA build lands.
pub fn bin_dir() -> PathBuf {
    cache_dir().join("llama-cuda").join("bin")
}

/// `nvcc` on PATH, else where the CUDA toolkit installs it by default.
pub fn nvcc() -> Option<PathBuf> {
    // Its full path: CMake is handed the compiler, not a name to look up.
    if let Some(path) = which("nvcc") {
        return Some(path);
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
    build_llama_bench(
        &cache_dir().join("llama-cuda"),
        &[
            format!("-DCMAKE_CUDA_COMPILER={}", nvcc.display()),
            "-DGGML_CUDA=ON".into(),
            "-DCMAKE_CUDA_ARCHITECTURES=native".into(),
        ],
    )?;
    Ok(bin)
}
