//! Each build's glue: wasm-bindgen, then wasm-opt and esbuild in place; and the pending module
//! of a build the demo has not compiled yet.

use super::*;

/// wasm-opt's level. `-O1`, not `-Oz`: rustc has already optimised each build (for size, and
/// the engine's kernels for speed), and what a page downloads is the gzipped file. Measured
/// on the wasm-bindgen output of five of the seven builds (binaryen 132, 2026-12-07), `-O1`
/// gave the smaller gzipped file on every one (benchmark 266,462 → 251,132 B, meter 70,088 → 69,928,
/// WebGPU engine 1,226,564 → 1,182,636, CPU engine 1,027,795 → 988,439) for 5 % more raw
/// bytes, in a quarter of the time (all seven: ~320 → ~83 s of one core; the WebGPU engine's
/// alone 70 → 16 s). Decode in Chromium did not move beyond this host's noise: SmolLM2 on the
/// CPU engine, seven alternating runs of `tests/browser/bench/engines-cpu.mjs 5 chromium`,
/// medians over wllama in the same run: 1 thread `-Oz` 2.63×, `-O1` 2.43×; 2 threads 1.80×
/// and 1.99× (each run's own spread was ±15 %). `-Os` and `-O2` took 8 and 21 % less time
/// than `-Oz`, and were in between on size.
pub(super) const WASM_OPT_LEVEL: &str = "-O1";

/// The wasm features today's rustc output declares (`wasm-opt --print-features` on the
/// wasm-bindgen output; rustc 1.95's defaults for wasm32-unknown-unknown). wasm-opt must be
/// allowed every feature the module uses; it also reads them from the module's
/// `target_features` section, but stating them keeps the result independent of what wasm-opt
/// assumes when that section is missing.
pub(super) const WASM_OPT_FEATURES: &[&str] = &[
    "--enable-bulk-memory",
    "--enable-bulk-memory-opt",
    "--enable-call-indirect-overlong",
    "--enable-multivalue",
    "--enable-mutable-globals",
    "--enable-nontrapping-float-to-int",
    "--enable-reference-types",
    "--enable-sign-ext",
    // The threaded CPU engine: atomics and a shared memory.
    "--enable-threads",
    // The CPU engine's kernels: `simd128` per function, and in the `relaxed` builds relaxed
    // SIMD.
    "--enable-simd",
    "--enable-relaxed-simd",
];

/// The plain build whose API a [`DEFERRED`] variant shares.
pub(super) fn plain_twin(name: &str) -> Option<&str> {
    name.strip_suffix("_relaxed")
}

/// wasm-bindgen, wasm-opt and esbuild on each variant `compiled` holds. wasm-opt takes
/// ~50 s of one core on each engine build (measured on a bare machine): in two lanes,
/// alternating, so both cores work; through `bg` one after the other, since a [`Niced`]
/// runs one command at a time (and at the lowest priority a second lane gains nothing).
/// Returns the files a page downloads.
pub(super) fn glue_all(compiled: &Compiled, bg: Option<&Niced>) -> Result<Vec<PathBuf>> {
    let bindgen = tools::wasm_bindgen();
    let each = |i: usize, name: &str| match compiled.0.get(i) {
        Some(Some(wasm)) => glue(&bindgen, name, wasm, bg),
        _ => Ok(Vec::new()),
    };
    let shipped = if bg.is_some() {
        VARIANTS
            .iter()
            .enumerate()
            .map(|(i, (name, _))| each(i, name))
            .collect::<Result<Vec<_>>>()?
    } else {
        in_two_lanes(|i, _| i % 2 == 1, |i, name, _| each(i, name))?
    };
    Ok(shipped.into_iter().flatten().collect())
}

