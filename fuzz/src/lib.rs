//! The fuzz targets' checks, as plain functions of the input bytes (`targets::<name>::run`),
//! and how a target reads its control bytes.
//!
//! Two callers: libFuzzer (`fuzz_targets/<name>.rs`, built by `cargo xtask fuzz` with
//! sanitizers), and the main workspace's test `crates/tpsmeter-cli/tests/fuzz_replay.rs`,
//! which includes this file by path and replays the seed corpora and their mutations through
//! the same functions on every `cargo test`, with no sanitizer build.
//!
//! Inputs are plain bytes with a short prefix of control bytes, not `arbitrary` structures,
//! so a seed is the real file or stream behind a few bytes and a crash file reads as such.

pub mod targets;

pub use targets::{MAX_CUTS, chunks};
