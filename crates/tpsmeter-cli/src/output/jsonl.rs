//! Per-request records appended to disk as each request completes.
//!
//! The file is created before the first request is sent (so a bad path fails the run at
//! once, not after an hour of load), and every record is written as one JSON line and
//! flushed to the OS immediately: Ctrl-C, a crash or a kill keeps every finished request.
//! No fsync per line: that would cost milliseconds per record, and the OS keeps written
//! data across a process crash anyway.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;

/// An append-only JSON-lines file.
#[derive(Debug)]
pub struct JsonlSink {
    path: PathBuf,
    out: BufWriter<File>,
    lines: u64,
}

impl JsonlSink {
    /// Creates (truncates) the file; a missing parent directory is created.
    pub fn create(path: &Path) -> anyhow::Result<JsonlSink> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("create directory {}", dir.display()))?;
        }
        let file = File::create(path).with_context(|| format!("create {}", path.display()))?;
        Ok(JsonlSink {
            path: path.to_path_buf(),
            out: BufWriter::new(file),
            lines: 0,
        })
    }

    /// Writes one record as a line and flushes it.
    pub fn append<T: Serialize>(&mut self, record: &T) -> anyhow::Result<()> {
        serde_json::to_writer(&mut self.out, record)
            .with_context(|| format!("write a record to {}", self.path.display()))?;
        self.out.write_all(b"\n")?;
        self.out
            .flush()
            .with_context(|| format!("flush {}", self.path.display()))?;
        self.lines += 1;
        Ok(())
    }

    /// Records written so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn each_record_is_on_disk_before_the_next_is_written() {
        let dir = std::env::temp_dir().join(format!("tpsmeter-jsonl-{}", std::process::id()));
        let path = dir.join("sub").join("r.jsonl");
        let mut sink = JsonlSink::create(&path).unwrap();
        sink.append(&serde_json::json!({"a": 1})).unwrap();
        // Read through a separate handle while the sink is still open.
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\":1}\n");
        sink.append(&serde_json::json!({"a": 2})).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 2);
        assert_eq!(sink.lines(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
