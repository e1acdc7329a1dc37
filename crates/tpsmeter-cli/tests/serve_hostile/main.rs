//! `tpsmeter serve` against hostile clients, end to end on the real model over raw TCP (so a
//! test controls every byte and every pause): malformed JSON, wrong content types, bodies
//! over the cap (413 before the body is read), absurd sampling values and `max_tokens`,
//! prompts beyond the context (a 400, streamed or not; megabyte ones at once in flat
//! memory), unknown routes, clients that stall in their headers or body, more connections
//! than the server holds, 100 concurrent requests with hostile ones among them, and a
//! client of a whole (non-streamed) answer that leaves. Each refusal is OpenAI's error object; the server never panics, and good requests
//! are answered throughout.
//!
//! Loads `TPSMETER_MODEL` with `--backend auto` (the CPU where lavapipe is all); without the
//! model it fails when `TPSMETER_REQUIRE_ASSETS=1` (CI) and skips otherwise.
#![allow(clippy::unwrap_used)]

#[path = "../server_support/mod.rs"]
mod server_support;

mod connections;
mod memory;
mod requests;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use server_support::{Server, assets, free_port, start};

/// `tpsmeter serve`'s caps (`src/serve/listen.rs` and `http.rs`).
const MAX_BODY_BYTES: usize = 1 << 20;
const MAX_CONNECTIONS: usize = 256;
const READ_TIMEOUT: Duration = Duration::from_secs(10);
const CONTEXT: usize = 256;

/// The file a server's stderr goes to: removed when the test passes, kept for reading when it
/// fails (each run used to leave one per test in the temporary directory).
struct Log(PathBuf);

impl std::ops::Deref for Log {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

/// The server, its port and the file its stderr goes to.
fn serve(model: &Path, parallel: &str, test: &str) -> (Server, u16, Log) {
    serve_with(model, parallel, CONTEXT, test)
}

/// [`serve`] with a context of `context` tokens.
fn serve_with(model: &Path, parallel: &str, context: usize, test: &str) -> (Server, u16, Log) {
    let port = free_port();
    let log = std::env::temp_dir().join(format!("{test}-{port}.stderr"));
    let server = start(
        Command::new(env!("CARGO_BIN_EXE_tpsmeter"))
            .arg("serve")
            .arg("--model")
            .arg(model)
            .args(["--parallel", parallel])
            .args(["--context", &context.to_string()])
            .args(["--port", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap()),
        port,
        "tpsmeter serve",
    );
    (server, port, Log(log))
}

/// The server is still running and never panicked.
fn assert_alive(server: &mut Server, log: &Path) {
    assert!(
        server.0.try_wait().unwrap().is_none(),
        "the server exited; its stderr: {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
    let err = std::fs::read_to_string(log).unwrap();
    assert!(!err.contains("panicked"), "the server panicked: {err}");
}

fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    s
}

/// A response read to the connection's end: (status, lower-cased head, body).
fn read_response(s: &mut TcpStream) -> (u16, String, String) {
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {raw:?}"));
    (status, head.to_ascii_lowercase(), body.to_owned())
}

/// Sends `head` (request line and headers, without the blank line) and `body` on a new
/// connection that closes after one response.
fn request(port: u16, head: &str, body: &[u8]) -> (u16, String, String) {
    let mut s = connect(port);
    // A server may answer (413, 503) and close before the request is all written: the
    // response is what the test checks, not whether the write completed.
    let _ = write!(s, "{head}\r\nConnection: close\r\n\r\n");
    let _ = s.write_all(body);
    read_response(&mut s)
}

fn post(port: u16, path: &str, content_type: &str, body: &str) -> (u16, String, String) {
    request(
        port,
        &format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\nContent-Length: {}",
            body.len()
        ),
        body.as_bytes(),
    )
}

fn chat(port: u16, body: &str) -> (u16, String, String) {
    post(port, "/v1/chat/completions", "application/json", body)
}

/// The body is OpenAI's error object; returns it.
fn error_object(body: &str) -> Value {
    let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body:?}"));
    let e = &v["error"];
    assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
    assert!(e["type"].is_string(), "{v}");
    assert!(e.get("param").is_some() && e.get("code").is_some(), "{v}");
    e.clone()
}

fn good_body(stream: bool, max_tokens: usize) -> String {
    serde_json::json!({
        "messages": [{"role": "user", "content": "Name a color."}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": stream,
    })
    .to_string()
}

/// A good request is answered in full: 200 and, streamed, the `[DONE]` line.
fn assert_good(port: u16, stream: bool) {
    let (status, _, body) = chat(port, &good_body(stream, 4));
    assert_eq!(status, 200, "{body}");
    if stream {
        assert!(body.contains("data: [DONE]"), "{body}");
    } else {
        let v: Value = serde_json::from_str(&body).unwrap();
        assert!(v["choices"][0]["message"]["content"].is_string(), "{v}");
    }
}
