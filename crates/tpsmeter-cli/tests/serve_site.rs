//! `tpsmeter serve --www`: the binary serves the site, the model file and the API on one
//! origin, with the isolation headers, and refuses traversal on the wire.
//!
//! The end-to-end test loads `TPSMETER_MODEL` (a GGUF) on a GPU adapter (lavapipe will do).
//! Without the model it fails when `TPSMETER_REQUIRE_ASSETS=1` (CI) and skips with a message
//! otherwise. Requests are written by hand over TCP: an HTTP client would normalise the `..`
//! out of a traversal attempt before sending it.
#![allow(clippy::unwrap_used)]

mod server_support;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use server_support::{assets, free_port, start};

/// A fresh directory under Cargo's temp dir for integration tests.
fn temp_dir(name: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("serve-site-{name}"));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

struct Reply {
    status: u16,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// One HTTP/1.1 request with `Connection: close`, the path sent exactly as given.
fn request(port: u16, method: &str, path: &str) -> Reply {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = std::str::from_utf8(&raw[..end]).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().split(' ').nth(1).unwrap();
    let headers = lines
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.to_ascii_lowercase(), v.trim().to_owned())
        })
        .collect();
    Reply {
        status: status.parse().unwrap(),
        headers,
        body: raw[end + 4..].to_vec(),
    }
}

fn tpsmeter() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tpsmeter"))
}

/// A wrong `--www` is reported at once, before the (slow) model load: the model path here
/// does not even exist, and the error is about the site.
#[test]
fn serve_www_without_index_html_fails_before_loading_the_model() {
    let dir = temp_dir("no-index");
    let out = tpsmeter()
        .args(["serve", "--model", "/nonexistent/model.gguf", "--port", "0"])
        .arg("--www")
        .arg(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no index.html"), "{stderr}");
}

#[test]
fn serve_www_serves_site_model_and_api_on_one_origin() {
    let Some([model]) = assets(
        "serve_www_serves_site_model_and_api_on_one_origin",
        ["TPSMETER_MODEL"],
    ) else {
        return;
    };
    let root = temp_dir("e2e");
    let www = root.join("www");
    std::fs::create_dir_all(www.join("assets")).unwrap();
    std::fs::write(www.join("index.html"), "<!doctype html><p>hi</p>").unwrap();
    std::fs::write(www.join("assets/app-1a2b.js"), "console.log(1)").unwrap();
    std::fs::write(root.join("secret.txt"), "secret").unwrap();

    let port = free_port();
    let _server = start(
        tpsmeter()
            .arg("serve")
            .arg("--model")
            .arg(&model)
            .args(["--port", &port.to_string(), "--context", "256", "--www"])
            .arg(&www)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit()),
        port,
        "tpsmeter serve",
    );

    let r = request(port, "GET", "/");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"<!doctype html><p>hi</p>");
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(r.header("cache-control"), Some("no-cache"));
    let csp = r.header("content-security-policy").unwrap();
    assert!(csp.contains("'wasm-unsafe-eval'"), "{csp}");
    assert!(!csp.contains("connect-src") && !csp.contains("default-src"));
    assert_eq!(r.header("cross-origin-opener-policy"), Some("same-origin"));
    assert_eq!(
        r.header("cross-origin-embedder-policy"),
        Some("require-corp")
    );
    assert_eq!(
        r.header("cross-origin-resource-policy"),
        Some("same-origin")
    );

    // The static hosts' `_headers` (www/public/_headers, copied into the built site) says
    // what this server sends: every header of its `/*` rule on the page, of `/assets/*` on
    // a hashed asset.
    let rules = static_host_headers();
    for (name, value) in &rules["/*"] {
        assert_eq!(r.header(name), Some(value.as_str()), "_headers /* {name}");
    }

    let r = request(port, "GET", "/assets/app-1a2b.js");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"console.log(1)");
    assert_eq!(
        r.header("cache-control"),
        Some("public, max-age=31536000, immutable")
    );
    for (name, value) in &rules["/assets/*"] {
        assert_eq!(
            r.header(name),
            Some(value.as_str()),
            "_headers /assets/* {name}"
        );
    }

    // The model file, whole, and its length on HEAD without a body.
    let name = model.file_name().unwrap().to_str().unwrap();
    let bytes = std::fs::read(&model).unwrap();
    let r = request(port, "HEAD", &format!("/models/{name}"));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-length"), Some(&*bytes.len().to_string()));
    assert!(r.body.is_empty());
    let r = request(port, "GET", &format!("/models/{name}"));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/octet-stream"));
    assert_eq!(r.header("content-length"), Some(&*bytes.len().to_string()));
    assert_eq!(&r.body[..4], b"GGUF");
    assert!(r.body == bytes, "the served model differs from the file");
    assert_eq!(request(port, "GET", "/models/other.gguf").status, 404);

    // The API still answers, now with the isolation headers too.
    let r = request(port, "GET", "/v1/models");
    assert_eq!(r.status, 200);
    assert!(String::from_utf8_lossy(&r.body).contains("\"owned_by\":\"tpsmeter\""));
    assert_eq!(r.header("cross-origin-opener-policy"), Some("same-origin"));
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));

    for path in [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/assets/..%2f..%2fsecret.txt",
        "/nope.html",
    ] {
        let r = request(port, "GET", path);
        assert_eq!(r.status, 404, "{path}");
        assert!(
            !String::from_utf8_lossy(&r.body).contains("secret"),
            "{path}"
        );
    }
}

/// `www/public/_headers` (Netlify and Cloudflare Pages): path rule → (header, value) pairs,
/// names lower-cased. Fails on a line it cannot read, so a typo there fails here.
fn static_host_headers() -> HashMap<String, Vec<(String, String)>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../www/public/_headers");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut rules: HashMap<String, Vec<(String, String)>> = HashMap::new();
    let mut current = None;
    for line in text.lines() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        if !line.starts_with(char::is_whitespace) {
            current = Some(line.trim().to_string());
            rules.entry(line.trim().to_string()).or_default();
            continue;
        }
        let (name, value) = line
            .trim()
            .split_once(": ")
            .unwrap_or_else(|| panic!("{line:?}"));
        let rule = current
            .clone()
            .unwrap_or_else(|| panic!("{line:?} before any path"));
        rules
            .get_mut(&rule)
            .unwrap()
            .push((name.to_ascii_lowercase(), value.to_string()));
    }
    assert!(
        rules["/*"].len() >= 6 && rules.contains_key("/assets/*"),
        "{rules:?}"
    );
    rules
}
