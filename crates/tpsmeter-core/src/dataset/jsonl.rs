//! JSON Lines: one entry per line. Lines end in LF (a CR before it is dropped); lines of
//! whitespace alone are not entries.

use super::{At, Caps, Entry, entry};
use crate::error::Result;

/// Parses every line of `text`, handing each entry (`None`: skipped, see
/// [`entry::parse`]) to `add`.
pub(super) fn parse(text: &[u8], caps: Caps, add: &mut impl FnMut(Option<Entry>)) -> Result<()> {
    let mut entries = 0usize;
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        let at = At {
            line: i as u64 + 1,
            entry: None,
        };
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.len() > caps.entry_bytes {
            return Err(at.err(
                None,
                format!(
                    "the line is {} bytes, over the cap of {} bytes",
                    line.len(),
                    caps.entry_bytes
                ),
            ));
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        entries += 1;
        if entries > caps.entries {
            return Err(at.err(
                None,
                format!("the file has more than {} entries, the cap", caps.entries),
            ));
        }
        add(entry::parse(line, at)?);
    }
    Ok(())
}
