//! A connection's socket whose writes fail once the peer has let none through for a while: a
//! client that asks for a large file (or a stream) and never reads would otherwise hold its
//! connection, and one of the server's [`MAX_CONNECTIONS`](super::MAX_CONNECTIONS), forever.
//!
//! The stall is measured where it happens, at the socket: hyper writes until the kernel's
//! send buffer (and the peer's receive window) is full, then waits in `poll_write`. A timeout
//! on the response body's frames would not see that wait (hyper stops asking the body for
//! frames while its own buffer is full), and one on the whole response would cut a slow
//! but live download. Here the clock runs only while a write is waiting for the peer, and
//! starts over whenever a write goes through; a server that is itself slow to produce (an
//! SSE stream of a slow generation) has no write waiting in between and is never cut.
//!
//! Progress is what the kernel lets the server write, not what the peer reads: once the send
//! buffer is full, Linux makes the socket writable again only when about a third of it is
//! free. A peer that reads, but so slowly that this takes longer than the timeout, counts as
//! stalled too: on a real link the buffer is about twice what is in flight, so only a
//! trickle does; on loopback, where it grows to MiBs, under ~50 KB/s for 30 s.
//!
//! On a timeout the socket is closed with a reset (`SO_LINGER` 0) rather than a FIN: the
//! bytes still queued for a peer that does not read are dropped at once instead of being
//! kept by the kernel, retried against a zero window, for minutes after the connection's
//! permit is back.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

/// Whether a connection's write is waiting for its peer, and since when: shared with the
/// requests on the connection, so a stream can stop generating for a client that does not
/// read long before the connection's own [`WriteTimeout`] closes it (`complete.rs`).
#[derive(Debug)]
pub struct WriteStall {
    epoch: std::time::Instant,
    /// Microseconds from `epoch` to the start of the wait, plus one; 0 while none waits.
    since_us: AtomicU64,
}

impl WriteStall {
    fn new() -> Self {
        Self {
            epoch: std::time::Instant::now(),
            since_us: AtomicU64::new(0),
        }
    }

    fn start(&self) {
        let us = u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX - 1);
        self.since_us.store(us + 1, Ordering::Relaxed);
    }

    fn clear(&self) {
        self.since_us.store(0, Ordering::Relaxed);
    }

    /// How long the write that is waiting has waited; zero when none waits.
    pub fn waited(&self) -> Duration {
        match self.since_us.load(Ordering::Relaxed) {
            0 => Duration::ZERO,
            at => self
                .epoch
                .elapsed()
                .saturating_sub(Duration::from_micros(at - 1)),
        }
    }
}

/// A connection's socket on which no write waits for the peer longer than `timeout`.
#[derive(Debug)]
pub struct WriteTimeout {
    io: TcpStream,
    timeout: Duration,
    stall: Arc<WriteStall>,
    /// When the write that is waiting fails; set at the first `Pending` since a write last
    /// went through.
    deadline: Pin<Box<Sleep>>,
    waiting: bool,
}

impl WriteTimeout {
    pub fn new(io: TcpStream, timeout: Duration) -> Self {
        Self {
            io,
            timeout,
            stall: Arc::new(WriteStall::new()),
            deadline: Box::pin(tokio::time::sleep(timeout)),
            waiting: false,
        }
    }

    /// The connection's wait state, for its requests.
    pub fn stall(&self) -> Arc<WriteStall> {
        Arc::clone(&self.stall)
    }

    /// Passes a write's result through, keeping the clock: progress stops it, a wait starts
    /// it (if it is not running), and a wait past the deadline is an error.
    fn progress(
        &mut self,
        cx: &mut Context<'_>,
        r: Poll<io::Result<usize>>,
    ) -> Poll<io::Result<usize>> {
        match r {
            Poll::Pending => {
                if !self.waiting {
                    self.waiting = true;
                    self.stall.start();
                    let at = Instant::now() + self.timeout;
                    self.deadline.as_mut().reset(at);
                }
                // Polled here so that the deadline wakes the connection's task even while the
                // socket never turns writable.
                if self.deadline.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                // Dropped by hyper after this error: the close is then a reset.
                let _ = self.io.set_zero_linger();
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "the client took none of the response for {} s",
                        self.timeout.as_secs_f64()
                    ),
                )))
            }
            done => {
                self.waiting = false;
                self.stall.clear();
                done
            }
        }
    }
}

