//! `cargo xtask demo`: the README's main job on its embedded default.
//!
//! Starts a real llama.cpp `llama-server` with SmolLM2-135M on 127.0.0.1, benchmarks it with
//! `tpsmeter bench` at a few concurrency levels, prints the table, and stops the server.
//! Extra arguments are passed to `tpsmeter bench` (e.g. `--concurrency 1,2 --requests 8`).

use crate::assets;
use crate::sh::{self, repo_root};
use anyhow::{Context, Result, bail};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills the server however the demo ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn run(extra: &[String]) -> Result<()> {
    assets::setup_all()?;
    let root = repo_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    sh::run(Command::new(&cargo).current_dir(&root).args([
        "build",
        "--release",
        "-p",
        "tpsmeter-cli",
    ]))?;
    let port = free_port()?;
    let server = start_llama_server(port)?;
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), std::path::PathBuf::from);
    let mut bench = Command::new(target_dir.join("release").join("tpsmeter"));
    bench.args(["bench", "--api", "openai-chat", "--url"]);
    bench.arg(format!("http://127.0.0.1:{port}"));
    bench.args(["--model", "SmolLM2-135M-Instruct"]);
    if extra.is_empty() {
        bench.args([
            "--concurrency",
            "1,2,4,8",
            "--requests",
            "16",
            "--warmup",
            "2",
            "--max-tokens",
            "64",
            "--prompt",
            "Write a short story about a lighthouse keeper who finds a message in a bottle.",
        ]);
    } else {
        bench.args(extra);
    }
    let result = sh::run(&mut bench);
    drop(server);
    result
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn start_llama_server(port: u16) -> Result<Server> {
    let bin = assets::llama_bin("llama-server");
    let model = assets::model_path();
    let child = Command::new(&bin)
        .arg("-m")
        .arg(&model)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        // Up to 8 parallel slots so the concurrency sweep measures real batching.
        .args(["--parallel", "8", "--ctx-size", "8192", "--threads", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("start {}", bin.display()))?;
    let mut server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        if let Some(status) = server.0.try_wait()? {
            bail!("llama-server exited early with {status}");
        }
        if health_ok(port) {
            return Ok(server);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    bail!("llama-server did not become healthy within 120 s on port {port}")
}

/// `GET /health` answers 200 once the model is loaded.
fn health_ok(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut buf = [0u8; 16];
    matches!(s.read(&mut buf), Ok(n) if n >= 12 && &buf[9..12] == b"200")
}
