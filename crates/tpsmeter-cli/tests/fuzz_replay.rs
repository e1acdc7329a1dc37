//! Every fuzz target's check (`fuzz/src/targets/`) over its seed corpus and deterministic
//! mutations of each seed, as an ordinary test: a parser change that panics, breaks an
//! invariant the target asserts, allocates what no input should, or hangs on an input the
//! corpus (or a near mutation of it) holds fails `cargo test`, with no sanitizer build.
//! Coverage-guided campaigns under AddressSanitizer stay with `cargo xtask fuzz`.
//!
//! The corpus of a target is the committed hand seeds (`fuzz/seeds/<target>/`) and, where
//! `TPSMETER_FUZZ_CORPUS` names a directory, the seeds `cargo xtask ci` writes there from the
//! real models and the recorded streams (`<dir>/<target>/`). With `TPSMETER_REQUIRE_ASSETS=1`
//! (CI) that directory must exist and hold seeds for every target that has generated ones.
//!
//! What libFuzzer's flags checked in CI before, this checks per input: no panic, no single
//! allocation over [`MALLOC_LIMIT`] (a length read from the input and trusted), and no input
//! running past [`TIMEOUT`] (a hang). A failing input is written under the test's temporary
//! directory, named in the failure, ready for the libFuzzer binary or a regression test.

// The counting allocator below is the one place this crate needs `unsafe`: `GlobalAlloc` is an
// unsafe trait, and it only forwards to the system allocator.
#![allow(unsafe_code)]

#[path = "../../../fuzz/src/lib.rs"]
#[allow(unused_imports)] // its re-exports serve the fuzz crate's own users
mod tpsmeter_fuzz;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Largest single allocation one input may make: libFuzzer's `-malloc_limit_mb` in
/// `cargo xtask fuzz` (512 MiB).
const MALLOC_LIMIT: usize = 512 << 20;
/// Longest one input may run: libFuzzer's `-timeout` in `cargo xtask fuzz`.
const TIMEOUT: Duration = Duration::from_secs(30);
/// Truncations of each seed (evenly spaced cut points): a cut file or stream is the most
/// common hostile input the parsers meet.
const TRUNCATIONS: u64 = 16;
/// Inputs per target at least, spread over its seeds as mutants: the 5,000 executions per
/// target CI's libFuzzer runs made. Each mutant is one to four edits (a bit flip, an
/// interesting byte, an insert, a delete, a repeated slice) at seeded positions.
const MIN_INPUTS: usize = 5_000;
/// Mutants of each seed at least, however many seeds a target has.
const MIN_MUTANTS: usize = 48;

/// The system allocator, noting the largest request on the calling thread (each test runs
/// one target on its own thread, so targets run in parallel without mixing their figures).
struct Counting;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    // `try_with`: allocations during thread teardown, after the slot is gone, are not ours.
    let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; noting a
// size touches only a thread-local `Cell` and never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: forwarded as the caller gave it.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: forwarded as the caller gave it.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as the caller gave it.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: forwarded as the caller gave it.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// SplitMix64: a few lines, seeded per seed file, so every run replays the same mutants.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// FNV-1a of a name: the mutation seed of a seed file (stable across runs and machines).
fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// One mutant of `seed`: one to four edits.
fn mutate(seed: &[u8], rng: &mut Mix) -> Vec<u8> {
    const INTERESTING: [u8; 8] = [0, 1, 0x7f, 0x80, 0xff, b'\n', b'"', b'{'];
    let mut out = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(out.len());
        match rng.below(5) {
            0 if !out.is_empty() => out[at] ^= 1 << rng.below(8),
            1 if !out.is_empty() => out[at] = INTERESTING[rng.below(INTERESTING.len())],
            2 => out.insert(at, rng.next() as u8),
            3 if !out.is_empty() => {
                out.remove(at);
            }
            _ if !out.is_empty() => {
                let len = 1 + rng.below(16.min(out.len() - at));
                let slice = out[at..at + len].to_vec();
                let to = rng.below(out.len());
                out.splice(to..to, slice);
            }
            _ => out.push(rng.next() as u8),
        }
    }
    out
}

