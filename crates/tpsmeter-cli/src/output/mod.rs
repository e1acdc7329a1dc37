//! What a run writes: the table on stdout, the JSON report, CSV rows, JSON lines.

pub mod files;
pub mod jsonl;
pub mod table;
pub mod wait_parts;
