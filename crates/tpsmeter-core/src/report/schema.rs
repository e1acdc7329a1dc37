//! The report's JSON Schema, generated from the Rust types with `schemars` and committed as
//! `crates/tpsmeter-core/report.schema.json`: the one schema the CLI's `--json` and the
//! browser's `bench()` reports are both checked against. A test regenerates it and fails
//! when the committed file differs (`TPSMETER_BLESS=1 cargo test -p tpsmeter-core --test
//! report_schema` rewrites it after a deliberate change).

use super::Report;

/// The committed schema (JSON text).
pub const SCHEMA_JSON: &str = include_str!("../../report.schema.json");

/// The schema as the current types define it, pretty-printed with a final newline.
pub fn generate() -> String {
    let schema = schemars::schema_for!(Report);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}
