//! Shared by the tests that start a real server process (`tpsmeter serve`, `llama-server`):
//! the process killed however the test ends, the assets it needs (a failure under
//! `TPSMETER_REQUIRE_ASSETS=1`, as in CI, else a skip with the reason), a free port, and the
//! wait for `/health`.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills the server however the test ends.
pub struct Server(pub Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The existing files named by `vars`, or `None` (a skip) after saying why `test` needs
/// them; panics instead when assets are required.
pub fn assets<const N: usize>(test: &str, vars: [&str; N]) -> Option<[PathBuf; N]> {
    let found: Vec<PathBuf> = vars
        .iter()
        .filter_map(|v| std::env::var_os(v).map(PathBuf::from))
        .filter(|p| p.exists())
        .collect();
    if let Ok(all) = <[PathBuf; N]>::try_from(found) {
        return Some(all);
    }
    let msg = format!("{} must name existing files", vars.join(" and "));
    assert!(
        std::env::var("TPSMETER_REQUIRE_ASSETS").as_deref() != Ok("1"),
        "{test}: {msg} (TPSMETER_REQUIRE_ASSETS=1)"
    );
    eprintln!("skipping {test}: {msg}");
    None
}

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Whether `GET /health` on `port` answers 200.
pub fn healthy(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    if s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut buf = String::new();
    let _ = s.read_to_string(&mut buf);
    buf.starts_with("HTTP/1.1 200")
}

/// Sends `body` as `POST /v1/chat/completions` on a new connection to `port` (closed after
/// the response; read timeout 300 s, for a prefill on lavapipe) and returns the stream.
pub fn post_chat(port: u16, body: &str) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(300))).unwrap();
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    s
}

/// Spawns `cmd` (a server on `port`) and waits up to 300 s for its `/health` to answer 200
/// (servers load the model first); panics if it exits or never gets there.
pub fn start(cmd: &mut Command, port: u16, what: &str) -> Server {
    let mut server = Server(cmd.spawn().unwrap());
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        assert!(
            server.0.try_wait().unwrap().is_none(),
            "{what} exited early (its stderr is above)"
        );
        if healthy(port) {
            return server;
        }
        assert!(Instant::now() < deadline, "{what} not healthy in 300 s");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `tpsmeter serve` on `model` with `parallel` slots and 1024 positions each, on a free port,
/// once healthy (its stderr goes to the test's), on the backend `--backend auto` picks.
pub fn serve_model(model: &Path, parallel: &str) -> (Server, u16) {
    serve_model_on(model, parallel, "auto")
}

/// [`serve_model`] with `--backend backend` (`gpu`, `cpu`, `auto`).
pub fn serve_model_on(model: &Path, parallel: &str, backend: &str) -> (Server, u16) {
    let port = free_port();
    let server = start(
        Command::new(env!("CARGO_BIN_EXE_tpsmeter"))
            .arg("serve")
            .arg("--model")
            .arg(model)
            .args(["--parallel", parallel, "--context", "1024"])
            .args(["--backend", backend])
            .args(["--port", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit()),
        port,
        "tpsmeter serve",
    );
    (server, port)
}
