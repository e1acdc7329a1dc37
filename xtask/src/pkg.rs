//! `cargo xtask pkg`: the npm package, built from scratch.
//!
//! 1. `npm ci` in `pkg/` (TypeScript, esbuild and binaryen's `wasm-opt` come from npm,
//!    binaryen because Debian's is too old for what rustc emits);
//! 2. `tpsmeter-wasm` for wasm32 in the `wasm-release` profile, once per [`VARIANTS`]: the
//!    benchmark build (default features), the real-user meter's lazy parser
//!    (`--no-default-features`: `Exchange` only, about half the size, because apps load it on
//!    their users' pages), and the local engine on WebGPU and on the CPU; the two threaded
//!    builds beside the other five (a target directory of their own);
//! 3. each build through `wasm-bindgen --target web` into `pkg/wasm/` (`tpsmeter_wasm*`,
//!    `tpsmeter_meter*`, `tpsmeter_engine*`; the package's `raw*` modules wrap them);
//! 4. `wasm-opt -O1` on the glue's `.wasm` ([`WASM_OPT_LEVEL`]) and `esbuild --minify` on its
//!    `.js`, in place;
//! 5. the report's and the run spec's TypeScript types, generated from
//!    `crates/tpsmeter-core/report.schema.json` and `spec.schema.json` into
//!    `pkg/src/generated/` (`pkg/scripts/report-types.mjs`);
//! 6. `npm run build` (tsc into `pkg/dist/`), and the two JSON Schemas into `pkg/schema/`;
//! 7. `npm pack` into `target/npm/` under the repository root.
//!
//! Prints the tarball's path and the gzipped sizes of what a page downloads: the `.wasm`,
//! its wasm-bindgen glue and each `dist/*.js` entry.

