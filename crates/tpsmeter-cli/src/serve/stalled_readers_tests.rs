//! The connection loop (`accept`) and its write timeout, over real sockets on 127.0.0.1:
//! clients that ask for a large file and never read it, more of them than
//! [`MAX_CONNECTIONS`], fill every place, and the timeout must give those places back so
//! that a normal client is served; a stream whose server pauses longer than the timeout
//! must not be cut. The site's file streaming (`site.rs`) serves the file, as `--www` does;
//! the GPU engine is not needed, so this runs everywhere.
#![allow(clippy::unwrap_used)]
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::super::http::{error, response};
use super::super::site::Site;
use super::*;

/// Clients that ask for the file and never read: more than the server holds.
const STALLED: usize = 300;

/// The file they ask for: far more than the socket buffers (~130 KiB reach a reader that
/// does not read, on loopback), hyper's buffer and `site.rs`'s read-ahead (1 MiB) hold, so
/// the server is left waiting in a write.
const FILE_BYTES: usize = 16 << 20;

/// Short, so the test takes seconds; long enough that opening the stalled connections is
/// done before the first is cut. (That takes 0.05 to 0.3 s, or 1 s more when the server,
/// busy queueing ~2 MiB for each, lets the listen backlog of 128 fill and a SYN waits out
/// its retransmission.)
const TIMEOUT: Duration = Duration::from_secs(3);

/// A fresh directory under the system's temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let p = std::env::temp_dir().join(format!("tpsmeter-serve-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The test holds a socket per stalled client and the server one per connection, ~2 x 300
/// descriptors in this process: over macOS's default soft limit (256), under Linux's
/// (1024), and other tests run beside it. Raises the soft limit up to the hard one.
#[cfg(unix)]
fn enough_descriptors() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let need = 2 * STALLED as u64 + 200;
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    if soft < need {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, need.max(1024).min(hard), hard);
    }
    let (soft, _) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    assert!(
        soft >= need,
        "this test needs {need} file descriptors; the limit is {soft} (ulimit -n)"
    );
}

#[cfg(not(unix))]
fn enough_descriptors() {}

/// One request on a new connection that closes after the response: (status, body length),
/// or `None` when the connection ended before a status line.
fn request(port: u16, path: &str) -> Option<(u16, usize)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let status = std::str::from_utf8(&raw[..end])
        .ok()?
        .split(' ')
        .nth(1)?
        .parse()
        .ok()?;
    Some((status, raw.len() - end - 4))
}

/// The status a stalled reader was answered with, peeked at: reading would be progress,
/// which restarts the connection's clock. Waits for it until `deadline`.
fn peek_status(s: &TcpStream, deadline: Instant) -> u16 {
    s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let mut head = [0u8; 12];
    loop {
        match s.peek(&mut head) {
            Ok(12) => break,
            Ok(0) => panic!("a stalled reader's connection ended before a status line"),
            Ok(_) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => panic!("a stalled reader's connection failed before a status line: {e}"),
        }
        assert!(
            Instant::now() < deadline,
            "a stalled reader got no status line"
        );
    }
    let head = std::str::from_utf8(&head).unwrap();
    head.strip_prefix("HTTP/1.1 ")
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("a stalled reader got {head:?}"))
}

/// Reads what a closed connection had received, to its end (EOF, or the reset after the
/// bytes that came before it): how many bytes. Panics if it is still open (a read waits
/// 5 s for nothing).
fn drain(mut s: TcpStream) -> usize {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut got = 0;
    let mut buf = vec![0u8; 256 << 10];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got += n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                panic!("a stalled connection is still open after {got} bytes")
            }
            Err(_) => return got,
        }
        assert!(got <= FILE_BYTES + 4096, "read past the file");
    }
}

