//! When bytes reached this machine: TCP reads for hyper that keep the kernel's receive
//! timestamp (`SO_TIMESTAMPNS`, read with `recvmsg`), not the moment the reader ran.
//!
//! A process that stamps a read when its task gets to it also counts every other task that
//! ran first. Two users of that:
//!
//! - **The emulator** serves all streams on one thread. When a hundred clients send at once,
//!   the hundredth request's handler runs ~1 ms after its bytes arrived; taking the
//!   handler's start as the arrival charged that queueing to the client under test. It takes
//!   [`Stamps::take_first`] as a handler starts (hyper calls it once the head is parsed) and
//!   again once the body is read, discarding the body's reads: on an HTTP/1.1 connection
//!   without pipelining, the next stamp kept is the next request's first packet.
//! - **`tpsmeter bench`'s plain-http client** reads a hundred streams on two cores: a chunk's
//!   stamp taken when its task ran waited for the parsing of every chunk that arrived in the
//!   same burst (p99 1.5-3 ms at concurrency 100). With the `client` feature,
//!   [`StampedStream`] is a hyper-util connection whose [`Stamps`] ride in every response's
//!   extensions, and the runner takes [`Stamps::last`] for each body frame.
//!
//! The kernel stamps each packet as it is queued on the socket, whatever this process is
//! doing. A `recvmsg` that drains several packets reports the last one's: the arrival of
//! the newest byte read, which is when the data read became complete.
//!
//! The other direction, when a response frame left, is [`Departures`] (the emulator's send
//! stamps; see `departure.rs`).
//!
//! Linux only (`SO_TIMESTAMPNS`, `SO_TIMESTAMPING`); elsewhere the crate is empty and callers use their own
//! clock. It does no I/O of its own beyond the reads it is asked for.

#![cfg(target_os = "linux")]

mod departure;

pub use departure::{Departure, Departures};

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

/// The receive stamps of one connection's reads, shared with whoever reads its requests or
/// responses.
#[derive(Debug, Clone, Default)]
pub struct Stamps(Arc<Mutex<State>>);

#[derive(Debug, Default)]
struct State {
    /// The first stamped read since the last [`Stamps::take_first`].
    first: Option<Instant>,
    /// The latest read that returned bytes: its stamp, `None` when the kernel gave none.
    last: Option<Instant>,
}

impl Stamps {
    /// The arrival of the first read since the last call (a request's first packet, for a
    /// server), or `None` when no read since had a stamp (the caller uses its own clock).
    pub fn take_first(&self) -> Option<Instant> {
        self.0.lock().ok().and_then(|mut s| s.first.take())
    }

    /// The arrival of the newest bytes read so far, or `None` when the kernel gave the
    /// latest read no stamp. hyper hands out a body frame only from bytes of its latest read
    /// (it reads again only when its buffer is empty), so read right after a frame it is
    /// that frame's arrival, or a later read's if hyper read again in between: never
    /// earlier than the truth.
    pub fn last(&self) -> Option<Instant> {
        self.0.lock().ok().and_then(|s| s.last)
    }

    fn note(&self, at: Option<Instant>) {
        if let Ok(mut s) = self.0.lock() {
            s.last = at;
            if s.first.is_none() {
                s.first = at;
            }
        }
    }
}

/// A TCP stream for hyper whose reads keep the kernel's receive stamps.
#[derive(Debug)]
pub struct StampedStream {
    io: TokioIo<TcpStream>,
    stamps: Stamps,
    /// Whether the socket gives stamps (`SO_TIMESTAMPNS` was accepted).
    enabled: bool,
    /// Transmit stamps, when asked for and the kernel gives them.
    departures: Option<Departures>,
}

