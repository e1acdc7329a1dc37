//! Test binaries run two at a time: the engine's kernel tests spend their time in lavapipe
//! compiling shaders on the thread that asked, one test at a time per binary (a binary's last
//! long test leaves the other core idle for minutes), so `cargo test`'s one binary after
//! another used one core. Each binary's output is kept and printed whole when it ends, so two
//! binaries' lines never interleave. A binary may run as several jobs, each a subset of its
//! tests (a filter in [`TestBinary::args`]), where one binary's tests are most of a step.

use anyhow::{Context, Result, bail};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Instant;

/// One test executable cargo built (`--no-run`).
#[derive(Debug, Clone, PartialEq)]
pub struct TestBinary {
    /// The target's name (`kernel_matvec`; the crate's name for unit tests).
    pub name: String,
    /// Its kind as cargo names it (`test`, `lib`, `bin`).
    pub kind: String,
    /// The package's directory: `cargo test` runs a binary there.
    pub dir: PathBuf,
    pub path: PathBuf,
    /// Arguments after the binary's own: a filter that runs a subset of its tests (libtest's
    /// and wasm-bindgen-test-runner's `NAME --exact`, `--skip NAME`). Empty: every test.
    pub args: Vec<String>,
}

/// Builds the tests (`cmd`: `cargo test … --no-run`), its diagnostics on the terminal, and
/// returns the test executables it built.
pub fn build(cmd: &mut Command) -> Result<Vec<TestBinary>> {
    cmd.arg("--message-format=json-render-diagnostics")
        .stdout(std::process::Stdio::piped());
    eprintln!("$ {}", crate::sh::describe(cmd));
    let out = cmd.spawn()?.wait_with_output()?;
    if !out.status.success() {
        bail!("{} failed with {}", crate::sh::describe(cmd), out.status);
    }
    Ok(from_messages(&out.stdout))
}

/// The test executables in cargo's JSON messages (`--message-format=json…` on stdout).
pub fn from_messages(stdout: &[u8]) -> Vec<TestBinary> {
    let mut bins = Vec::new();
    for line in stdout.split(|b| *b == b'\n') {
        let Ok(m) = serde_json::from_slice::<serde_json::Value>(line) else {
            continue;
        };
        if m["reason"] != "compiler-artifact" || m["profile"]["test"] != true {
            continue;
        }
        let (Some(path), Some(name), Some(kind), Some(manifest)) = (
            m["executable"].as_str(),
            m["target"]["name"].as_str(),
            m["target"]["kind"][0].as_str(),
            m["manifest_path"].as_str(),
        ) else {
            continue;
        };
        let dir = Path::new(manifest)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        bins.push(TestBinary {
            name: name.to_owned(),
            kind: kind.to_owned(),
            dir,
            path: PathBuf::from(path),
            args: Vec::new(),
        });
    }
    bins
}

