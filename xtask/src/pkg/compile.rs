//! The package's wasm builds: the variants, their cargo invocations and target directories,
//! and the two lanes they run in.

use super::*;

pub(super) const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// The wasm builds: (wasm-bindgen out-name, cargo feature arguments), all in the
/// `wasm-release` profile.
pub(super) const VARIANTS: &[(&str, &[&str])] = &[
    ("tpsmeter_wasm", &[]),
    // The real-user meter's parsers (`tpsmeter/meter`, loaded after a stream), one per wire
    // family: an app's users download its API's adapter alone. After the first, each is
    // tpsmeter-wasm and a link (~1 s): tpsmeter-core's build is the same for all seven.
    (
        "tpsmeter_meter_openai_chat",
        &["--no-default-features", "--features", "meter-openai-chat"],
    ),
    (
        "tpsmeter_meter_openai_completions",
        &[
            "--no-default-features",
            "--features",
            "meter-openai-completions",
        ],
    ),
    (
        "tpsmeter_meter_openai_responses",
        &[
            "--no-default-features",
            "--features",
            "meter-openai-responses",
        ],
    ),
    (
        "tpsmeter_meter_anthropic",
        &["--no-default-features", "--features", "meter-anthropic"],
    ),
    (
        "tpsmeter_meter_gemini",
        &["--no-default-features", "--features", "meter-gemini"],
    ),
    (
        "tpsmeter_meter_ollama",
        &["--no-default-features", "--features", "meter-ollama"],
    ),
    (
        "tpsmeter_meter_vercel_ui",
        &["--no-default-features", "--features", "meter-vercel-ui"],
    ),
    // `bench({ tokenizer })`'s token counter: the model floor's tokenizer (GGUF header or
    // tokenizer.json) without an engine, loaded only when a run names a tokenizer.
    (
        "tpsmeter_tokenizer",
        &["--no-default-features", "--features", "tokenizer"],
    ),
    // The local engine (`tpsmeter/engine`, loaded in its Worker): wgpu, the tokenizer and the
    // chat template engine, without the benchmark's load driver.
    (
        "tpsmeter_engine",
        &["--no-default-features", "--features", "gpu"],
    ),
    // The same engine on the CPU (wasm SIMD kernels), loaded only where WebGPU is missing or
    // a software rasteriser: people with a GPU never download it.
    (
        "tpsmeter_engine_cpu",
        &["--no-default-features", "--features", "cpu"],
    ),
    // The CPU engine on wasm threads (shared memory), loaded instead of the one above where
    // the page is cross-origin isolated and more than one thread is wanted.
    (
        "tpsmeter_engine_cpu_mt",
        &["--no-default-features", "--features", "threads"],
    ),
    // The two CPU builds again with relaxed SIMD's 8-bit dot in the Q4 kernels, loaded
    // instead where the browser validates a relaxed-SIMD module (Chrome 114+; Firefox and
    // Safari refuse such a module whole, so the plain builds stay).
    (
        "tpsmeter_engine_cpu_relaxed",
        &["--no-default-features", "--features", "cpu,relaxed"],
    ),
    (
        "tpsmeter_engine_cpu_mt_relaxed",
        &["--no-default-features", "--features", "threads,relaxed"],
    ),
];

/// The variants built with atomics and a std of their own ([`THREADS_RUSTFLAGS`]).
pub(super) const THREADS_VARIANTS: &[&str] =
    &["tpsmeter_engine_cpu_mt", "tpsmeter_engine_cpu_mt_relaxed"];

