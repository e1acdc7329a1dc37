//! An X display for WebKitGTK's MiniBrowser, which opens a real window (it has no headless
//! mode of its own): the one in `DISPLAY` when there is one, else a private Xvfb on a free
//! display number, stopped when the guard drops.

use anyhow::{Context, Result, bail};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long Xvfb may take to open its socket.
const START: Duration = Duration::from_secs(20);

/// The display the browsers use; an Xvfb of ours is killed on drop.
pub struct Display {
    pub name: String,
    xvfb: Option<Child>,
}

impl Display {
    /// `DISPLAY` as it is, or a new Xvfb.
    pub fn get() -> Result<Self> {
        if let Some(name) = std::env::var("DISPLAY").ok().filter(|d| !d.is_empty()) {
            return Ok(Self { name, xvfb: None });
        }
        // A number no X server holds (its lock file and socket are absent).
        let n = (90..200)
            .find(|n| {
                !Path::new(&format!("/tmp/.X{n}-lock")).exists()
                    && !Path::new(&format!("/tmp/.X11-unix/X{n}")).exists()
            })
            .context("no free X display number in :90..:199")?;
        let name = format!(":{n}");
        let mut child = Command::new("Xvfb")
            .args([&name, "-screen", "0", "1280x1024x24", "-nolisten", "tcp"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("start Xvfb (Debian package xvfb; cargo xtask setup installs it)")?;
        let socket = format!("/tmp/.X11-unix/X{n}");
        let started = Instant::now();
        while !Path::new(&socket).exists() {
            if let Some(status) = child.try_wait()? {
                bail!("Xvfb {name} exited at start ({status})");
            }
            if started.elapsed() > START {
                let _ = child.kill();
                bail!("Xvfb {name} opened no socket within {START:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(Self {
            name,
            xvfb: Some(child),
        })
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        if let Some(child) = &mut self.xvfb {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
