//! The package around the glue: its TypeScript types and build, the schemas, `npm pack` and
//! the gzipped sizes a page downloads.

use super::*;

/// The types, the schemas, `tsc` and `npm pack`; prints the gzipped sizes of `shipped` (the
/// glue files) and of the entry points. Returns the tarball's path.
pub(super) fn pack(mut shipped: Vec<PathBuf>, bg: Option<&Niced>) -> Result<PathBuf> {
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

/// The one `.tgz` `npm pack` wrote (the directory was emptied first).
pub(super) fn only_tarball(dir: &Path) -> Result<PathBuf> {
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
pub(super) fn js_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("read {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "js"))
        .collect();
    files.sort();
    Ok(files)
}

/// Size after `gzip -9`, as a server would send it.
pub(super) fn gzip_len(path: &Path) -> Result<usize> {
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
pub(super) fn typescript(root: &Path, pkg: &Path, bg: Option<&Niced>) -> Result<()> {
    report_types(root, pkg, bg)?;
    schemas(root, pkg)?;
    run_on(npm(pkg).args(["run", "build"]), bg)
}

/// The report's and the run spec's types for the package, from the JSON Schemas the core
/// generates (schemars), by json-schema-to-typescript (pinned in `pkg/package.json`): a
/// report field or an option added in Rust reaches the package's `Report` or `RunSettings`
/// without anyone copying it into TypeScript. The output is not committed (`.gitignore`);
/// like `pkg/wasm/`, it is rebuilt from its source every time.
pub(super) fn report_types(root: &Path, pkg: &Path, bg: Option<&Niced>) -> Result<()> {
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
pub(super) fn schemas(root: &Path, pkg: &Path) -> Result<()> {
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
pub(super) fn disposable_lib(dts: &Path) -> Result<()> {
    let text = std::fs::read_to_string(dts)?;
    const REFERENCE: &str = "/// <reference lib=\"esnext.disposable\" />\n";
    if text.contains("Symbol.dispose") && !text.starts_with(REFERENCE) {
        std::fs::write(dts, format!("{REFERENCE}{text}"))?;
    }
    Ok(())
}
