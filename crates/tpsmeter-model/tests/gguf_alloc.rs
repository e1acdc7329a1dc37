//! Allocation bound of the GGUF readers on hostile input: whatever a header declares, the
//! memory the readers hold at once stays within a small multiple of the bytes they were
//! given (plus a constant). A counting global allocator measures the peak; this file holds a
//! single test so no other thread allocates during the measurement.

#![allow(clippy::unwrap_used)]
// A GlobalAlloc wrapper is unsafe by definition; it only forwards to System and counts.
#![allow(unsafe_code)]

mod gguf_fixture;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use tpsmeter_model::gguf::{GgufEvent, GgufFile, GgufStreamParser};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
        PEAK.fetch_max(live, Ordering::SeqCst);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Peak extra bytes held while `f` runs.
fn peak_during(f: impl FnOnce()) -> usize {
    let base = LIVE.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    f();
    PEAK.load(Ordering::SeqCst) - base
}

#[test]
fn hostile_headers_cannot_make_the_readers_allocate_beyond_input_size() {
    let (valid, _) = gguf_fixture::small_gguf();
    // Counts and lengths at their worst: every u64 field patched to huge values.
    let strategy = (
        prop::collection::vec(
            (
                any::<prop::sample::Index>(),
                prop::sample::select(vec![
                    u64::MAX,
                    u64::MAX / 2,
                    1 << 40,
                    1 << 24,
                    (1 << 24) - 1,
                    1 << 20,
                    60_000,
                ]),
            ),
            1..4,
        ),
        any::<prop::sample::Index>(),
    );
    let mut runner = TestRunner::new(Config::with_cases(3000));
    runner
        .run(&strategy, |(patches, cut)| {
            let mut bytes = valid.clone();
            for (at, v) in patches {
                let at = at.index(bytes.len() - 8);
                bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
            }
            bytes.truncate(cut.index(bytes.len()) + 1);
            // Allowance: 32 bytes held per input byte (a Vec<String> entry per 8-byte
            // string header is 24 bytes) plus 64 KiB of fixed overhead.
            let allowed = 32 * bytes.len() + (64 << 10);
            let peak = peak_during(|| {
                let _ = GgufFile::parse(&bytes);
            });
            prop_assert!(
                peak <= allowed,
                "slice reader held {peak} bytes for {} input bytes",
                bytes.len()
            );
            let peak = peak_during(|| {
                let mut p = GgufStreamParser::new();
                let mut sink = |_: GgufEvent<'_>| Ok::<(), tpsmeter_model::ModelError>(());
                for chunk in bytes.chunks(7) {
                    if p.push(chunk, &mut sink).is_err() {
                        return;
                    }
                }
                let _ = p.finish(&mut sink);
            });
            prop_assert!(
                peak <= allowed,
                "stream parser held {peak} bytes for {} input bytes",
                bytes.len()
            );
            Ok(())
        })
        .unwrap();
}
