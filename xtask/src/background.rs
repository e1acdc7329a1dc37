//! Set-up builds in the background ([`Background`]), at the lowest priority beside the
//! workspace's own builds, each command run through [`Niced`] (niced, logged, stoppable):
//! CI's (Firefox ESR and WebKitGTK's packages installed, then the wasm-bindgen CLI and
//! llama.cpp compiled) and the demo's (llama.cpp, which only its last comparison needs).

use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};

use crate::sh::run;

/// The command a background build is running now, for a drop to stop.
type Running = Arc<Mutex<Option<Child>>>;

/// CI's two long set-up builds (the wasm-bindgen CLI, ~2 min on two cores; llama.cpp's
/// test binaries, ~5 min), run one after the other in a thread at the lowest priority
/// (`nice -n 19`) while the foreground checks and compiles the workspace: a Rust build
/// leaves a core idle whenever one crate is all that can compile, and these fill it.
/// Their output goes to `<target>/setup-builds.log` (its tail is in the error when one
/// fails). [`Background::join`] waits for them; dropped unjoined (the run failed before),
/// it stops the one running.
#[derive(Debug)]
pub struct Background {
    thread: Option<std::thread::JoinHandle<Result<()>>>,
    running: Running,
}

impl Background {
    /// CI's set-up builds.
    pub fn spawn() -> Result<Background> {
        Self::spawn_job("setup-builds.log", |bg| {
            // The other two browser engines first: downloads and unpacking, little CPU.
            crate::assets::apt_install_on(crate::tools::ENGINE_PACKAGES, Some(bg))?;
            crate::tools::wasm_bindgen_cli(Some(bg))?;
            crate::assets::build_test_llama(Some(bg))
        })
    }

    /// `job` in a thread of its own, its commands niced and logged to `<target>/<log>`.
    pub fn spawn_job(
        log: &str,
        job: impl FnOnce(&Niced) -> Result<()> + Send + 'static,
    ) -> Result<Background> {
        let log = crate::tools::target_dir().join(log);
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&log, "")?;
        let running = Arc::new(Mutex::new(None));
        let slot = running.clone();
        let thread =
            std::thread::spawn(move || -> Result<()> { job(&Niced { log, running: slot }) });
        Ok(Background {
            thread: Some(thread),
            running,
        })
    }

    /// Whether the job has ended (successfully or not); [`Background::join`] says which.
    pub fn is_finished(&self) -> bool {
        self.thread
            .as_ref()
            .is_none_or(std::thread::JoinHandle::is_finished)
    }

    pub fn join(mut self) -> Result<()> {
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => bail!("the set-up builds' thread panicked"),
            None => Ok(()),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if self.thread.is_some()
            && let Ok(mut child) = self.running.lock()
            && let Some(child) = child.as_mut()
        {
            let _ = child.kill();
        }
    }
}

/// How a background build runs a command: at the lowest priority, its output appended to
/// `log`, the child reachable for [`Background`]'s drop to stop.
#[derive(Debug)]
pub struct Niced {
    log: PathBuf,
    running: Running,
}

impl Niced {
    /// Runs `program args...` as `nice -n 19 program args...` with `cmd`'s environment.
    pub fn run(&self, cmd: &Command) -> Result<()> {
        let mut niced = Command::new("nice");
        niced
            .args(["-n", "19"])
            .arg(cmd.get_program())
            .args(cmd.get_args());
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => niced.env(k, v),
                None => niced.env_remove(k),
            };
        }
        if let Some(dir) = cmd.get_current_dir() {
            niced.current_dir(dir);
        }
        let out = std::fs::OpenOptions::new().append(true).open(&self.log)?;
        let line = format!("$ {}\n", crate::sh::describe(&niced));
        std::io::Write::write_all(&mut &out, line.as_bytes())?;
        eprint!("background {line}");
        let child = niced
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("could not start {}", crate::sh::describe(&niced)))?;
        let pid = child.id();
        *self
            .running
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))? = Some(child);
        // Wait without holding the lock, so that a drop on the main thread can kill it.
        let status = loop {
            let mut guard = self
                .running
                .lock()
                .map_err(|_| anyhow::anyhow!("poisoned"))?;
            match guard.as_mut().map(Child::try_wait) {
                Some(Ok(Some(status))) => {
                    *guard = None;
                    break status;
                }
                Some(Ok(None)) => {}
                Some(Err(e)) => return Err(e.into()),
                None => bail!("process {pid} was stopped"),
            }
            drop(guard);
            std::thread::sleep(std::time::Duration::from_millis(200));
        };
        if !status.success() {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(40).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            bail!(
                "{} failed with {status} ({}):\n{}",
                crate::sh::describe(&niced),
                self.log.display(),
                tail.join("\n")
            );
        }
        Ok(())
    }
}

/// Runs `cmd` in the foreground, or through `bg` when given.
pub fn run_on(cmd: &mut Command, bg: Option<&Niced>) -> Result<()> {
    match bg {
        Some(bg) => bg.run(cmd),
        None => run(cmd),
    }
}