impl AsyncRead for WriteTimeout {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl AsyncWrite for WriteTimeout {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_write(cx, buf);
        this.progress(cx, r)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.progress(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    /// A TCP flush and shutdown wait for nothing, and say nothing about the peer's reading:
    /// they leave the clock alone.
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// A connected pair on loopback: (the server's end, wrapped; the client's end).
    async fn pair(timeout: Duration) -> (WriteTimeout, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap());
        let (client, accepted) = tokio::join!(client, listener.accept());
        (
            WriteTimeout::new(accepted.unwrap().0, timeout),
            client.unwrap(),
        )
    }

    /// A peer that never reads: the writes fill the socket's buffers, then fail within a
    /// little more than the timeout, and the peer sees the connection reset.
    #[tokio::test]
    async fn a_peer_that_never_reads_is_cut_after_the_timeout() {
        let timeout = Duration::from_millis(300);
        let (mut server, mut client) = pair(timeout).await;
        let chunk = vec![7u8; 64 << 10];
        let start = std::time::Instant::now();
        let mut sent = 0usize;
        let err = loop {
            match server.write(&chunk).await {
                Ok(n) => sent += n,
                Err(e) => break e,
            }
            // Loopback buffers hold a few MiB at most.
            assert!(
                sent < 256 << 20,
                "{sent} bytes written to a peer that never reads"
            );
        };
        let waited = start.elapsed();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
        assert!(
            waited >= timeout && waited < timeout + Duration::from_secs(2),
            "cut after {waited:?}"
        );
        drop(server);
        // Whatever the peer had received before the reset, it ends there (EOF or reset).
        let mut got = 0usize;
        let mut buf = vec![0u8; 1 << 16];
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let read = tokio::time::timeout(Duration::from_secs(5), client.read(&mut buf)).await;
            match read.expect("the connection stayed open") {
                Ok(0) | Err(_) => break,
                Ok(n) => got += n,
            }
            assert!(std::time::Instant::now() < deadline);
        }
        assert!(got < sent, "the peer read all {sent} bytes: no reset");
    }

    /// A slow writer (the server producing slowly, as a long generation does) to a peer that
    /// reads: pauses several times the timeout between writes never trip it.
    #[tokio::test]
    async fn a_slow_producer_is_never_cut() {
        let timeout = Duration::from_millis(100);
        let (mut server, mut client) = pair(timeout).await;
        let reader = tokio::spawn(async move {
            let mut all = Vec::new();
            client.read_to_end(&mut all).await.unwrap();
            all
        });
        for i in 0..5u8 {
            tokio::time::sleep(3 * timeout).await;
            server.write_all(&[i; 1000]).await.unwrap();
        }
        server.shutdown().await.unwrap();
        drop(server);
        assert_eq!(reader.await.unwrap().len(), 5000);
    }

    /// A peer that reads slowly but steadily (a download over a slow link) takes longer than
    /// the timeout in all, yet never leaves the writer waiting that long: it gets everything.
    /// (On loopback the send buffer grows to MiBs, and the kernel lets the writer on only
    /// once a third of it is free: the reader must take ~1.5 MiB per timeout.)
    #[tokio::test]
    async fn a_slow_reader_that_keeps_reading_gets_everything() {
        let timeout = Duration::from_secs(1);
        let (mut server, mut client) = pair(timeout).await;
        let total = 32usize << 20;
        // At most 128 KiB per 5 ms: 256 reads, 1.28 s at least.
        let reader = tokio::spawn(async move {
            let mut got = 0usize;
            let mut buf = vec![0u8; 128 << 10];
            loop {
                let n = client.read(&mut buf).await.unwrap();
                if n == 0 {
                    return got;
                }
                got += n;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
        let chunk = vec![1u8; 256 << 10];
        let start = std::time::Instant::now();
        for _ in 0..total / chunk.len() {
            server.write_all(&chunk).await.unwrap();
        }
        server.shutdown().await.unwrap();
        drop(server);
        assert_eq!(reader.await.unwrap(), total);
        let took = start.elapsed();
        assert!(
            took > timeout,
            "the download took only {took:?}: not a slow reader"
        );
    }
}
