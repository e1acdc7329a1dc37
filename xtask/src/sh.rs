//! Small helpers for running commands with their output visible.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `cmd`, streaming its output, and fails with the command line if it fails.
pub fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("$ {}", describe(cmd));
    let status = cmd
        .status()
        .with_context(|| format!("could not start {}", describe(cmd)))?;
    if !status.success() {
        bail!("{} failed with {status}", describe(cmd));
    }
    Ok(())
}

/// Holds an exclusive lock on `<cache>/<name>.lock` until the returned file is dropped,
/// waiting for another process that holds it. The package build empties `pkg/wasm` and
/// `pkg/dist` before it writes them: two builds of one checkout at once (a test run beside
/// `cargo xtask www`) would each see the other's half-written files.
pub fn exclusive(name: &str) -> Result<std::fs::File> {
    let dir = crate::assets::cache_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    let path = dir.join(format!("{name}.lock"));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("open {}", path.display()))?;
    if file.try_lock().is_err() {
        eprintln!(
            "waiting for {} (another build of the package runs)",
            path.display()
        );
        file.lock()
            .with_context(|| format!("lock {}", path.display()))?;
    }
    Ok(file)
}

/// Whether a program is on PATH.
pub fn has(program: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {program} >/dev/null 2>&1"))
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// The full path of `program` on PATH (where a tool is to be handed a path, not a name).
pub fn which(program: &str) -> Option<std::path::PathBuf> {
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {program}"))
        .output()
        .ok()?;
    let path = String::from_utf8_lossy(&o.stdout).trim().to_string();
    (o.status.success() && path.starts_with('/')).then(|| std::path::PathBuf::from(path))
}

pub fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// The repository root (xtask lives one level below it).
///
/// Read at run time, never baked in with `env!`: cargo keeps path packages' fingerprints
/// relative to the workspace, so a build cache shared by two checkouts (CI's clone and a
/// worktree, one `CARGO_TARGET_DIR`) can run an xtask binary compiled in the other checkout,
/// whose compiled-in path may no longer exist. `cargo run` sets `CARGO_MANIFEST_DIR` for the
/// process; without it, the nearest ancestor of the working directory holding `xtask/`.
pub fn repo_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR")
        && let Some(root) = Path::new(&dir).parent()
    {
        return root.to_path_buf();
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    cwd.ancestors()
        .find(|d| d.join("xtask").join("Cargo.toml").is_file())
        .map(Path::to_path_buf)
        .unwrap_or(cwd)
}