/// The threaded build's flags. `atomics` needs a std compiled with it, which
/// `-Z build-std` makes from the toolchain's `rust-src` (`cargo xtask setup` adds it):
/// `RUSTC_BOOTSTRAP=1` unlocks that flag on the stable toolchain, so the build is pinned to the
/// toolchain everything else uses and needs no nightly (CI machines have only stable). The
/// link arguments are those of a threaded wasm-bindgen module: an imported, shared memory
/// (4 GiB at most, wasm32's limit: a page's model lives in it) and the thread-local storage
/// exports wasm-bindgen's thread set-up calls.
pub(super) const THREADS_RUSTFLAGS: &str = "-C target-feature=+atomics,+bulk-memory,+mutable-globals \
    -C link-arg=--shared-memory -C link-arg=--import-memory \
    -C link-arg=--max-memory=4294967296 \
    -C link-arg=--export=__wasm_init_tls -C link-arg=--export=__tls_size \
    -C link-arg=--export=__tls_align -C link-arg=--export=__tls_base";

/// Whether variant `name` builds in the threaded lane: the two threaded ones build in a
/// target directory of their own (other flags, a std of their own), beside the others,
/// and each `wasm-release` build ends in a fat LTO on one codegen unit, one core for a minute
/// while the other idles.
pub(super) fn threaded(_: usize, name: &str) -> bool {
    THREADS_VARIANTS.contains(&name)
}

/// `each(index, name, features)` on every variant in two threads, those for which
/// `second(index, name)` holds in the second. Results in [`VARIANTS`]' order.
pub(super) fn in_two_lanes<T: Send>(
    second: fn(usize, &str) -> bool,
    each: impl Fn(usize, &'static str, &'static [&'static str]) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let lane = |which: bool| -> Result<Vec<(usize, T)>> {
        VARIANTS
            .iter()
            .enumerate()
            .filter(|(i, (name, _))| second(*i, name) == which)
            .map(|(i, (name, features))| Ok((i, each(i, name, features)?)))
            .collect()
    };
    let (first, other) = std::thread::scope(|scope| {
        let other = scope.spawn(|| lane(true));
        let first = lane(false);
        let other = other
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("a build lane's thread panicked")));
        (first, other)
    });
    let mut all: Vec<(usize, T)> = first?.into_iter().chain(other?).collect();
    all.sort_by_key(|(i, _)| *i);
    Ok(all.into_iter().map(|(_, t)| t).collect())
}

/// One of [`VARIANTS`] compiled; returns a copy of its `.wasm` under
/// `<target>/pkg-wasm/` (the next variant's build in the same target directory overwrites
/// the original).
pub(super) fn compile(out_name: &str, features: &[&str], bg: Option<&Niced>) -> Result<PathBuf> {
    let root = repo_root();
    let mut build = Command::new(cargo());
    build.current_dir(&root).args([
        "build",
        "--profile",
        "wasm-release",
        "--target",
        WASM_TARGET,
        "-p",
        "tpsmeter-wasm",
    ]);
    build.args(features);
    // Each lane in a target directory of its own. The threaded builds': other flags would
    // rebuild every crate each time. The plain builds': in the workspace's, a native build
    // beside them (the demo's release CLI) waited for the directory's lock through all five
    // (measured on a bare machine: the CLI started compiling 14 minutes in).
    let dir = if THREADS_VARIANTS.contains(&out_name) {
        let dir = target_dir().join("wasm-threads");
        build
            .env("RUSTC_BOOTSTRAP", "1")
            .env("RUSTFLAGS", THREADS_RUSTFLAGS)
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .args(["-Z", "build-std=panic_abort,std"]);
        dir
    } else {
        target_dir().join("wasm-plain")
    };
    build.arg("--target-dir").arg(&dir);
    run_on(&mut build, bg)?;
    let built = dir
        .join(WASM_TARGET)
        .join("wasm-release")
        .join("tpsmeter_wasm.wasm");
    let copies = target_dir().join("pkg-wasm");
    std::fs::create_dir_all(&copies).with_context(|| format!("create {}", copies.display()))?;
    let copy = copies.join(format!("{out_name}.wasm"));
    std::fs::copy(&built, &copy)
        .with_context(|| format!("copy {} to {}", built.display(), copy.display()))?;
    Ok(copy)
}