/// The module of a [`DEFERRED`] variant that is not built yet, in `wasm_dir` beside its
/// plain twin's glue: it throws as it is evaluated, naming the build, so the wrapper's dynamic
/// import rejects before anything fetches the `.wasm` it has not got, and the engine's
/// Worker falls back to the twin (saying why in `info.simdWhy`). Its exports are the twin's,
/// re-exported, and an init that rejects as well, so bundlers find every name the package's
/// wrapper imports. Its declarations are the twin's (wasm-bindgen emits the same for both).
pub(super) fn pending_glue(wasm_dir: &Path, name: &str) -> Result<()> {
    let twin = plain_twin(name).with_context(|| format!("{name} has no plain twin"))?;
    let declarations = std::fs::read_to_string(wasm_dir.join(format!("{twin}.d.ts")))
        .with_context(|| format!("{twin} must be built before {name}'s pending module"))?;
    std::fs::write(wasm_dir.join(format!("{name}.d.ts")), declarations)?;
    let why = format!(
        "{name} is not built yet (`cargo xtask demo` compiles it after the page is up, then \
         rebuilds the site: reload the page when it says so)"
    );
    let js = format!(
        "// Pending: written by `cargo xtask demo` until {name} is compiled.\n\
         export * from './{twin}.js';\n\
         export default async function init() {{ throw new Error({why:?}); }}\n\
         export function initSync() {{ throw new Error({why:?}); }}\n\
         throw new Error({why:?});\n"
    );
    std::fs::write(wasm_dir.join(format!("{name}.js")), js)?;
    Ok(())
}

/// wasm-bindgen on one variant's `wasm` into `pkg/wasm/`, then `wasm-opt` ([`WASM_OPT_LEVEL`]) and
/// `esbuild --minify` on its output. Returns the two files a page downloads.
pub(super) fn glue(
    bindgen: &Path,
    out_name: &str,
    wasm: &Path,
    bg: Option<&Niced>,
) -> Result<Vec<PathBuf>> {
    let pkg = repo_root().join("pkg");
    run_on(
        Command::new(bindgen)
            .args(["--target", "web", "--out-dir"])
            .arg(pkg.join("wasm"))
            .args(["--out-name", out_name])
            .arg(wasm),
        bg,
    )?;
    let glue_wasm = pkg.join("wasm").join(format!("{out_name}_bg.wasm"));
    let before = file_len(&glue_wasm)?;
    run_on(
        Command::new(pkg.join("node_modules/.bin/wasm-opt"))
            .arg(WASM_OPT_LEVEL)
            .args(WASM_OPT_FEATURES)
            .arg(&glue_wasm)
            .arg("-o")
            .arg(&glue_wasm),
        bg,
    )?;
    eprintln!(
        "wasm-opt {WASM_OPT_LEVEL} {out_name}: {} -> {} bytes",
        before,
        file_len(&glue_wasm)?
    );
    // The generated glue is minified (esbuild, as Vite would): it is code nobody reads (its
    // types and docs are in the `.d.ts` beside it), and pages that load it without a
    // bundler, the real-user meter's lazy load above all, download half the bytes.
    let glue_js = pkg.join("wasm").join(format!("{out_name}.js"));
    let before = file_len(&glue_js)?;
    run_on(
        Command::new(pkg.join("node_modules/.bin/esbuild"))
            .arg(&glue_js)
            .args([
                "--minify",
                "--format=esm",
                "--allow-overwrite",
                "--log-level=warning",
            ])
            .arg(format!("--outfile={}", glue_js.display())),
        bg,
    )?;
    eprintln!(
        "esbuild --minify {out_name}.js: {} -> {} bytes",
        before,
        file_len(&glue_js)?
    );
    disposable_lib(&pkg.join("wasm").join(format!("{out_name}.d.ts")))?;
    Ok(vec![glue_wasm, glue_js])
}

pub(super) fn file_len(path: &Path) -> Result<u64> {
    Ok(std::fs::metadata(path)
        .with_context(|| format!("stat {}", path.display()))?
        .len())
}
