//! `cargo xtask pkg`: the npm package, built from scratch.
//!
//! 1. `npm ci` in `pkg/` (TypeScript, esbuild and binaryen's `wasm-opt` come from npm,
//!    binaryen because Debian's is too old for what rustc emits);
//! 2. `tpsmeter-wasm` for wasm32 in the `wasm-release` profile, once per [`VARIANTS`]: the
//!    benchmark build (default features), the real-user meter's lazy parsers (`Exchange`
//!    only, one build per wire family with that family's adapter alone, because apps load one
//!    on their users' pages), and the local engine on WebGPU and on the CPU; the two threaded
//!    builds beside the others (a target directory of their own);
//! 3. each build through `wasm-bindgen --target web` into `pkg/wasm/` (`tpsmeter_wasm*`,
//!    `tpsmeter_meter*`, `tpsmeter_engine*`; the package's `raw*` modules wrap them);
//! 4. `wasm-opt -O1` on the glue's `.wasm` ([`WASM_OPT_LEVEL`]) and `esbuild --minify` on its
//!    `.js`, in place;
//! 5. the report's and the run spec's TypeScript types, generated from
//!    `crates/tpsmeter-core/report.schema.json` and `spec.schema.json` into
//!    `pkg/src/generated/` (`pkg/scripts/report-types.mjs`);
//! 6. `npm run build` (tsc into `pkg/dist/`: the JavaScript without comments, the type
//!    declarations with them), and the two JSON Schemas into `pkg/schema/`;
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

mod compile;
mod glue;
mod pack;

use compile::*;
use glue::*;
use pack::*;

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

/// Removes `dir` and everything in it; a directory that is not there is no error.
pub(crate) fn remove_dir(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("remove {}", dir.display()))
        }
        _ => Ok(()),
    }
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
