//! `tpsmeter serve --www`: the binary serves the site, the model file and the API on one
//! origin, with the isolation headers, refuses traversal on the wire, and serves neither
//! to a page elsewhere (a rebound Host name, a foreign Origin).
//!
//! The end-to-end test loads `TPSMETER_MODEL` (a GGUF) with `--backend auto` (the CPU where
//! lavapipe is all). Without the model it fails when `TPSMETER_REQUIRE_ASSETS=1` (CI) and
//! skips with a message otherwise. Requests are written by hand over TCP: an HTTP client
//! would normalise the `..` out of a traversal attempt before sending it.
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
    send(port, method, path, &[("Host", "127.0.0.1")], "")
}

/// One HTTP/1.1 request with `Connection: close`, with exactly these headers (and a
/// Content-Length for a body).
fn send(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    for (k, v) in headers {
        head += &format!("{k}: {v}\r\n");
    }
    if !body.is_empty() {
        head += &format!("Content-Length: {}\r\n", body.len());
    }
    write!(s, "{head}Connection: close\r\n\r\n{body}").unwrap();
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

/// Regression (issue 35): `serve` answered any Host and echoed any Origin, so a page on
/// another site could read the model through DNS rebinding (`Host: attacker.example` got
/// the GGUF) and run completions with a `text/plain` POST (no preflight), its origin
/// allowed. Now: only names that cannot be rebound are answered, and only the server's own
/// origin and `--allowed-origin` ones may call it; others get a 403 and no CORS header.
#[test]
fn a_page_elsewhere_can_neither_read_the_model_nor_use_the_api() {
    let Some([model]) = assets(
        "a_page_elsewhere_can_neither_read_the_model_nor_use_the_api",
        ["TPSMETER_MODEL"],
    ) else {
        return;
    };
    let www = temp_dir("access").join("www");
    std::fs::create_dir_all(&www).unwrap();
    std::fs::write(www.join("index.html"), "<!doctype html><p>hi</p>").unwrap();
    let port = free_port();
    let _server = start(
        tpsmeter()
            .arg("serve")
            .arg("--model")
            .arg(&model)
            .args(["--port", &port.to_string(), "--context", "256", "--www"])
            .arg(&www)
            .args(["--allowed-origin", "https://bench.example"])
            .args(["--allowed-host", "my-pc.lan"])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit()),
        port,
        "tpsmeter serve",
    );
    let gguf = format!("/models/{}", model.file_name().unwrap().to_str().unwrap());
    let chat = r#"{"messages":[{"role":"user","content":"Say hi."}],"max_tokens":2}"#;
    let error_code = |r: &Reply| -> String {
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        v["error"]["code"].as_str().unwrap_or_default().to_owned()
    };

    // DNS rebinding: a name the attacker owns, pointed at 127.0.0.1. Nothing is served.
    for host in ["attacker.example", &format!("attacker.example:{port}")] {
        for (method, path, body) in [
            ("GET", gguf.as_str(), ""),
            ("HEAD", gguf.as_str(), ""),
            ("GET", "/", ""),
            ("GET", "/v1/models", ""),
            ("POST", "/v1/chat/completions", chat),
        ] {
            let r = send(port, method, path, &[("Host", host)], body);
            assert_eq!(r.status, 403, "{method} {path} Host: {host}");
            assert!(!r.body.starts_with(b"GGUF"), "{method} {path}");
            if method != "HEAD" {
                assert_eq!(error_code(&r), "host_not_allowed", "{method} {path}");
            }
        }
    }
    // Loopback names and addresses, and the name given with --allowed-host, are served.
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        "127.0.0.2".to_owned(),
        format!("my-pc.lan:{port}"),
    ] {
        let r = send(port, "HEAD", &gguf, &[("Host", &host)], "");
        assert_eq!(r.status, 200, "Host: {host}");
        let r = send(port, "GET", "/v1/models", &[("Host", &host)], "");
        assert_eq!(r.status, 200, "Host: {host}");
    }

    // A page elsewhere: its simple POST (no preflight) runs nothing, and no CORS header lets
    // it read even the refusal; its preflight fails the same way.
    let host = format!("127.0.0.1:{port}");
    let evil = [
        ("Host", host.as_str()),
        ("Origin", "https://evil.example"),
        ("Content-Type", "text/plain;charset=UTF-8"),
    ];
    let r = send(port, "POST", "/v1/chat/completions", &evil, chat);
    assert_eq!(r.status, 403);
    assert_eq!(error_code(&r), "origin_not_allowed");
    assert_eq!(r.header("access-control-allow-origin"), None);
    let r = send(port, "OPTIONS", "/v1/chat/completions", &evil[..2], "");
    assert_eq!(r.status, 403);
    assert_eq!(r.header("access-control-allow-origin"), None);
    assert_eq!(r.header("access-control-allow-methods"), None);
    let r = send(port, "GET", &gguf, &evil[..2], "");
    assert_eq!(r.status, 403);
    assert!(!r.body.starts_with(b"GGUF"));

    // The origin given with --allowed-origin calls it and reads the answer.
    let bench = [
        ("Host", host.as_str()),
        ("Origin", "https://bench.example"),
        ("Content-Type", "text/plain;charset=UTF-8"),
    ];
    let r = send(port, "OPTIONS", "/v1/chat/completions", &bench[..2], "");
    assert_eq!(r.status, 204);
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://bench.example")
    );
    let r = send(port, "POST", "/v1/chat/completions", &bench, chat);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://bench.example")
    );
    assert_eq!(
        r.header("timing-allow-origin"),
        Some("https://bench.example")
    );

    // The server's own page (the --www site): by its origin, or, from a `no-referrer` page
    // in a browser that follows the Fetch standard there, by `Origin: null` with the
    // browser's `Sec-Fetch-Site: same-origin`.
    let own = format!("http://127.0.0.1:{port}");
    let r = send(
        port,
        "POST",
        "/v1/chat/completions",
        &[("Host", &host), ("Origin", &own)],
        chat,
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let r = send(
        port,
        "POST",
        "/v1/chat/completions",
        &[
            ("Host", &host),
            ("Origin", "null"),
            ("Sec-Fetch-Site", "same-origin"),
        ],
        chat,
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let r = send(
        port,
        "POST",
        "/v1/chat/completions",
        &[
            ("Host", &host),
            ("Origin", "null"),
            ("Sec-Fetch-Site", "cross-site"),
        ],
        chat,
    );
    assert_eq!(r.status, 403, "a sandboxed frame elsewhere");
    // No Origin (curl, tpsmeter bench): served, without CORS headers.
    let r = send(
        port,
        "POST",
        "/v1/chat/completions",
        &[("Host", &host)],
        chat,
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("access-control-allow-origin"), None);
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