#[test]
fn stalled_readers_are_cut_and_a_normal_client_is_then_served() {
    enough_descriptors();
    let tmp = TempDir::new("stalled-readers");
    let www = tmp.0.join("www");
    std::fs::create_dir_all(&www).unwrap();
    std::fs::write(www.join("index.html"), "<!doctype html><p>hi</p>").unwrap();
    let model = tmp.0.join("big.gguf");
    std::fs::write(&model, vec![0x47u8; FILE_BYTES]).unwrap();
    let site = Arc::new(Site::open(&www, Some(&model)).unwrap());

    // The server: the real connection loop, answering with the site as `handle` does.
    let (runtime, listener, port) = loopback_server();
    let handle = move |req: Request<Incoming>| {
        let site = site.clone();
        async move {
            let r = site.respond(req.method(), req.uri().path()).await;
            Ok::<_, Infallible>(r.unwrap_or_else(|| error(StatusCode::NOT_FOUND, "not found")))
        }
    };
    let server = runtime.spawn(accept(listener, TIMEOUT, handle));

    // The stalled readers: each sends its request and reads nothing.
    let first = Instant::now();
    let stalled: Vec<TcpStream> = (0..STALLED)
        .map(|_| {
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.write_all(b"GET /models/big.gguf HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            s
        })
        .collect();
    let last = Instant::now();
    let opening = last - first;
    // Whether every place is still taken by a stalled reader: on a machine so loaded that
    // opening them took most of the timeout, the first may be cut already, and what follows
    // checks only that the normal client is served in time and every stalled reader is let
    // go, not how many were turned away.
    let full = opening < TIMEOUT / 2;
    if full {
        // A normal client is turned away.
        assert_eq!(request(port, "/index.html").map(|r| r.0), Some(503));
    } else {
        eprintln!("opening {STALLED} connections took {opening:?}: the cap is not checked");
    }

    // Retried (as Retry-After: 1 asks, but every 20 ms), it is served once the stalled
    // readers are cut: not before the first had waited the timeout, and within 1 s after
    // the last had.
    let deadline = last + TIMEOUT + Duration::from_secs(10);
    let served = loop {
        match request(port, "/index.html") {
            Some((200, 24)) => break Instant::now(),
            Some((503, _)) => {}
            other => panic!("a normal client got {other:?}"),
        }
        assert!(
            Instant::now() < deadline,
            "a normal client was still refused {:?} after {STALLED} stalled readers",
            Instant::now() - last
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let after_timeout = |to: Instant, from: Instant| {
        let at = to - from;
        if at >= TIMEOUT {
            format!("+{} ms", (at - TIMEOUT).as_millis())
        } else {
            format!("-{} ms", (TIMEOUT - at).as_millis())
        }
    };
    eprintln!(
        "{STALLED} stalled readers (opened in {} ms), write timeout {} ms: a normal client \
         was served {} after the timeout counted from the last stalled request ({} from the \
         first)",
        opening.as_millis(),
        TIMEOUT.as_millis(),
        after_timeout(served, last),
        after_timeout(served, first),
    );
    assert!(
        served - first >= TIMEOUT,
        "served {:?} after the first stalled request: cut before the timeout",
        served - first
    );
    assert!(
        served - last <= TIMEOUT + Duration::from_secs(1),
        "served {} after the timeout",
        after_timeout(served, last)
    );

    // The stalled readers: one per place was served (a part of the file), the rest had
    // their 503. Peeked at: reading one still open would be progress, and restart its clock.
    let deadline = last + TIMEOUT + Duration::from_secs(10);
    let statuses: Vec<u16> = stalled.iter().map(|s| peek_status(s, deadline)).collect();
    let cut = statuses.iter().filter(|&&c| c == 200).count();
    let refused = statuses.iter().filter(|&&c| c == 503).count();
    assert_eq!(cut + refused, STALLED, "{statuses:?}");
    if full {
        assert_eq!((cut, refused), (MAX_CONNECTIONS, STALLED - MAX_CONNECTIONS));
    } else {
        assert!(cut >= MAX_CONNECTIONS, "{cut} stalled readers were served");
    }
    // Every one served is cut: the server's reset arrives (a write timeout closes with
    // SO_LINGER 0), each once its own clock has run out.
    let mut open: Vec<&TcpStream> = stalled
        .iter()
        .zip(&statuses)
        .filter_map(|(s, &c)| (c == 200).then_some(s))
        .collect();
    while !open.is_empty() {
        open.retain(|s| s.take_error().unwrap().is_none());
        assert!(
            Instant::now() < deadline,
            "{} stalled readers still held {:?} after the last one's request",
            open.len(),
            Instant::now() - last
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    eprintln!(
        "all {cut} served stalled readers were cut {} after the timeout counted from the last \
         stalled request",
        after_timeout(Instant::now(), last)
    );
    // What they had received ends there, short of the file; the refused ones' 503 ends too.
    for (s, status) in stalled.into_iter().zip(statuses) {
        let got = drain(s);
        if status == 200 {
            assert!(got < FILE_BYTES, "a stalled reader got the whole file");
        }
    }
    // And the server holds none of them: every place is free again, each proven by a
    // whole response on a connection that stays open (keep-alive) and counted.
    let held: Vec<TcpStream> = (0..MAX_CONNECTIONS)
        .map(|i| {
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            s.write_all(b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            let mut raw = Vec::new();
            let mut buf = [0u8; 4096];
            while !raw.ends_with(b"<p>hi</p>") {
                let n = s.read(&mut buf).unwrap();
                assert!(n > 0 && raw.len() < 4096, "connection {i}: {raw:?}");
                raw.extend_from_slice(&buf[..n]);
            }
            assert!(raw.starts_with(b"HTTP/1.1 200"), "connection {i}: {raw:?}");
            s
        })
        .collect();
    drop(held);
    assert!(!server.is_finished(), "the connection loop ended");
    runtime.shutdown_background();
}

/// A stream whose server is the slow one (an SSE generation pausing between tokens), to a
/// client that reads: pauses of several times the write timeout never cut it, as no write
/// waits on the client in between.
#[test]
fn a_slow_stream_to_a_reading_client_is_never_cut() {
    let timeout = Duration::from_millis(100);
    let pause = 3 * timeout;
    let (runtime, listener, port) = loopback_server();
    let handle = move |_req: Request<Incoming>| async move {
        let (body, tx) = ChannelBody::channel();
        tokio::spawn(async move {
            for i in 0..5 {
                tokio::time::sleep(pause).await;
                if tx.send(Bytes::from(format!("data: {i}\n\n"))).is_err() {
                    return;
                }
            }
        });
        Ok::<_, Infallible>(response(StatusCode::OK, "text/event-stream", body))
    };
    let _server = runtime.spawn(accept(listener, timeout, handle));

    let start = Instant::now();
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /v1/stream HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let took = start.elapsed();
    let raw = String::from_utf8(raw).unwrap();
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    for i in 0..5 {
        assert!(
            raw.contains(&format!("data: {i}\n\n")),
            "event {i} missing: {raw}"
        );
    }
    // The whole stream, chunked to its terminating chunk: not cut short.
    assert!(raw.ends_with("\r\n0\r\n\r\n"), "{raw:?}");
    assert!(took >= 5 * pause, "the stream took only {took:?}");
    runtime.shutdown_background();
}

/// The runtime a test's server runs on, its listener on a free loopback port, and the port.
fn loopback_server() -> (tokio::runtime::Runtime, TcpListener, u16) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
    let port = listener.local_addr().unwrap().port();
    (runtime, listener, port)
}
