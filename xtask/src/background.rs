//! Set-up builds in the background ([`Background`]), at the lowest priority beside the
//! workspace's own builds, each command run through [`Niced`] (niced, logged, stoppable):
//! CI's (Firefox ESR and WebKitGTK's packages installed, then the wasm-bindgen CLI and
//! llama.cpp compiled) and the demo's (llama.cpp, which only its last comparison needs).

use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::{Arc, Condvar, Mutex};

use crate::sh::run;

/// The command a background build is running now, for a drop to stop.
type Running = Arc<Mutex<Option<Child>>>;

/// The milestones a job has passed ([`Niced::reached`]), and whether it has ended, with a
/// condition variable for [`Background::wait_for`].
type Milestones = Arc<(Mutex<(Vec<&'static str>, bool)>, Condvar)>;

/// CI's two long set-up builds (the wasm-bindgen CLI, ~2 min on two cores; llama.cpp's
/// test binaries, ~5 min), run one after the other in a thread at the lowest priority
/// (`nice -n 19`) while the foreground checks, compiles and tests the workspace: a Rust
/// build leaves a core idle whenever one crate is all that can compile, and a test binary
/// whenever one test is all that is left, and these fill it. Their output goes to
/// `<target>/setup-builds.log` (its tail is in the error when one fails).
/// [`Background::wait_for`] waits for one milestone ([`WASM_BINDGEN`]),
/// [`Background::join`] for all of them; dropped unjoined (the run failed before), it stops
/// the one running.
#[derive(Debug)]
pub struct Background {
    thread: Option<std::thread::JoinHandle<Result<()>>>,
    running: Running,
    milestones: Milestones,
}

/// CI's milestone: the wasm-bindgen CLI (and its test runner) is built, and the other browser
/// engines installed before it.
pub const WASM_BINDGEN: &str = "the wasm-bindgen CLI";

impl Background {
    /// CI's set-up builds: the browser engines, the wasm-bindgen CLI, then llama.cpp, in the
    /// order the run needs them (the browsers' wasm tests need the CLI; only the tests that
    /// compare with llama.cpp, the last native ones and the end-to-end tests, need it).
    pub fn spawn() -> Result<Background> {
        Self::spawn_job("setup-builds.log", |bg| {
            // The other two browser engines first: downloads and unpacking, little CPU.
            crate::assets::apt_install_on(crate::tools::ENGINE_PACKAGES, Some(bg))?;
            crate::tools::wasm_bindgen_cli(Some(bg))?;
            bg.reached(WASM_BINDGEN);
            crate::assets::build_test_llama(Some(bg))
        })
    }

    /// Waits until the job has passed `milestone`. Returns the job's error if it failed
    /// before (the job is then over, and a later [`Background::join`] returns `Ok`).
    pub fn wait_for(&mut self, milestone: &'static str) -> Result<()> {
        let (lock, changed) = &*self.milestones;
        {
            let mut state = lock.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
            while !state.0.contains(&milestone) && !state.1 {
                state = changed
                    .wait(state)
                    .map_err(|_| anyhow::anyhow!("poisoned"))?;
            }
            if state.0.contains(&milestone) {
                return Ok(());
            }
        }
        // Over without the milestone: the job's own error says why.
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(Err(e))) => Err(e),
            Some(Err(_)) => bail!("the set-up builds' thread panicked"),
            _ => bail!("the set-up builds ended without reaching {milestone}"),
        }
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
        let milestones: Milestones = Arc::new((Mutex::new((Vec::new(), false)), Condvar::new()));
        let niced = Niced {
            log,
            running: running.clone(),
            milestones: milestones.clone(),
        };
        let thread = std::thread::spawn(move || -> Result<()> {
            let result = job(&niced);
            // Ended, passed or failed: wake whoever waits for a milestone it never reached.
            niced.set(|state| state.1 = true);
            result
        });
        Ok(Background {
            thread: Some(thread),
            running,
            milestones,
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
    milestones: Milestones,
}

impl Niced {
    /// Marks `milestone` as passed, for [`Background::wait_for`].
    pub fn reached(&self, milestone: &'static str) {
        self.set(|state| state.0.push(milestone));
    }

    fn set(&self, change: impl FnOnce(&mut (Vec<&'static str>, bool))) {
        let (lock, changed) = &*self.milestones;
        if let Ok(mut state) = lock.lock() {
            change(&mut state);
        }
        changed.notify_all();
    }

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