impl StampedStream {
    /// Wraps `stream`, asking the kernel to stamp its packets; without that (a kernel that
    /// refuses) reads pass straight through and [`Stamps`] stay empty.
    pub fn new(stream: TcpStream) -> (Self, Stamps) {
        let enabled = setsockopt(&stream, sockopt::ReceiveTimestampns, &true).is_ok();
        let stamps = Stamps::default();
        (
            Self {
                io: TokioIo::new(stream),
                stamps: stamps.clone(),
                enabled,
                departures: None,
            },
            stamps,
        )
    }

    /// [`StampedStream::new`] that also stamps transmissions, for a server: the frames it
    /// [`Departures::watch`]es get the kernel's time of their write.
    pub fn with_departures(stream: TcpStream) -> (Self, Stamps, Departures) {
        let departures = Departures::enable(&stream);
        let (mut io, stamps) = Self::new(stream);
        io.departures = departures.is_enabled().then(|| departures.clone());
        (io, stamps, departures)
    }

    /// Reads the transmit stamps queued so far (every one: see `departure.rs` on why). A
    /// stream holds departures only where the kernel took the option, and stamps may still
    /// be queued after it stopped stamping.
    fn drain_departures(&self) {
        if let Some(d) = &self.departures {
            d.drain(self.io.inner());
        }
    }

