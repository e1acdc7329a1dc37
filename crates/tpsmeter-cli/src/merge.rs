//! `tpsmeter merge`: the report of a run spread over machines (`tpsmeter bench --shard I/N`)
//! from the JSON reports of all its shards.
//!
//! This file reads and writes; the merge itself (checks, one clock, summaries recomputed
//! from the records) is the core's `report::merge`, so it is the code that summarises a
//! single machine's run.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use tpsmeter_core::report::{Report, merge};

use crate::exit::Status;
use crate::output::files::OutputFiles;

/// Largest report file read: a run of a million requests with every chunk time kept is
/// about 1 GiB of JSON, and the whole file is held in memory (then parsed) at once.
const MAX_REPORT_BYTES: u64 = 2 << 30;

/// Merge the JSON reports of every shard of a run (`tpsmeter bench --shard I/N --json F`
/// on each machine) into the report of the whole: records concatenated on one clock, every
/// summary and percentile recomputed from them (never averaged). Prints the table `bench`
/// prints; writes the same JSON and CSV formats.
#[derive(Debug, Clone, clap::Args)]
pub struct MergeArgs {
    /// The shards' JSON reports, in any order: every index of the run exactly once.
    #[arg(required = true, value_name = "REPORT.json")]
    pub reports: Vec<PathBuf>,

    /// Write the merged JSON report here.
    #[arg(long, value_name = "F")]
    pub json: Option<PathBuf>,

    /// Write one CSV row per request of the merged run here.
    #[arg(long, value_name = "F")]
    pub csv: Option<PathBuf>,
}

/// Runs `tpsmeter merge`: the exit status is the one `bench` would give the whole run.
pub fn run(args: &MergeArgs) -> anyhow::Result<Status> {
    let reports = args
        .reports
        .iter()
        .map(|p| read(p))
        .collect::<anyhow::Result<Vec<Report>>>()?;
    let merged = merge(&reports).with_context(|| {
        let named: Vec<String> = args
            .reports
            .iter()
            .enumerate()
            .map(|(i, p)| format!("#{} {}", i + 1, p.display()))
            .collect();
        format!("merge {}", named.join(", "))
    })?;
    // Opened only now: an output path that is also an input (a re-run over `*.json`) must
    // not be emptied before it is read.
    OutputFiles::open(args.json.as_deref(), args.csv.as_deref())?.write(&merged)?;
    for w in &merged.warnings {
        eprintln!("warning: {}", w.message);
    }
    print!("{}", crate::output::table::render(&merged));
    Ok(crate::bench::status_of(
        &merged,
        merged.config.slo.as_ref().is_some_and(|s| !s.is_empty()),
        false,
        &[],
    ))
}

/// Reads and parses one report, refusing files over [`MAX_REPORT_BYTES`].
fn read(path: &Path) -> anyhow::Result<Report> {
    let file = std::fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
    let mut text = String::new();
    file.take(MAX_REPORT_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("read {}", path.display()))?;
    if text.len() as u64 > MAX_REPORT_BYTES {
        bail!(
            "{} is over {} GiB: not a report this merge can hold",
            path.display(),
            MAX_REPORT_BYTES >> 30
        );
    }
    Report::from_json(&text).with_context(|| format!("read the report {}", path.display()))
}
