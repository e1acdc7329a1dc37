//! `cargo xtask llama-vulkan`: llama.cpp's Vulkan backend, built for the engine benchmark's
//! second peer (llama.cpp on the same Vulkan adapter as our engine; lavapipe here). Not part
//! of `setup` or CI: it takes about half an hour on two cores and is only needed for figures.
//!
//! Debian bookworm's Vulkan headers (1.3.239) predate `VK_EXT_layer_settings`, which this
//! llama.cpp needs, so the newer headers of Debian trixie's `libvulkan-dev` are unpacked into
//! the cache (headers only: the system loader stays) and handed to CMake.

use crate::assets::{apt_install, build_llama_bench, cache_dir};
use crate::sh::run;
use anyhow::Result;
use std::path::PathBuf;
use std::process::Command;

/// trixie's libvulkan-dev, which carries Vulkan-Headers 1.4.309 (vulkan.hpp included).
const HEADERS_DEB: &str =
    "http://deb.debian.org/debian/pool/main/v/vulkan-loader/libvulkan-dev_1.4.309.0-1_amd64.deb";

/// Where `llama-bench` of the Vulkan build lands.
pub fn bin_dir() -> PathBuf {
    cache_dir().join("llama-vulkan").join("bin")
}

pub fn build() -> Result<()> {
    if bin_dir().join("llama-bench").exists() {
        println!("export TPSMETER_LLAMA_VULKAN_BIN={}", bin_dir().display());
        return Ok(());
    }
    // glslc compiles llama.cpp's shaders; libvulkan-dev provides the loader to link against;
    // spirv-headers carries the CMake package `find_package(SPIRV-Headers)` asks for (without
    // it, this llama.cpp's configure step fails).
    apt_install(&["glslc", "libvulkan-dev", "spirv-headers", "curl"])?;
    let cache = cache_dir();
    let headers = cache.join("vulkan-headers");
    let include = headers.join("usr/include");
    if !include.join("vulkan/vulkan.hpp").exists() {
        let deb = cache.join("libvulkan-dev-trixie.deb");
        run(Command::new("curl")
            .args(["-fsSL", "--retry", "3", "-o"])
            .arg(&deb)
            .arg(HEADERS_DEB))?;
        run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&headers))?;
    }
    build_llama_bench(
        &cache.join("llama-vulkan"),
        &[
            format!("-DVulkan_INCLUDE_DIR={}", include.display()),
            "-DGGML_VULKAN=ON".into(),
        ],
    )?;
    println!("export TPSMETER_LLAMA_VULKAN_BIN={}", bin_dir().display());
    Ok(())
}
