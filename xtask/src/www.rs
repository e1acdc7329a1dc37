//! `cargo xtask www`: the site (`www/`, Vite 7) built into `target/www/` against the npm
//! package built from this checkout (`www/package.json` links `tpsmeter` to `../pkg`).
//!
//! The output is a static directory: any static host serves it, and `tpsmeter serve --www
//! target/www` serves it beside our engine's OpenAI-compatible API.

use crate::pkg;
use crate::sh::{self, repo_root};
use crate::tools::{npm, npm_install};
use anyhow::Result;
use std::path::PathBuf;

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

/// Builds the site, assuming `pkg/` was built (`pkg::build`) in this checkout. The build
/// type-checks the site's TypeScript against the package's own declarations first
/// (`npm run build` = `tsc --noEmit && vite build`).
pub fn build_site() -> Result<PathBuf> {
    let www = repo_root().join("www");
    npm_install(&www)?;
    let out = out_dir();
    sh::run(
        npm(&www)
            .args(["run", "build"])
            .env("TPSMETER_WWW_OUT", &out),
    )?;
    Ok(out)
}
