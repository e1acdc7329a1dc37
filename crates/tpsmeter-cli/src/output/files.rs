//! The JSON report and the CSV rows, written at the end of a run.
//!
//! Both files are created when the run starts, so a path that cannot be written fails the
//! run before any request is sent; they are filled at the end.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use tpsmeter_core::report::Report;

/// The end-of-run output files, opened up front.
#[derive(Debug)]
pub struct OutputFiles {
    json: Option<(PathBuf, File)>,
    csv: Option<(PathBuf, File)>,
}

impl OutputFiles {
    /// Creates (truncates) the files that were asked for.
    pub fn open(json: Option<&Path>, csv: Option<&Path>) -> anyhow::Result<OutputFiles> {
        Ok(OutputFiles {
            json: json.map(create).transpose()?,
            csv: csv.map(create).transpose()?,
        })
    }

    /// Writes the report as JSON and its request records as CSV.
    pub fn write(&mut self, report: &Report) -> anyhow::Result<()> {
        if let Some((path, file)) = &mut self.json {
            file.write_all(report.to_json().as_bytes())
                .and_then(|()| file.write_all(b"\n"))
                .and_then(|()| file.flush())
                .with_context(|| format!("write {}", path.display()))?;
        }
        if let Some((path, file)) = &mut self.csv {
            let text = tpsmeter_core::report::csv::to_csv(&report.requests);
            file.write_all(text.as_bytes())
                .and_then(|()| file.flush())
                .with_context(|| format!("write {}", path.display()))?;
        }
        Ok(())
    }
}

fn create(path: &Path) -> anyhow::Result<(PathBuf, File)> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    }
    let file = File::create(path).with_context(|| format!("create {}", path.display()))?;
    Ok((path.to_path_buf(), file))
}
