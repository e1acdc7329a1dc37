//! libFuzzer entry of [`tpsmeter_fuzz::targets::redactor`]: the checks live in the library, so
//! the main workspace's tests replay the same function over the seed corpora
//! (`crates/tpsmeter-cli/tests/fuzz_replay.rs`).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tpsmeter_fuzz::targets::redactor::run(data));
