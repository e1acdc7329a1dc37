//! When a request's first bytes reached this machine: the kernel's receive timestamp
//! (`SO_TIMESTAMPNS`, read with `recvmsg`), not the moment the handler ran.
//!
//! The emulator serves all streams on one thread. When a hundred clients send at once, the
//! hundredth request's handler runs ~1 ms after its bytes arrived, and a timing benchmark
//! that took the handler's start as the arrival charged that queueing to the client under
//! test (its TTFT looked ~1 ms too long at concurrency 100). The kernel stamps each packet
//! as it is queued on the socket, whatever this process is doing; the schedule (TTFT from
//! arrival) then also runs from the true arrival.
//!
//! [`StampedStream`] reads through `recvmsg` and keeps the stamp of the first read since the
//! last [`Arrivals::take`]. The handler takes it as it starts (hyper calls it once the head is
//! parsed) and again once the body is read, discarding the body's reads: on an HTTP/1.1
//! connection without pipelining, the next stamp kept is the next request's first packet.

use std::io::IoSliceMut;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::rt::TokioIo;
use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg, setsockopt, sockopt};
use nix::sys::time::TimeSpec;
use tokio::io::Interest;
use tokio::net::TcpStream;

/// The arrival stamps of one connection, shared with its request handler.
#[derive(Debug, Clone, Default)]
pub struct Arrivals(Arc<Mutex<Option<Instant>>>);

impl Arrivals {
    /// The arrival of the request being handled: the first read since the last call, or
    /// `None` when the kernel gave no stamp (the caller falls back to its own clock).
    pub fn take(&self) -> Option<Instant> {
        self.0.lock().ok().and_then(|mut a| a.take())
    }

    fn note(&self, at: Instant) {
        if let Ok(mut a) = self.0.lock() {
            a.get_or_insert(at);
        }
    }
}

/// A TCP stream for hyper whose reads keep the kernel's receive stamps.
#[derive(Debug)]
pub struct StampedStream {
    io: TokioIo<TcpStream>,
    arrivals: Arrivals,
    /// Whether the socket gives stamps (`SO_TIMESTAMPNS` was accepted).
    stamps: bool,
}

impl StampedStream {
    pub fn new(stream: TcpStream) -> (Self, Arrivals) {
        let stamps = setsockopt(&stream, sockopt::ReceiveTimestampns, &true).is_ok();
        let arrivals = Arrivals::default();
        (
            Self {
                io: TokioIo::new(stream),
                arrivals: arrivals.clone(),
                stamps,
            },
            arrivals,
        )
    }
}

/// `CLOCK_REALTIME` (the kernel's stamp) to an `Instant` (`CLOCK_MONOTONIC`), through the
/// offset between the two clocks read now. The wall clock is read between two monotonic
/// reads, keeping the tightest of a few tries: a thread preempted between the two reads (a
/// busy 2-core machine does that) would otherwise shift the stamp by the preemption. A stamp
/// from the future is clamped to now.
fn to_instant(ts: TimeSpec) -> Option<Instant> {
    let stamp = Duration::new(
        u64::try_from(ts.tv_sec()).ok()?,
        u32::try_from(ts.tv_nsec()).ok()?,
    );
    let mut best: Option<(Duration, Instant, Duration)> = None;
    for _ in 0..4 {
        let before = Instant::now();
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).ok()?;
        let after = Instant::now();
        let width = after - before;
        if best.is_none_or(|(w, ..)| width < w) {
            best = Some((width, before + width / 2, wall));
        }
        if width < Duration::from_micros(2) {
            break;
        }
    }
    let (_, now, wall) = best?;
    Some(now.checked_sub(wall.saturating_sub(stamp)).unwrap_or(now))
}

impl Read for StampedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if !this.stamps {
            return Pin::new(&mut this.io).poll_read(cx, buf);
        }
        let stream = this.io.inner();
        let mut local = [0u8; 16 << 10];
        let want = buf.remaining().min(local.len());
        loop {
            ready!(stream.poll_read_ready(cx))?;
            let mut cmsg = nix::cmsg_space!(TimeSpec);
            let read = stream.try_io(Interest::READABLE, || {
                let mut iov = [IoSliceMut::new(&mut local[..want])];
                let msg = recvmsg::<()>(
                    stream.as_raw_fd(),
                    &mut iov,
                    Some(&mut cmsg),
                    MsgFlags::empty(),
                )
                .map_err(std::io::Error::from)?;
                let at = msg.cmsgs().ok().and_then(|mut c| {
                    c.find_map(|m| match m {
                        ControlMessageOwned::ScmTimestampns(ts) => Some(ts),
                        _ => None,
                    })
                });
                Ok((msg.bytes, at))
            });
            match read {
                Ok((n, at)) => {
                    if n > 0 {
                        if let Some(at) = at.and_then(to_instant) {
                            this.arrivals.note(at);
                        }
                    }
                    buf.put_slice(&local[..n]);
                    return Poll::Ready(Ok(()));
                }
                // Readiness was stale: wait for the next.
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl Write for StampedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::io::Write as _;

    /// The stamp is when the bytes arrived, not when they were read: bytes read 30 ms after
    /// they were written keep a stamp within the write's bracket.
    #[test]
    fn the_arrival_is_the_kernels_stamp_not_the_read() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let mut client = std::net::TcpStream::connect(addr).unwrap();
            let (server, _) = listener.accept().await.unwrap();
            let (io, arrivals) = StampedStream::new(server);
            // hyper's Read, as tokio's AsyncRead.
            let mut io = TokioIo::new(io);
            let mut buf = [0u8; 64];
            // The kernel turns receive stamps on for the whole stack in deferred work after
            // the first socket asks: in a fresh process the first packets may carry none (the
            // emulator then falls back to its own clock). Wait until a probe byte has one.
            let mut stamped = false;
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                client.write_all(b"x").unwrap();
                let n = tokio::io::AsyncReadExt::read(&mut io, &mut buf)
                    .await
                    .unwrap();
                assert_eq!(&buf[..n], b"x");
                if arrivals.take().is_some() {
                    stamped = true;
                    break;
                }
                tokio::task::yield_now().await;
            }
            assert!(stamped, "the kernel never stamped a received packet");
            let before = Instant::now();
            client.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
            let after = Instant::now();
            tokio::time::sleep(Duration::from_millis(30)).await;
            let n = tokio::io::AsyncReadExt::read(&mut io, &mut buf)
                .await
                .unwrap();
            let read_at = Instant::now();
            assert_eq!(&buf[..n], b"GET / HTTP/1.1\r\n\r\n");
            let at = arrivals.take().expect("no kernel stamp");
            let slack = Duration::from_millis(1);
            assert!(
                at + slack >= before && at <= after + slack,
                "stamp outside the write"
            );
            assert!(
                read_at - at >= Duration::from_millis(25),
                "the stamp is the read's"
            );
            assert!(arrivals.take().is_none(), "a stamp taken twice");
        });
    }
}
