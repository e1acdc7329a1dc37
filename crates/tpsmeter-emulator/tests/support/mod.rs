//! A raw HTTP/1.1 client for the tests: one request over a plain TCP socket, the response read
//! to EOF and de-chunked by hand, so the tests see exactly what went on the wire (including a
//! missing final chunk).

#![allow(clippy::unwrap_used, dead_code)]

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// What came back.
#[derive(Debug)]
pub struct Raw {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The de-chunked body.
    pub body: Vec<u8>,
    /// Whether the chunked body ended with its final zero-length chunk.
    pub terminated: bool,
    /// From the request's write to the first response byte.
    pub first_byte: Duration,
}

impl Raw {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }
}

/// POSTs `body` to `base` + `path` with `Connection: close` and reads the whole response.
pub async fn post(base: &str, path: &str, body: &str) -> Raw {
    send(
        base,
        "POST",
        path,
        &[("Content-Type", "application/json")],
        body,
    )
    .await
}

/// Sends `method` to `base` + `path` with `headers` (plus `Host`, `Content-Length` and
/// `Connection: close`) and reads the whole response.
pub async fn send(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Raw {
    let addr = base.strip_prefix("http://").unwrap();
    let mut s = TcpStream::connect(addr).await.unwrap();
    let extra: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{extra}\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let start = Instant::now();
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let mut first_byte = None;
    let mut chunk = [0u8; 65536];
    loop {
        match s.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                first_byte.get_or_insert_with(|| start.elapsed());
                buf.extend_from_slice(&chunk[..n]);
            }
        }
    }
    parse(&buf, first_byte.unwrap_or_default())
}

fn parse(buf: &[u8], first_byte: Duration) -> Raw {
    let head_end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = std::str::from_utf8(&buf[..head_end]).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.trim().to_owned(), v.trim().to_owned())
        })
        .collect();
    let rest = &buf[head_end + 4..];
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if !chunked {
        return Raw {
            status,
            headers,
            body: rest.to_vec(),
            terminated: true,
            first_byte,
        };
    }
    let (body, terminated) = dechunk(rest);
    Raw {
        status,
        headers,
        body,
        terminated,
        first_byte,
    }
}

/// Decodes `Transfer-Encoding: chunked`, stopping at whatever is incomplete.
fn dechunk(mut rest: &[u8]) -> (Vec<u8>, bool) {
    let mut body = Vec::new();
    loop {
        let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else {
            return (body, false);
        };
        let size_str = std::str::from_utf8(&rest[..eol]).unwrap();
        let size = usize::from_str_radix(size_str.split(';').next().unwrap().trim(), 16).unwrap();
        rest = &rest[eol + 2..];
        if size == 0 {
            return (body, rest.starts_with(b"\r\n"));
        }
        if rest.len() < size + 2 {
            body.extend_from_slice(&rest[..rest.len().min(size)]);
            return (body, false);
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

/// Splits an SSE body into (event name, data) pairs; `sep` is the event separator the API
/// uses. Test-only: the emulator writes one `data:` line per event.
pub fn sse_events(body: &str, sep: &str) -> Vec<(Option<String>, String)> {
    body.split(sep)
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let mut name = None;
            let mut data = String::new();
            for line in e.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = Some(n.to_owned());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data = d.to_owned();
                }
            }
            (name, data)
        })
        .collect()
}