use crate::background::{Niced, run_on};
use crate::sh::repo_root;
use crate::tools::{self, cargo, npm, npm_install, target_dir};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// The wasm builds: (wasm-bindgen out-name, cargo feature arguments), all in the
/// `wasm-release` profile.
const VARIANTS: &[(&str, &[&str])] = &[
    ("tpsmeter_wasm", &[]),
    ("tpsmeter_meter", &["--no-default-features"]),
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
const THREADS_VARIANTS: &[&str] = &["tpsmeter_engine_cpu_mt", "tpsmeter_engine_cpu_mt_relaxed"];

/// The threaded build's flags. `atomics` needs a std compiled with it, which
/// `-Z build-std` makes from the toolchain's `rust-src` (`cargo xtask setup` adds it):
/// `RUSTC_BOOTSTRAP=1` unlocks that flag on the stable toolchain, so the build is pinned to the
/// toolchain everything else uses and needs no nightly (CI machines have only stable). The
/// link arguments are those of a threaded wasm-bindgen module: an imported, shared memory
/// (4 GiB at most, wasm32's limit: a page's model lives in it) and the thread-local storage
/// exports wasm-bindgen's thread set-up calls.
const THREADS_RUSTFLAGS: &str = "-C target-feature=+atomics,+bulk-memory,+mutable-globals \
    -C link-arg=--shared-memory -C link-arg=--import-memory \
    -C link-arg=--max-memory=4294967296 \
    -C link-arg=--export=__wasm_init_tls -C link-arg=--export=__tls_size \
    -C link-arg=--export=__tls_align -C link-arg=--export=__tls_base";

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
const WASM_OPT_LEVEL: &str = "-O1";

/// The wasm features today's rustc output declares (`wasm-opt --print-features` on the
/// wasm-bindgen output; rustc 1.95's defaults for wasm32-unknown-unknown). wasm-opt must be
/// allowed every feature the module uses; it also reads them from the module's
/// `target_features` section, but stating them keeps the result independent of what wasm-opt
/// assumes when that section is missing.
const WASM_OPT_FEATURES: &[&str] = &[
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

pub fn run_pkg() -> Result<()> {
    let _lock = crate::sh::exclusive("pkg-build")?;
    build().map(drop)
}

/// Builds the package and returns the path of the packed `.tgz`.
pub fn build() -> Result<PathBuf> {
    let pkg = clean()?;
    let bindgen = tools::wasm_bindgen();
    if !bindgen.exists() {
        bail!("{} is missing: run `cargo xtask setup`", bindgen.display());
    }
    // Before the builds: the wasm-opt and esbuild that finish each variant come from npm, so
    // each variant is finished as soon as it is built, beside the next one's build.
    npm_install(&pkg)?;
    let shipped = in_two_lanes(threaded, |_, name, features| {
        let wasm = compile(name, features, None)?;
        glue(&bindgen, name, &wasm, None)
    })?;
    pack(shipped.into_iter().flatten().collect(), None)
}

/// The variants `cargo xtask demo` compiles after it has printed the page's URL: the
/// relaxed-SIMD twins of the two CPU builds. A browser without them runs the plain twin
/// (the same results, slower Q4 kernels): the engine's Worker falls back when a relaxed build
/// does not load. Their API is their plain twin's, so until they are built the package is
/// type-checked with the twin's declarations ([`pending_glue`]). On a bare 2-core machine
/// they were ~1.5 min of one lane each, and their `wasm-opt` ~40 s more.
pub const DEFERRED: &[&str] = &[
    "tpsmeter_engine_cpu_relaxed",
    "tpsmeter_engine_cpu_mt_relaxed",
];

/// The plain build whose API a [`DEFERRED`] variant shares.
fn plain_twin(name: &str) -> Option<&str> {
    name.strip_suffix("_relaxed")
}

/// Some variants' wasm compiled (cargo alone: no wasm-bindgen CLI, no npm), in
/// [`VARIANTS`]' order, `None` where a variant was not: what `cargo xtask demo` runs beside
/// its other first-run builds ([`compile_first`], then [`compile_deferred`]).
#[derive(Debug)]
pub struct Compiled(Vec<Option<PathBuf>>);

/// Empties the package's generated directories and compiles every variant but the
/// [`DEFERRED`] ones.
pub fn compile_first() -> Result<Compiled> {
    clean()?;
    in_two_lanes(threaded, |_, name, features| {
        (!DEFERRED.contains(&name))
            .then(|| compile(name, features, None))
            .transpose()
    })
    .map(Compiled)
}

/// The [`DEFERRED`] variants compiled, one after the other (after the first stage their
/// target directories hold every dependency: each is our two crates and a link).
pub fn compile_deferred(bg: Option<&Niced>) -> Result<Compiled> {
    VARIANTS
        .iter()
        .map(|(name, features)| {
            DEFERRED
                .contains(name)
                .then(|| compile(name, features, bg))
                .transpose()
        })
        .collect::<Result<_>>()
        .map(Compiled)
}

/// The package from [`compile_first`]'s output, for a page served before the deferred
/// builds exist: wasm-bindgen, wasm-opt and esbuild on each variant compiled, a pending
/// module for each other ([`pending_glue`]), then TypeScript. Not packed: a tarball is only
/// ever made of every build ([`finish_deferred`]).
pub fn finish_first(compiled: &Compiled) -> Result<()> {
    let pkg = repo_root().join("pkg");
    npm_install(&pkg)?;
    glue_all(compiled, None)?;
    for (i, (name, _)) in VARIANTS.iter().enumerate() {
        if compiled.0.get(i).is_none_or(Option::is_none) {
            pending_glue(&pkg.join("wasm"), name)?;
        }
    }
    typescript(&repo_root(), &pkg, None)
}

/// The whole package once the deferred builds are compiled ([`compile_deferred`]): their
/// glue replaces the pending modules, then TypeScript again and `npm pack`. Returns the
/// tarball's path.
pub fn finish_deferred(deferred: &Compiled, bg: Option<&Niced>) -> Result<PathBuf> {
    glue_all(deferred, bg)?;
    let wasm = repo_root().join("pkg").join("wasm");
    let mut shipped = Vec::new();
    for (name, _) in VARIANTS {
        for file in [format!("{name}_bg.wasm"), format!("{name}.js")] {
            let path = wasm.join(file);
            if !path.exists() {
                bail!("{} is missing: {name} was never built", path.display());
            }
            shipped.push(path);
        }
    }
    pack(shipped, bg)
}

/// wasm-bindgen, wasm-opt and esbuild on each variant `compiled` holds. wasm-opt takes
/// ~50 s of one core on each engine build (measured on a bare machine): in two lanes,
/// alternating, so both cores work; through `bg` one after the other, since a [`Niced`]
/// runs one command at a time (and at the lowest priority a second lane gains nothing).
/// Returns the files a page downloads.
fn glue_all(compiled: &Compiled, bg: Option<&Niced>) -> Result<Vec<PathBuf>> {
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
fn pending_glue(wasm_dir: &Path, name: &str) -> Result<()> {
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

/// `pkg/` with nothing generated by an earlier run left in it (it could end up in the
/// tarball).
fn clean() -> Result<PathBuf> {
    let pkg = repo_root().join("pkg");
    if !pkg.join("package.json").exists() {
        bail!("{} does not exist yet", pkg.join("package.json").display());
    }
    for dir in ["wasm", "dist", "schema", "src/generated"] {
        remove_dir(&pkg.join(dir))?;
    }
    Ok(pkg)
}

/// Whether variant `name` builds in the threaded lane: the two threaded ones build in a
/// target directory of their own (other flags, a std of their own), beside the other five,
/// and each `wasm-release` build ends in a fat LTO on one codegen unit, one core for a minute
/// while the other idles.
fn threaded(_: usize, name: &str) -> bool {
    THREADS_VARIANTS.contains(&name)
}

/// `each(index, name, features)` on every variant in two threads, those for which
/// `second(index, name)` holds in the second. Results in [`VARIANTS`]' order.
fn in_two_lanes<T: Send>(
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

/// The types, the schemas, `tsc` and `npm pack`; prints the gzipped sizes of `shipped` (the
/// glue files) and of the entry points. Returns the tarball's path.
fn pack(mut shipped: Vec<PathBuf>, bg: Option<&Niced>) -> Result<PathBuf> {
    let root = repo_root();
    let pkg = root.join("pkg");
    typescript(&root, &pkg, bg)?;

    let dest = root.join("target").join("npm");
    remove_dir(&dest)?;
    std::fs::create_dir_all(&dest).with_context(|| format!("create {}", dest.display()))?;
    run_on(
        npm(&pkg).arg("pack").arg("--pack-destination").arg(&dest),
        bg,
    )?;
    let tarball = only_tarball(&dest)?;

    println!("package: {}", tarball.display());
    println!("gzipped sizes (what a page downloads):");
    shipped.extend(js_files(&pkg.join("dist"))?);
    for file in shipped {
        let rel = file.strip_prefix(&pkg).unwrap_or(&file);
        println!(
            "  {:>9} bytes  {}  ({} raw)",
            gzip_len(&file)?,
            rel.display(),
            file_len(&file)?
        );
    }
    Ok(tarball)
}

/// One of [`VARIANTS`] compiled; returns a copy of its `.wasm` under
/// `<target>/pkg-wasm/` (the next variant's build in the same target directory overwrites
/// the original).
fn compile(out_name: &str, features: &[&str], bg: Option<&Niced>) -> Result<PathBuf> {
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

/// wasm-bindgen on one variant's `wasm` into `pkg/wasm/`, then `wasm-opt` ([`WASM_OPT_LEVEL`]) and
/// `esbuild --minify` on its output. Returns the two files a page downloads.
fn glue(bindgen: &Path, out_name: &str, wasm: &Path, bg: Option<&Niced>) -> Result<Vec<PathBuf>> {
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

/// Removes `dir` and everything in it; a directory that is not there is no error.
pub(crate) fn remove_dir(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("remove {}", dir.display()))
        }
        _ => Ok(()),
    }
}

fn file_len(path: &Path) -> Result<u64> {
    Ok(std::fs::metadata(path)
        .with_context(|| format!("stat {}", path.display()))?
        .len())
}

/// The one `.tgz` `npm pack` wrote (the directory was emptied first).
fn only_tarball(dir: &Path) -> Result<PathBuf> {
    let tgz: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "tgz"))
        .collect();
    match tgz.as_slice() {
        [one] => Ok(one.clone()),
        _ => bail!("expected one .tgz in {}, found {tgz:?}", dir.display()),
    }
}

/// The `.js` entries of `dist/` (top level: the package's entry points), sorted.
fn js_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("read {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "js"))
        .collect();
    files.sort();
    Ok(files)
}

/// Size after `gzip -9`, as a server would send it.
fn gzip_len(path: &Path) -> Result<usize> {
    let out = Command::new("gzip")
        .args(["-9", "-c"])
        .arg(path)
        .output()
        .context("gzip is needed to report compressed sizes")?;
    if !out.status.success() {
        bail!("gzip {} failed", path.display());
    }
    Ok(out.stdout.len())
}

/// The generated types, the schemas and `tsc` (`npm run build`) into `pkg/dist/`.
fn typescript(root: &Path, pkg: &Path, bg: Option<&Niced>) -> Result<()> {
    report_types(root, pkg, bg)?;
    schemas(root, pkg)?;
    run_on(npm(pkg).args(["run", "build"]), bg)
}

/// The report's and the run spec's types for the package, from the JSON Schemas the core
/// generates (schemars), by json-schema-to-typescript (pinned in `pkg/package.json`): a
/// report field or an option added in Rust reaches the package's `Report` or `RunSettings`
/// without anyone copying it into TypeScript. The output is not committed (`.gitignore`);
/// like `pkg/wasm/`, it is rebuilt from its source every time.
fn report_types(root: &Path, pkg: &Path, bg: Option<&Niced>) -> Result<()> {
    let core = root.join("crates").join("tpsmeter-core");
    let generated = pkg.join("src").join("generated");
    run_on(
        Command::new("node")
            .current_dir(pkg)
            .arg("scripts/report-types.mjs")
            .arg(core.join("report.schema.json"))
            .arg(generated.join("report.ts"))
            .arg(core.join("spec.schema.json"))
            .arg(generated.join("spec.ts")),
        bg,
    )
}

/// The report's and the run spec's JSON Schemas, copied into `pkg/schema/` for the package's
/// `tpsmeter/report.schema.json` and `tpsmeter/spec.schema.json` exports: files a page
/// downloads only when it imports one (the report's is 59 KB; in the benchmark wasm, as it
/// once was, every page running `bench()` paid 10.7 KB gzipped for it).
fn schemas(root: &Path, pkg: &Path) -> Result<()> {
    let out = pkg.join("schema");
    std::fs::create_dir_all(&out).with_context(|| format!("create {}", out.display()))?;
    for name in ["report.schema.json", "spec.schema.json"] {
        let from = root.join("crates").join("tpsmeter-core").join(name);
        std::fs::copy(&from, out.join(name))
            .with_context(|| format!("copy {} into {}", from.display(), out.display()))?;
    }
    Ok(())
}

/// wasm-bindgen's `.d.ts` declares `[Symbol.dispose]()` on its classes, which TypeScript
/// knows only from lib `esnext.disposable`: an app on lib ES2023 with `skipLibCheck: false`
/// failed to compile against the package (TS2550). A triple-slash lib reference at the top
/// makes the file bring what it uses (TypeScript 5.2 and later).
fn disposable_lib(dts: &Path) -> Result<()> {
    let text = std::fs::read_to_string(dts)?;
    const REFERENCE: &str = "/// <reference lib=\"esnext.disposable\" />\n";
    if text.contains("Symbol.dispose") && !text.starts_with(REFERENCE) {
        std::fs::write(dts, format!("{REFERENCE}{text}"))?;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Every deferred variant has a plain twin that the first stage builds, and the twin's
    /// wrapper is the one the engine's Worker falls back to.
    #[test]
    fn deferred_variants_have_a_plain_twin_built_first() {
        for name in DEFERRED {
            let twin = plain_twin(name).unwrap();
            assert!(VARIANTS.iter().any(|(v, _)| *v == twin), "{twin}");
            assert!(!DEFERRED.contains(&twin), "{twin}");
            assert!(VARIANTS.iter().any(|(v, _)| v == name), "{name}");
        }
    }

    /// The pending module declares what its twin declares, re-exports the twin, and its
    /// init rejects naming the build.
    #[test]
    fn a_pending_module_rejects_its_init_and_keeps_its_twins_declarations() {
        let dir = std::env::temp_dir().join(format!("tpsmeter-pending-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let twin_dts = "export class EngineLoader { free(): void; }\n";
        std::fs::write(dir.join("tpsmeter_engine_cpu.d.ts"), twin_dts).unwrap();
        pending_glue(&dir, "tpsmeter_engine_cpu_relaxed").unwrap();
        let dts = std::fs::read_to_string(dir.join("tpsmeter_engine_cpu_relaxed.d.ts")).unwrap();
        assert_eq!(dts, twin_dts);
        let js = std::fs::read_to_string(dir.join("tpsmeter_engine_cpu_relaxed.js")).unwrap();
        assert!(
            js.contains("export * from './tpsmeter_engine_cpu.js';"),
            "{js}"
        );
        assert!(js.contains("export default async function init() { throw new Error(\"tpsmeter_engine_cpu_relaxed is not built yet"), "{js}");
        // Thrown as the module is evaluated: an import of it rejects before any fetch.
        assert!(js.trim_end().ends_with("throw new Error(\"tpsmeter_engine_cpu_relaxed is not built yet (`cargo xtask demo` compiles it after the page is up, then rebuilds the site: reload the page when it says so)\");"), "{js}");
        assert!(!dir.join("tpsmeter_engine_cpu_relaxed_bg.wasm").exists());
        // Without its twin's glue there is nothing to declare it with.
        let err = pending_glue(&dir, "tpsmeter_engine_cpu_mt_relaxed").unwrap_err();
        assert!(
            format!("{err:#}").contains("tpsmeter_engine_cpu_mt must be built before"),
            "{err:#}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