/// The seed, its truncations and `mutants` mutants.
fn inputs_of(name: &str, seed: &[u8], mutants: usize) -> Vec<Vec<u8>> {
    let mut inputs = vec![seed.to_vec()];
    for i in 0..TRUNCATIONS {
        let cut = (seed.len() as u64 * i / TRUNCATIONS) as usize;
        inputs.push(seed[..cut].to_vec());
    }
    let mut rng = Mix(name_hash(name));
    for _ in 0..mutants {
        inputs.push(mutate(seed, &mut rng));
    }
    inputs
}

/// The seed files of `target`: the hand seeds, then the generated ones, by name.
fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds");
    let mut dirs = vec![root.join(target)];
    match std::env::var_os("TPSMETER_FUZZ_CORPUS") {
        Some(dir) => dirs.push(PathBuf::from(dir).join(target)),
        None if std::env::var_os("TPSMETER_REQUIRE_ASSETS").is_some_and(|v| v == "1") => {
            panic!(
                "TPSMETER_FUZZ_CORPUS is not set (TPSMETER_REQUIRE_ASSETS=1): `cargo xtask ci` \
                 writes the seed corpora and sets it"
            )
        }
        None => {}
    }
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        for path in files.into_iter().filter(|p| p.is_file()) {
            let bytes = std::fs::read(&path)
                .unwrap_or_else(|e| panic!("read seed {}: {e}", path.display()));
            out.push((path.display().to_string(), bytes));
        }
    }
    out
}

/// Runs every input of every seed of `target` through `check`; returns how many ran.
fn replay(target: &str, check: fn(&[u8]), generated: bool) -> usize {
    let seeds = seeds(target);
    let required = std::env::var_os("TPSMETER_REQUIRE_ASSETS").is_some_and(|v| v == "1");
    if seeds.is_empty() && generated && !required {
        // Only generated seeds exist for this target (from the cached models and streams):
        // a plain `cargo test` skips it, as the other asset-dependent tests do.
        eprintln!(
            "skipping fuzz replay {target}: no seeds (`cargo xtask fuzz-seeds` writes them; \
             TPSMETER_FUZZ_CORPUS names the folder)"
        );
        return 0;
    }
    assert!(!seeds.is_empty(), "no seeds for fuzz target {target}");
    if generated && required {
        let dir = std::env::var_os("TPSMETER_FUZZ_CORPUS").map(PathBuf::from);
        assert!(
            seeds.iter().any(|(name, _)| dir
                .as_ref()
                .is_some_and(|d| name.starts_with(&*d.to_string_lossy()))),
            "no generated seeds for {target} in TPSMETER_FUZZ_CORPUS"
        );
    }
    let mutants = MIN_MUTANTS.max(MIN_INPUTS.div_ceil(seeds.len()));
    let mut ran = 0;
    for (name, seed) in &seeds {
        for (i, input) in inputs_of(name, seed, mutants).iter().enumerate() {
            LARGEST.with(|l| l.set(0));
            let start = Instant::now();
            let outcome = std::panic::catch_unwind(|| check(input));
            let took = start.elapsed();
            let largest = LARGEST.with(Cell::get);
            let problem = match outcome {
                Err(_) => Some("panicked (message above)".to_owned()),
                Ok(()) if largest > MALLOC_LIMIT => Some(format!(
                    "allocated {largest} bytes at once (limit {MALLOC_LIMIT})"
                )),
                Ok(()) if took > TIMEOUT => Some(format!("ran {took:?} (limit {TIMEOUT:?})")),
                Ok(()) => None,
            };
            if let Some(problem) = problem {
                let kept = keep_failing_input(target, input);
                panic!(
                    "fuzz target {target}, seed {name}, input {i}: {problem}; input kept in {kept}"
                );
            }
            ran += 1;
        }
    }
    eprintln!("fuzz replay {target}: {} seeds, {ran} inputs", seeds.len());
    ran
}

/// Writes a failing input where the test's scratch files go; returns its path.
fn keep_failing_input(target: &str, input: &[u8]) -> String {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-replay");
    let path = dir.join(format!(
        "{target}-{:016x}",
        name_hash(&format!("{input:?}"))
    ));
    match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, input)) {
        Ok(()) => path.display().to_string(),
        Err(e) => format!("(not written: {e})"),
    }
}

