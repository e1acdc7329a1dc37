//! When bytes left this machine: the kernel's transmit timestamp of a response frame.
//!
//! A server that stamps a frame when it produces it, before handing it to hyper, misses
//! whatever runs between the stamp and the `write`: on a busy 2-core machine the thread can
//! be preempted right there, and the frame leaves a millisecond after its stamp says. The
//! kernel can stamp each `sendmsg` as the packet carrying its last byte reaches the network
//! device (`SOF_TIMESTAMPING_TX_SOFTWARE`; loopback stamps in its transmit routine) and
//! queue the stamp on the socket's error queue, keyed by that byte's offset in the stream
//! (`SOF_TIMESTAMPING_OPT_ID`, counted from when the option was set).
//!
//! A stamp is keyed by a byte offset, while a server knows frames. hyper writes a
//! connection's queued frames with `writev` straight from the frame's own buffers (its
//! "queue" write strategy, taken whenever the stream is write-vectored), so a frame is found
//! in a write by where its last byte lies in memory. [`Departures::watch`] keeps a clone of
//! the frame's `Bytes` until it is found, so that memory cannot be reused meanwhile.
//!
//! What cannot be stamped stays unstamped: a frame written through a copy (hyper's
//! "flatten" strategy), a kernel that refuses the option, a stamp the kernel dropped (a full
//! error queue), a frame whose write has no stamp of its own. The caller then keeps its own
//! stamp.
//!
//! The error queue is read after every write and read, whether or not frames wait: stamps
//! count against the socket's receive buffer, and a queued stamp makes epoll report EPOLLERR,
//! which beside EPOLLOUT tokio takes for "write side closed" for good (a write that then
//! meets a full send buffer would retry at once, spinning). On loopback the kernel stamps
//! inside the write, so the queue is empty again before the runtime next polls. It stamps
//! later only when the send buffer is full and packets wait for the peer: at the first
//! partial write the connection stops asking for stamps (what was already written may
//! still bring one, read at the next write or read).

use std::collections::VecDeque;
use std::io::IoSlice;
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use bytes::Bytes;
use nix::sys::socket::{ControlMessageOwned, MsgFlags, TimestampingFlag, recvmsg, setsockopt};
use nix::sys::socket::{Timestamps, sockopt};
use nix::sys::time::TimeSpec;
use tokio::net::TcpStream;

use crate::to_instant;

/// Frames watched but not yet seen in a write, at most; older ones are dropped unstamped.
/// A connection writes its frames in order, so only a frame that never went out (its
/// response was cut) lingers; the cap bounds what such frames keep alive.
const MAX_WATCHED: usize = 4096;
/// Written frames waiting for their write's stamp, at most (a kernel that accepts the option
/// but never stamps must not grow the queue).
const MAX_SENT: usize = 4096;

/// `SO_EE_ORIGIN_TIMESTAMPING` (linux/errqueue.h): the error-queue entry is a timestamp.
const ORIGIN_TIMESTAMPING: u8 = 4;
/// `SCM_TSTAMP_SND`: the stamp was taken as the packet was handed to the device.
const TSTAMP_SND: u32 = 0;

/// The kernel's transmit time of one watched frame's last byte, once known.
#[derive(Debug, Clone, Default)]
pub struct Departure(Arc<OnceLock<Instant>>);

impl Departure {
    /// When the kernel sent the frame's last byte, or `None` while (or when) it has not said.
    pub fn get(&self) -> Option<Instant> {
        self.0.get().copied()
    }
}

/// The frames of one connection whose transmit times are wanted.
#[derive(Debug, Clone, Default)]
pub struct Departures(Arc<Mutex<State>>);

#[derive(Debug, Default)]
struct State {
    /// Whether the kernel accepted the option and the connection still stamps: without it
    /// nothing is watched.
    enabled: bool,
    /// Frames handed to hyper but not yet seen in a write, in order.
    watched: VecDeque<(Bytes, Departure)>,
    /// Bytes written on the connection since the option was set.
    written: u64,
    /// Frames written, waiting for the stamp of their write: the key of the write's last
    /// byte (as the kernel counts it, modulo 2^32).
    sent: VecDeque<(u32, Departure)>,
}

impl Departures {
    /// Asks the kernel to stamp `stream`'s transmissions. Without that (a kernel that refuses
    /// the option) [`Departures::watch`] hands out departures that stay empty.
    pub(crate) fn enable(stream: &TcpStream) -> Self {
        let flags = TimestampingFlag::SOF_TIMESTAMPING_TX_SOFTWARE
            | TimestampingFlag::SOF_TIMESTAMPING_SOFTWARE
            | TimestampingFlag::SOF_TIMESTAMPING_OPT_ID
            | TimestampingFlag::SOF_TIMESTAMPING_OPT_TSONLY;
        let enabled = setsockopt(stream, sockopt::Timestamping, &flags).is_ok();
        Self(Arc::new(Mutex::new(State {
            enabled,
            ..State::default()
        })))
    }

