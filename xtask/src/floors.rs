//! The crates' floors, checked (`cargo xtask check-map` runs it after the core's layering):
//! every crate of the repository stands on a named floor, and its dependencies on the
//! project's own crates (normal, dev, build and target-specific alike) point to lower floors
//! only, so no crate imports one beside or above it. Inside the engine crates
//! (`tpsmeter-model`, `tpsmeter-cpu`, `tpsmeter-gpu`) no module cycle spans more than
//! [`crate::layers::MAX_CYCLE`] top-level modules, read as the core's are.
//!
//! A crude reader, as `layers.rs` is: each `Cargo.toml`'s lines that name a `tpsmeter-*`
//! crate inside a dependency table. A new crate fails the check until it is given a floor
//! here (and its place in ARCHITECTURE.md).

use anyhow::{Result, bail};
use std::path::Path;

/// Each crate's floor, lowest first, with its manifest. Dependencies point down.
pub const FLOORS: &[(&str, u8, &str)] = &[
    // No I/O, no GPU: the measurement core, and the emulator's Linux socket helper.
    ("tpsmeter-core", 0, "crates/tpsmeter-core/Cargo.toml"),
    ("tpsmeter-arrival", 0, "crates/tpsmeter-arrival/Cargo.toml"),
    // The model stack without a backend.
    ("tpsmeter-model", 1, "crates/tpsmeter-model/Cargo.toml"),
    // The CPU backend; the emulator, a peer the edges test against.
    ("tpsmeter-cpu", 2, "crates/tpsmeter-cpu/Cargo.toml"),
    (
        "tpsmeter-emulator",
        2,
        "crates/tpsmeter-emulator/Cargo.toml",
    ),
    // The GPU backend and the engine over both backends.
    ("tpsmeter-gpu", 3, "crates/tpsmeter-gpu/Cargo.toml"),
    // The edges: the browser boundary and the CLI.
    ("tpsmeter-wasm", 4, "crates/tpsmeter-wasm/Cargo.toml"),
    ("tpsmeter-cli", 4, "crates/tpsmeter-cli/Cargo.toml"),
    // Tools over everything.
    ("tpsmeter-fuzz", 5, "fuzz/Cargo.toml"),
    ("xtask", 5, "xtask/Cargo.toml"),
];

/// Crates whose top-level modules are held to the cycle bound.
const ENGINE_CRATES: &[&str] = &[
    "crates/tpsmeter-model/src",
    "crates/tpsmeter-cpu/src",
    "crates/tpsmeter-gpu/src",
];

fn floor_of(name: &str) -> Option<u8> {
    FLOORS.iter().find(|(n, ..)| *n == name).map(|&(_, f, _)| f)
}

/// The project's crates a manifest depends on (any dependency table), in order.
pub fn own_dependencies(manifest: &str) -> Vec<String> {
    let mut in_deps = false;
    let mut out = Vec::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line.trim_end_matches(']').ends_with("dependencies");
            continue;
        }
        if !in_deps || line.starts_with('#') {
            continue;
        }
        let name: String = line
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        if name.starts_with("tpsmeter") && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// Fails naming each crate without a floor and each dependency that does not point down,
/// and each engine crate's module cycle over the bound.
pub fn check(root: &Path) -> Result<()> {
    let mut problems = Vec::new();
    for entry in std::fs::read_dir(root.join("crates"))? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if floor_of(&name).is_none() {
            problems.push(format!("crates/{name} has no floor in xtask/src/floors.rs"));
        }
    }
    let mut edges = 0;
    for &(name, floor, manifest) in FLOORS {
        let text = std::fs::read_to_string(root.join(manifest))
            .map_err(|e| anyhow::anyhow!("read {manifest}: {e}"))?;
        for dep in own_dependencies(&text) {
            edges += 1;
            match floor_of(&dep) {
                None => problems.push(format!("{name} depends on {dep}, which has no floor")),
                Some(f) if f >= floor => problems.push(format!(
                    "{name} (floor {floor}) depends on {dep} (floor {f}): dependencies point down"
                )),
                Some(_) => {}
            }
        }
    }
    for src in ENGINE_CRATES {
        let graph = crate::layers::module_graph(&root.join(src))?;
        for cycle in crate::layers::cycles(&graph) {
            if cycle.len() > crate::layers::MAX_CYCLE {
                problems.push(format!(
                    "{src}: an import cycle of {} modules: {}",
                    cycle.len(),
                    cycle.join(", ")
                ));
            }
        }
    }
    if problems.is_empty() {
        eprintln!(
            "check-map: {} crates on their floors, {edges} dependencies on the project's own crates all point down; the engine crates hold no module cycle over {}",
            FLOORS.len(),
            crate::layers::MAX_CYCLE
        );
        return Ok(());
    }
    bail!("crate floors:\n  {}", problems.join("\n  "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependencies_are_read_from_every_dependency_table() {
        let manifest = r#"
[package]
name = "tpsmeter-x"
[dependencies]
tpsmeter-core = { workspace = true }
serde.workspace = true
# tpsmeter-commented = "1"
[target.'cfg(unix)'.dev-dependencies]
tpsmeter-emulator = { path = "../tpsmeter-emulator" }
[features]
tpsmeter-feature = []
[build-dependencies]
tpsmeter-model.workspace = true
"#;
        assert_eq!(
            own_dependencies(manifest),
            ["tpsmeter-core", "tpsmeter-emulator", "tpsmeter-model"]
        );
    }

    #[test]
    fn the_repository_s_crates_stand_on_their_floors() {
        check(&crate::sh::repo_root()).unwrap_or_else(|e| panic!("{e:#}"));
    }
}