use tpsmeter_fuzz::targets;

#[test]
fn gguf_slice() {
    replay("gguf_slice", targets::gguf_slice::run, true);
}

#[test]
fn gguf_push() {
    replay("gguf_push", targets::gguf_push::run, true);
}

#[test]
fn model_metadata() {
    replay("model_metadata", targets::model_metadata::run, true);
}

#[test]
fn stream_parser() {
    replay("stream_parser", targets::stream_parser::run, true);
}

/// Every API of `Api::ALL` reaches the stream parser's fuzzing: each mode byte picks a
/// distinct API, and where the generated corpus is there, every API has seeds, each named
/// for the API its mode byte picks (the golden stream's file name, `openai_chat...`).
#[test]
fn stream_seeds_name_every_api() {
    use targets::stream_parser::mode;
    use tpsmeter_core::Api;
    let modes: Vec<u8> = Api::ALL
        .iter()
        .map(|&a| mode(a, false).unwrap_or_else(|| panic!("{a:?} has no mode byte")))
        .collect();
    for (i, &m) in modes.iter().enumerate() {
        assert!(!modes[..i].contains(&m), "two APIs share mode {m}");
        assert_eq!(mode(Api::ALL[i], true), Some(m | 1));
    }
    assert_eq!(mode(Api::Local, false), None, "local is not a wire format");
    let seeds = seeds("stream_parser");
    if seeds.is_empty() {
        // No generated corpus here (`replay` says so, or fails under REQUIRE_ASSETS).
        return;
    }
    let mut seen = Vec::new();
    for (name, bytes) in &seeds {
        let file = Path::new(name)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        // `cargo xtask fuzz-seeds` writes `seed-<golden stream>-<cut>`.
        let stem = file.strip_prefix("seed-").unwrap_or(file);
        let api = Api::ALL
            .iter()
            .copied()
            .filter(|a| stem.starts_with(&a.name().replace('-', "_")))
            .max_by_key(|a| a.name().len());
        // `ollama_error` records an Ollama chat stream.
        let api = api.or_else(|| stem.starts_with("ollama_").then_some(Api::OllamaChat));
        let api = api.unwrap_or_else(|| panic!("no API is named by seed {name}"));
        let tiny = stem.ends_with("-tiny-caps");
        assert_eq!(bytes.first().copied(), mode(api, tiny), "{name}: mode byte");
        seen.push(api);
    }
    for api in Api::ALL {
        assert!(
            seen.contains(&api),
            "no stream_parser seed for {}",
            api.name()
        );
    }
}

#[test]
fn chat_template() {
    replay("chat_template", targets::chat_template::run, false);
}

#[test]
fn serve_request() {
    replay("serve_request", targets::serve_request::run, false);
}

#[test]
fn redactor() {
    replay("redactor", targets::redactor::run, false);
}

#[test]
fn dataset() {
    replay("dataset", targets::dataset::run, false);
}

#[test]
fn mutations_are_the_same_every_run() {
    let seed = b"{\"a\": [1, 2, 3]}";
    assert_eq!(inputs_of("x", seed, 48), inputs_of("x", seed, 48));
    let inputs = inputs_of("x", seed, 48);
    assert_eq!(inputs.len(), 1 + TRUNCATIONS as usize + 48);
    let changed = inputs[1..].iter().filter(|i| i.as_slice() != seed).count();
    assert!(
        changed >= 60,
        "only {changed} of 64 inputs differ from the seed"
    );
}

// The replay itself must fail on what libFuzzer failed on: a panic, an allocation past the
// limit (made here, never touched, so it costs no memory).

#[test]
#[should_panic(expected = "panicked")]
fn a_check_that_panics_fails_the_replay() {
    replay(
        "redactor",
        |data| assert!(data.len() > usize::MAX / 2),
        false,
    );
}

#[test]
#[should_panic(expected = "allocated")]
fn an_allocation_past_the_limit_fails_the_replay() {
    replay(
        "redactor",
        |_| {
            let v: Vec<u8> = Vec::with_capacity(MALLOC_LIMIT + 1);
            std::hint::black_box(v);
        },
        false,
    );
}