    /// Watches `frame`, which must be the very buffer handed to hyper as a body frame (its
    /// memory is how its write is recognised). The departure is filled once the kernel
    /// reports the write that carried its last byte.
    pub fn watch(&self, frame: &Bytes) -> Departure {
        let d = Departure::default();
        if frame.is_empty() {
            return d;
        }
        if let Ok(mut s) = self.0.lock() {
            if s.enabled {
                if s.watched.len() == MAX_WATCHED {
                    s.watched.pop_front();
                }
                s.watched.push_back((frame.clone(), d.clone()));
            }
        }
        d
    }

    pub(crate) fn is_enabled(&self) -> bool {
        self.0.lock().is_ok_and(|s| s.enabled)
    }

    /// Notes a write of `n` bytes taken from the front of `bufs`: the watched frames whose
    /// last byte went out in it now wait for its stamp. A write shorter than `bufs` (a full
    /// send buffer) stops stamping on `stream` (see the module's doc).
    pub(crate) fn wrote(&self, stream: &TcpStream, bufs: &[IoSlice<'_>], n: usize) {
        let Ok(mut s) = self.0.lock() else { return };
        if !s.enabled {
            return;
        }
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if n < total {
            s.stop(stream);
        }
        if n == 0 {
            return;
        }
        let key = (s.written + n as u64 - 1) as u32;
        s.written += n as u64;
        let mut left = n;
        for buf in bufs {
            if left == 0 {
                break;
            }
            let take = buf.len().min(left);
            left -= take;
            let start = buf.as_ptr() as usize;
            let end = start + take;
            // Frames go out in order; one still watched ahead of a frame found here never
            // went out (its response was cut) and is dropped unstamped.
            while let Some(i) = s.watched.iter().position(|(frame, _)| {
                (start..end).contains(&(frame.as_ptr() as usize + frame.len() - 1))
            }) {
                s.watched.drain(..i);
                if let Some((_, d)) = s.watched.pop_front() {
                    if s.sent.len() == MAX_SENT {
                        s.sent.pop_front();
                    }
                    s.sent.push_back((key, d));
                }
            }
        }
    }

    /// Reads the stamps the kernel queued so far and fills the departures they stamp; a
    /// stamp nothing waits for (a head's or an epilogue's write) is read and dropped.
    pub(crate) fn drain(&self, stream: &TcpStream) {
        while let Some((key, at)) = read_stamp(stream) {
            let Ok(mut s) = self.0.lock() else { return };
            // Writes older than this stamp's got no stamp of their own: the kernel merged
            // them into a later write's packet, or dropped their stamp (a full error queue).
            // Which one cannot be told, so they stay unstamped rather than dated late.
            while let Some(&(k, _)) = s.sent.front() {
                let ahead = key.wrapping_sub(k) as i32;
                if ahead < 0 {
                    break;
                }
                if let Some((_, d)) = s.sent.pop_front() {
                    if let (0, Some(at)) = (ahead, at) {
                        let _ = d.0.set(at);
                    }
                }
            }
        }
    }
}

impl State {
    /// Stops asking the kernel for stamps and forgets the frames still watched.
    fn stop(&mut self, stream: &TcpStream) {
        let _ = setsockopt(stream, sockopt::Timestamping, &TimestampingFlag::empty());
        self.enabled = false;
        self.watched.clear();
    }
}

/// One transmit stamp from `stream`'s error queue: the key of the last byte it covers and
/// its time, or `None` when the queue is empty. Entries that are not transmit stamps are
/// read and skipped.
fn read_stamp(stream: &TcpStream) -> Option<(u32, Option<Instant>)> {
    loop {
        // The socket's SO_TIMESTAMPNS adds its own control message to error-queue reads too;
        // a truncated buffer would lose the entry.
        let mut cmsg = nix::cmsg_space!(
            Timestamps,
            TimeSpec,
            nix::libc::sock_extended_err,
            nix::libc::sockaddr_in6
        );
        let mut byte = [0u8; 1];
        let mut iov = [std::io::IoSliceMut::new(&mut byte)];
        let msg = recvmsg::<()>(
            stream.as_raw_fd(),
            &mut iov,
            Some(&mut cmsg),
            MsgFlags::MSG_ERRQUEUE | MsgFlags::MSG_DONTWAIT,
        )
        .ok()?;
        let mut key = None;
        let mut at = None;
        // An entry whose control messages cannot be parsed is skipped, not taken for the end.
        let Ok(cmsgs) = msg.cmsgs() else { continue };
        for c in cmsgs {
            match c {
                ControlMessageOwned::ScmTimestampsns(ts) => at = to_instant(ts.system),
                ControlMessageOwned::Ipv4RecvErr(e, _) | ControlMessageOwned::Ipv6RecvErr(e, _)
                    if e.ee_origin == ORIGIN_TIMESTAMPING && e.ee_info == TSTAMP_SND =>
                {
                    key = Some(e.ee_data);
                }
                _ => {}
            }
        }
        if let Some(key) = key {
            return Some((key, at));
        }
    }
}
