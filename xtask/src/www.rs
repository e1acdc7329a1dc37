//! `cargo xtask www`: the site (`www/`, Vite 7) built into `target/www/` against the npm
//! package built from this checkout (`www/package.json` links `tpsmeter` to `../pkg`).
//!
//! The output is a static directory: any static host serves it, and `tpsmeter serve --www
//! target/www` serves it beside our engine's OpenAI-compatible API.

use crate::pkg;
use crate::sh::repo_root;
use crate::tools::{npm, npm_install};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// Where the site is built.
pub fn out_dir() -> PathBuf {
    repo_root().join("target").join("www")
}

/// `cargo xtask www`: the package, then the site.
pub fn run() -> Result<()> {
    let _lock = crate::sh::exclusive("pkg-build")?;
    pkg::build()?;
    let out = build_site()?;
    println!("site: {}", out.display());
    Ok(())
}

/// The site built again from `pkg/` as it is now, into a directory beside the served one
/// which then takes its place (two renames: a request between them finds no file), the old
/// `assets/` kept in it, without
/// `npm ci` (which would empty `node_modules/` under a running build); through `bg` when
/// given. What `cargo xtask demo` runs once its deferred builds are in the package.
pub fn rebuild_site(bg: Option<&crate::background::Niced>) -> Result<PathBuf> {
    let out = out_dir();
    let next = out.with_file_name("www-next");
    let old = out.with_file_name("www-old");
    pkg::remove_dir(&next)?;
    pkg::remove_dir(&old)?;
    vite_build(&next, bg)?;
    // A page opened before the swap keeps loading what it names: Vite's `assets/` are
    // content-hashed, so the old ones are kept beside the new (its Worker, the chunks that
    // Worker imports later, the plain-SIMD fallback's files).
    let (from, to) = (out.join("assets"), next.join("assets"));
    if from.is_dir() {
        for entry in std::fs::read_dir(&from).with_context(|| format!("read {}", from.display()))? {
            let entry = entry?;
            let target = to.join(entry.file_name());
            if !target.exists() {
                std::fs::copy(entry.path(), &target)
                    .with_context(|| format!("keep {}", entry.path().display()))?;
            }
        }
    }
    std::fs::rename(&out, &old).with_context(|| format!("move {} aside", out.display()))?;
    std::fs::rename(&next, &out).with_context(|| format!("move {} into place", next.display()))?;
    std::fs::remove_dir_all(&old).with_context(|| format!("remove {}", old.display()))?;
    Ok(out)
}

/// Builds the site, assuming `pkg/` was built (`pkg::build`) in this checkout. The build
/// type-checks the site's TypeScript against the package's own declarations first
/// (`npm run build` = `tsc --noEmit && vite build`).
pub fn build_site() -> Result<PathBuf> {
    npm_install(&repo_root().join("www"))?;
    let out = out_dir();
    vite_build(&out, None)?;
    Ok(out)
}

/// `npm run build` in `www/` into `out`, through `bg` when given.
fn vite_build(out: &Path, bg: Option<&crate::background::Niced>) -> Result<()> {
    crate::background::run_on(
        npm(&repo_root().join("www"))
            .args(["run", "build"])
            .env("TPSMETER_WWW_OUT", out),
        bg,
    )
}