/// Runs every binary of `bins` to its end, `lanes` at a time, in the order given (put the
/// longest first), each as `command(binary)` makes it followed by the binary's
/// [`TestBinary::args`]; fails after all have run, naming those that failed, and a filter
/// that matched no test as a failure (a renamed test would otherwise run nowhere).
pub fn run(
    bins: &[TestBinary],
    lanes: usize,
    command: impl Fn(&TestBinary) -> Command + Sync,
) -> Result<()> {
    let queue = Mutex::new(bins.iter().collect::<VecDeque<_>>());
    let failed = Mutex::new(Vec::new());
    let lane = || -> Result<()> {
        loop {
            let next = queue.lock().ok().and_then(|mut q| q.pop_front());
            let Some(bin) = next else { return Ok(()) };
            let mut cmd = command(bin);
            cmd.args(&bin.args);
            let start = Instant::now();
            let out = cmd
                .output()
                .with_context(|| format!("could not start {}", bin.path.display()))?;
            // Printed whole, under one lock: the other lane's binary may end meanwhile.
            let _print = queue.lock();
            eprintln!(
                "$ {} ({:.1} s, {})",
                crate::sh::describe(&cmd),
                start.elapsed().as_secs_f64(),
                out.status
            );
            let stdout = String::from_utf8_lossy(&out.stdout);
            eprint!("{stdout}");
            eprint!("{}", String::from_utf8_lossy(&out.stderr));
            let matched_none = !bin.args.is_empty() && stdout.contains("running 0 tests");
            if matched_none {
                eprintln!("{}: the filter {:?} matched no test", bin.name, bin.args);
            }
            if (!out.status.success() || matched_none)
                && let Ok(mut f) = failed.lock()
            {
                f.push(bin.name.clone());
            }
        }
    };
    std::thread::scope(|scope| -> Result<()> {
        let others: Vec<_> = (1..lanes.max(1)).map(|_| scope.spawn(lane)).collect();
        let mut result = lane();
        for other in others {
            let joined = other
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("a test lane's thread panicked")));
            result = result.and(joined);
        }
        result
    })?;
    let failed = failed.into_inner().unwrap_or_default();
    if !failed.is_empty() {
        bail!("test binaries failed: {}", failed.join(", "));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn test_executables_are_read_from_cargos_messages() {
        let messages = concat!(
            r#"{"reason":"compiler-artifact","manifest_path":"/w/crates/g/Cargo.toml","target":{"name":"kernel_matvec","kind":["test"]},"profile":{"test":true},"executable":"/t/debug/deps/kernel_matvec-1"}"#,
            "\n",
            // A library built for the tests, not a test: no executable.
            r#"{"reason":"compiler-artifact","manifest_path":"/w/crates/g/Cargo.toml","target":{"name":"g","kind":["lib"]},"profile":{"test":false},"executable":null}"#,
            "\n",
            r#"{"reason":"build-finished","success":true}"#,
            "\nnot json\n",
        );
        let bins = from_messages(messages.as_bytes());
        assert_eq!(
            bins,
            [TestBinary {
                name: "kernel_matvec".into(),
                kind: "test".into(),
                dir: PathBuf::from("/w/crates/g"),
                path: PathBuf::from("/t/debug/deps/kernel_matvec-1"),
                args: Vec::new(),
            }]
        );
    }

    #[test]
    fn every_binary_runs_and_failures_are_named_after_all_ran() {
        let bin = |name: &str| TestBinary {
            name: name.into(),
            kind: "test".into(),
            dir: std::env::temp_dir(),
            path: PathBuf::from("sh"),
            args: Vec::new(),
        };
        let bins = [bin("a"), bin("fails"), bin("c")];
        let ran = Mutex::new(Vec::new());
        let err = run(&bins, 2, |b| {
            ran.lock().unwrap().push(b.name.clone());
            let mut c = Command::new("sh");
            c.args(["-c", if b.name == "fails" { "exit 3" } else { "true" }]);
            c
        })
        .unwrap_err();
        assert!(err.to_string().contains("fails"), "{err}");
        assert!(!err.to_string().contains("a,"), "{err}");
        let mut ran = ran.into_inner().unwrap();
        ran.sort();
        assert_eq!(ran, ["a", "c", "fails"]);
    }

    #[test]
    fn a_filter_that_matches_no_test_fails() {
        let job = |name: &str, out: &str| TestBinary {
            name: name.into(),
            kind: "test".into(),
            dir: std::env::temp_dir(),
            path: PathBuf::from("sh"),
            args: vec!["-c".into(), format!("echo '{out}'")],
        };
        let jobs = [
            job("renamed", "running 0 tests"),
            job("kept", "running 1 test"),
        ];
        let err = run(&jobs, 1, |b| Command::new(&b.path)).unwrap_err();
        assert!(err.to_string().contains("renamed"), "{err}");
        assert!(!err.to_string().contains("kept"), "{err}");
    }
}
