//! `--dataset F`: the file read whole, under the core's size cap, and parsed by the core
//! (the browser's `bench({ dataset })` hands the same parser its bytes).

use std::io::Read;
use std::path::Path;

use anyhow::{Context, bail};
use tpsmeter_core::dataset::{Dataset, MAX_DATASET_BYTES};

/// Reads and parses the dataset at `path`; the report names it as given.
pub fn read(path: &Path) -> anyhow::Result<Dataset> {
    let shown = path.display();
    let file = std::fs::File::open(path).with_context(|| format!("--dataset {shown}"))?;
    let len = file
        .metadata()
        .with_context(|| format!("--dataset {shown}"))?
        .len();
    if len > MAX_DATASET_BYTES {
        bail!(
            "--dataset {shown}: the file is {len} bytes, over the cap of {MAX_DATASET_BYTES} (1 GiB)"
        );
    }
    // Not trusting the size read before: a file that grows while read stops at the cap.
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(MAX_DATASET_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("--dataset {shown}"))?;
    Dataset::parse(&shown.to_string(), &bytes).with_context(|| format!("--dataset {shown}"))
}

/// One line for stderr: what the run draws from.
pub fn describe(d: &Dataset) -> String {
    let skipped = match d.skipped() {
        0 => String::new(),
        n => format!(", {n} without a prompt left out"),
    };
    format!(
        "dataset {}: {} entries ({}{skipped}), sha256 {}",
        d.name(),
        d.entries().len(),
        d.format().name(),
        d.sha256()
    )
}