    /// After a write of `bufs`: notes what it took (nothing unless `Ready(Ok)`, which makes
    /// it partial) and reads the stamps. On loopback the kernel stamps within the write.
    fn wrote(&self, bufs: &[std::io::IoSlice<'_>], r: &Poll<std::io::Result<usize>>) {
        if let Some(d) = &self.departures {
            let n = match r {
                Poll::Ready(Ok(n)) => *n,
                _ => 0,
            };
            d.wrote(self.io.inner(), bufs, n);
        }
        self.drain_departures();
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
        // A stamp the kernel queued after the last write (a deferred packet) is read here, as
        // hyper waits for the next request.
        this.drain_departures();
        if !this.enabled {
            return Pin::new(&mut this.io).poll_read(cx, buf);
        }
        let stream = this.io.inner();
        let mut local = [0u8; 16 << 10];
        let want = buf.remaining().min(local.len());
        loop {
            ready!(stream.poll_read_ready(cx))?;
            // Room for an SCM_TIMESTAMPING too: with transmit stamps on
            // (`SOF_TIMESTAMPING_SOFTWARE`), received packets carry one beside ours.
            let mut cmsg = nix::cmsg_space!(TimeSpec, nix::sys::socket::Timestamps);
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
                        this.stamps.note(at.and_then(to_instant));
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
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_write(cx, buf);
        this.wrote(&[std::io::IoSlice::new(buf)], &r);
        r
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        this.drain_departures();
        Pin::new(&mut this.io).poll_flush(cx)
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
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.wrote(bufs, &r);
        r
    }
}

/// For hyper-util's client: the connection's [`Stamps`] are put in every response's
/// extensions (`response.extensions().get::<Stamps>()`).
#[cfg(feature = "client")]
impl hyper_util::client::legacy::connect::Connection for StampedStream {
    fn connected(&self) -> hyper_util::client::legacy::connect::Connected {
        self.io.inner().connected().extra(self.stamps.clone())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::io::Write as _;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// A loopback connection: the client's end (std, blocking) and the server's (tokio).
    async fn connected() -> (std::net::TcpStream, TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().await.unwrap();
        (client, server)
    }

    /// The stamp is when the bytes arrived, not when they were read: bytes read 30 ms after
    /// they were written keep a stamp within the write's bracket.
    #[test]
    fn the_stamp_is_the_kernels_not_the_reads() {
        runtime().block_on(async {
            let (mut client, server) = connected().await;
            let (io, stamps) = StampedStream::new(server);
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
                if stamps.take_first().is_some() {
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
            let at = stamps.take_first().expect("no kernel stamp");
            assert_eq!(stamps.last(), Some(at), "the latest read's stamp");
            let slack = Duration::from_millis(1);
            assert!(
                at + slack >= before && at <= after + slack,
                "stamp outside the write"
            );
            assert!(
                read_at - at >= Duration::from_millis(25),
                "the stamp is the read's"
            );
            assert!(stamps.take_first().is_none(), "a stamp taken twice");
            assert_eq!(stamps.last(), Some(at), "taking the first forgets the last");
        });
    }

    /// A frame's departure is the kernel's stamp of the write that carried it: a frame written
    /// 30 ms after it was watched is stamped within the write, and a copy of a frame (what
    /// hyper's flatten strategy writes) is not taken for the frame.
    #[test]
    fn a_departure_is_the_writes_not_the_watchs() {
        use tokio::io::AsyncWriteExt as _;
        runtime().block_on(async {
            let (_client, server) = connected().await;
            let (io, _, departures) = StampedStream::with_departures(server);
            assert!(
                departures.is_enabled(),
                "the kernel refused transmit stamps"
            );
            let mut io = TokioIo::new(io);
            let frame = bytes::Bytes::from(b"data: {\"x\":1}\n\n".to_vec());
            let copied = bytes::Bytes::from(b"data: {\"x\":2}\n\n".to_vec());
            let d = departures.watch(&frame);
            let lost = departures.watch(&copied);
            tokio::time::sleep(Duration::from_millis(30)).await;
            let head = b"f\r\n";
            let before = Instant::now();
            let n = io
                .write_vectored(&[std::io::IoSlice::new(head), std::io::IoSlice::new(&frame)])
                .await
                .unwrap();
            let after = Instant::now();
            assert_eq!(n, head.len() + frame.len());
            let at = d.get().expect("no transmit stamp for the frame");
            let slack = Duration::from_micros(500);
            assert!(
                at + slack >= before && at <= after + slack,
                "stamp {:?} outside the write ({:?} long)",
                at.checked_duration_since(before),
                after - before
            );
            // The same bytes from other memory.
            let copy = copied.to_vec();
            io.write_all(&copy).await.unwrap();
            io.flush().await.unwrap();
            assert!(lost.get().is_none(), "a copy was taken for the frame");
            // A later frame is still found after one that never matched.
            let next = bytes::Bytes::from(b"data: {\"x\":3}\n\n".to_vec());
            let d3 = departures.watch(&next);
            let n = io
                .write_vectored(&[std::io::IoSlice::new(&next)])
                .await
                .unwrap();
            assert_eq!(n, next.len());
            let at3 = d3.get().expect("no stamp after an unmatched frame");
            assert!(at3 >= at, "a later write stamped earlier");
        });
    }

    /// A write the send buffer cannot take whole (a peer that stopped reading) stops the
    /// stamping: the kernel would stamp the rest later, when the peer reads, and a stamp
    /// queued between writes makes epoll report an error beside writability.
    #[test]
    fn a_full_send_buffer_stops_the_stamping() {
        use tokio::io::AsyncWriteExt as _;
        runtime().block_on(async {
            // Never read: the send buffer fills.
            let (_client, server) = connected().await;
            let (io, _, departures) = StampedStream::with_departures(server);
            assert!(
                departures.is_enabled(),
                "the kernel refused transmit stamps"
            );
            let mut io = TokioIo::new(io);
            let block = bytes::Bytes::from(vec![b'x'; 1 << 20]);
            let first = departures.watch(&block);
            let mut partial = false;
            for _ in 0..64 {
                let r = tokio::time::timeout(
                    Duration::from_millis(200),
                    io.write_vectored(&[std::io::IoSlice::new(&block)]),
                )
                .await;
                match r {
                    Ok(Ok(n)) if n == block.len() => continue,
                    _ => {
                        partial = true;
                        break;
                    }
                }
            }
            assert!(partial, "64 MiB went into a peer that never reads");
            assert!(
                !departures.is_enabled(),
                "still stamping after a partial write"
            );
            let later = bytes::Bytes::from_static(b"later");
            assert!(departures.watch(&later).get().is_none());
            drop(first);
        });
    }
}
