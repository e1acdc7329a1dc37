//! The send timestamps' clock: CLOCK_MONOTONIC in nanoseconds.
//!
//! Every content chunk carries `"x_sent_ns"`, the value of [`monotonic_ns`] when the emulator
//! produced it, right before hyper writes it to the socket. CLOCK_MONOTONIC is one clock for
//! every process on the machine, so a client in another process (GuideLLM, the `tpsmeter`
//! binary) compares it with its own CLOCK_MONOTONIC readings (Python's `time.monotonic_ns()`,
//! C's `clock_gettime(CLOCK_MONOTONIC)`).
//!
//! A Rust client in any process converts its `std::time::Instant`s with [`instant_ns`]: on
//! Linux `Instant` *is* CLOCK_MONOTONIC, but std hides the raw value, so we read both clocks
//! once, back to back, and keep the pair as the reference (error: the tens of nanoseconds
//! between the two reads).

use std::sync::OnceLock;
use std::time::Instant;

/// Now on CLOCK_MONOTONIC, in nanoseconds.
pub fn monotonic_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    // CLOCK_MONOTONIC never goes negative; the casts cannot lose anything for 584 years.
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// The reference pair (an `Instant`, the same moment on CLOCK_MONOTONIC in ns).
fn reference() -> (Instant, u64) {
    static REF: OnceLock<(Instant, u64)> = OnceLock::new();
    *REF.get_or_init(|| {
        let i = Instant::now();
        let ns = monotonic_ns();
        (i, ns)
    })
}

/// An `Instant` as CLOCK_MONOTONIC nanoseconds (the clock of `"x_sent_ns"`).
pub fn instant_ns(at: Instant) -> u64 {
    let (ref_instant, ref_ns) = reference();
    if at >= ref_instant {
        ref_ns + at.duration_since(ref_instant).as_nanos() as u64
    } else {
        ref_ns.saturating_sub(ref_instant.duration_since(at).as_nanos() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instant_and_monotonic_agree_within_a_millisecond() {
        // Guards the assumption that Instant is CLOCK_MONOTONIC: a different clock (e.g.
        // BOOTTIME after a suspend) would be off by far more than this.
        let _ = instant_ns(Instant::now()); // take the reference first
        let before = monotonic_ns();
        let converted = instant_ns(Instant::now());
        let after = monotonic_ns();
        assert!(converted + 1_000_000 >= before, "{converted} vs {before}");
        assert!(converted <= after + 1_000_000, "{converted} vs {after}");
    }
}
