//! The connection loop: how many connections the server holds, how long a client may take
//! to send or to read, and the answer to one connection too many.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::api_error::ApiError;
use super::body::ChannelBody;
use super::write_timeout::WriteTimeout;
use crate::exit::Status;

/// Connections served at once; one more is answered 503 and closed at once. Each may hold
/// a request body of up to [`MAX_BODY_BYTES`](super::MAX_BODY_BYTES) and hyper's header buffer (~400 KiB), so this
/// bounds the server's memory whatever clients do; requests beyond `--parallel` wait in
/// the queue, which this bounds too.
pub const MAX_CONNECTIONS: usize = 256;

/// Most bytes a connection's socket queues unsent before a write waits (Linux's
/// `TCP_NOTSENT_LOWAT`; 16 KiB, the value Apple and Cloudflare serve HTTP with).
#[cfg(target_os = "linux")]
const NOTSENT_LOWAT: u32 = 16 << 10;

/// A client has this long to send its request headers (slow-header clients hold a
/// connection for nothing) and, separately, its body.
pub const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A connection whose client leaves the server unable to write one byte of its response for
/// this long (it asked for a download or a stream and does not read it) is closed, and its
/// place among the [`MAX_CONNECTIONS`] freed: without this, 256 such clients would shut
/// every other one out for as long as they liked. The clock runs only while a write waits
/// for the client (see `write_timeout.rs`), so a slow generation (the server is the slow
/// one) is never cut, nor a slow download that keeps reading. 30 s: a live client frees
/// room in its socket far more often (a lossy link's retransmissions back off to such
/// gaps only when the link is as good as gone), and the time such clients can hold a
/// place stays short (nginx's `send_timeout`, the same limit, is 60 s).
pub const WRITE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The connection loop: serves each connection accepted on `listener` with `handle`, at
/// most [`MAX_CONNECTIONS`] at once, each with [`READ_TIMEOUT`] for its headers and
/// `write_timeout` for each wait on its client's reading ([`WRITE_TIMEOUT`] but in tests).
/// Returns only on an error of the listener.
pub(super) async fn accept<H, F>(
    listener: TcpListener,
    write_timeout: std::time::Duration,
    handle: H,
) -> anyhow::Result<Status>
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + 'static,
    F: Future<Output = Result<Response<ChannelBody>, Infallible>> + Send + 'static,
{
    let open = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let (mut stream, _) = match listener.accept().await {
            Ok(c) => c,
            // Out of file descriptors and the like: the listener itself is fine, so keep
            // serving the connections already open and retry shortly.
            Err(e) if is_transient(&e) => {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let _ = stream.set_nodelay(true);
        // Writes wait once this much is queued unsent (what is in flight does not count, so
        // a reading client's throughput is untouched): the kernel holds tens of KiB for a
        // client that does not read rather than its whole autotuned buffer (116 KB of a
        // stream after a minute, still growing, on loopback), so the write timeout and a
        // stream's stall (`complete.rs`) see such a client within seconds.
        #[cfg(target_os = "linux")]
        let _ = socket2::SockRef::from(&stream).set_tcp_notsent_lowat(NOTSENT_LOWAT);
        let Ok(permit) = open.clone().try_acquire_owned() else {
            // Answered without reading the request: the client learns why, the server spends
            // nothing more on it.
            tokio::spawn(async move {
                let body = ApiError::status(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "too_many_connections",
                    format!("the server holds {MAX_CONNECTIONS} connections already; retry later"),
                )
                .body()
                .to_string();
                let head = format!(
                    "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
                     content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let write = async {
                    stream.write_all(head.as_bytes()).await?;
                    stream.write_all(body.as_bytes()).await?;
                    stream.shutdown().await?;
                    // A lingering close: closing with the request unread would make the
                    // kernel reset the connection, and a reset can discard the 503 before
                    // the client reads it. Drain a bounded amount for a short while first.
                    let mut sink = [0u8; 4096];
                    let mut left = 64usize << 10;
                    while left > 0 {
                        let n = tokio::io::AsyncReadExt::read(&mut stream, &mut sink).await?;
                        if n == 0 {
                            break;
                        }
                        left = left.saturating_sub(n);
                    }
                    std::io::Result::Ok(())
                };
                let _ = tokio::time::timeout(std::time::Duration::from_secs(1), write).await;
            });
            continue;
        };
        let handle = handle.clone();
        tokio::spawn(async move {
            // A client that stops reading fails the write hyper waits in, which ends the
            // connection and gives its permit back.
            let io = WriteTimeout::new(stream, write_timeout);
            // Each request learns whether its connection's writes are waiting (a stream
            // stops generating for a client that does not read: `complete.rs`).
            let stall = io.stall();
            let service = service_fn(move |mut req: Request<Incoming>| {
                req.extensions_mut().insert(Arc::clone(&stall));
                handle(req)
            });
            let _ = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(READ_TIMEOUT)
                .serve_connection(TokioIo::new(io), service)
                .await;
            drop(permit);
        });
    }
}

/// Accept errors that say nothing about the listener (a descriptor limit, a connection
/// reset before it was accepted).
fn is_transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | Interrupted | WouldBlock
    ) || e.raw_os_error().is_some_and(|c| c == 23 || c == 24) // ENFILE, EMFILE
}

#[cfg(test)]
#[path = "stalled_readers_tests.rs"]
mod stalled_readers_tests;
