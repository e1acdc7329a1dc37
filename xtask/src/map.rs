//! `cargo xtask check-map [FILE]`: every repository path ARCHITECTURE.md names exists.
//!
//! ARCHITECTURE.md is the map a newcomer reads first; a path in it that a rename or a move
//! left behind sends them to nothing, and nobody notices by reading the diff that moved the
//! file. So `ci` runs this first (it takes milliseconds) and fails with every missing path.
//!
//! What counts as a path, without a regex: the text of an inline code span (`` `x` ``), the
//! target of a Markdown link (`[text](x)`), and, inside a fenced block, each word. One of
//! those is a repository path when it is written from the repository root: its first
//! component is a top-level directory of the checkout (`crates/`, `docs/`, `.ci/`, ...).
//! A code span with a `/` that ends in a source extension (`engine/warm.rs`) must be one too:
//! a path from somewhere else cannot be checked, so the map writes every file from the root.
//! Link targets are always checked, since a link is meant to lead somewhere. URLs, absolute
//! paths, globs and placeholders (`*`, `<x>`, `{x}`, `$X`, `...`) are not paths.

use anyhow::{Result, bail};
use std::path::Path;

/// Extensions that make a code span with a `/` a file path even when its first component is
/// no top-level directory (then it is a path written from the wrong place).
const SOURCE_EXTENSIONS: &[&str] = &[
    "rs", "ts", "mjs", "js", "md", "toml", "json", "wgsl", "yml", "yaml", "html", "py", "css",
    "sh", "txt", "lock",
];

/// Top-level entries that hold build output, not the repository's files: a path into them
/// exists only after a build, so the map must not lean on one.
const NOT_REPOSITORY: &[&str] = &[".git", "target", "node_modules"];

/// One path the document names, with the line it is on (from 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub line: usize,
    pub path: String,
}

/// `cargo xtask check-map [FILE]`: FILE (default ARCHITECTURE.md), its paths resolved from
/// the repository root wherever FILE is.
pub fn run(args: &[String]) -> Result<()> {
    let root = crate::sh::repo_root();
    let file = match args.first() {
        Some(f) => std::path::PathBuf::from(f),
        None => root.join("ARCHITECTURE.md"),
    };
    check_file(&root, &file)?;
    crate::layers::check(&root)?;
    crate::floors::check(&root)
}

/// Fails with one line per path of `file` that does not exist under `root`.
pub fn check_file(root: &Path, file: &Path) -> Result<()> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| anyhow::anyhow!("read {}: {e}", file.display()))?;
    let named = named_paths(&text, &top_level_dirs(root));
    let missing = missing(root, &named);
    let file = file.strip_prefix(root).unwrap_or(file);
    if missing.is_empty() {
        eprintln!(
            "check-map: all {} repository paths {} names exist",
            named.len(),
            file.display()
        );
        return Ok(());
    }
    let lines: Vec<String> = missing
        .iter()
        .map(|n| format!("  {}:{}: {}", file.display(), n.line, n.path))
        .collect();
    bail!(
        "{} path(s) named in {} do not exist (write them from the repository root, \
         and update the map when a file moves):\n{}",
        missing.len(),
        file.display(),
        lines.join("\n")
    )
}

/// The directories at the top of the checkout, build output left out.
fn top_level_dirs(root: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut dirs: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !NOT_REPOSITORY.contains(&n.as_str()))
        .collect();
    dirs.sort();
    dirs
}

/// The named paths that do not exist under `root` (a trailing `/` asks for a directory).
pub fn missing(root: &Path, named: &[Named]) -> Vec<Named> {
    named
        .iter()
        .filter(|n| {
            let p = root.join(n.path.trim_end_matches('/'));
            if n.path.ends_with('/') {
                !p.is_dir()
            } else {
                !p.exists()
            }
        })
        .cloned()
        .collect()
}

/// Every repository path `text` names, each once (its first line), in order.
pub fn named_paths(text: &str, top_dirs: &[String]) -> Vec<Named> {
    let mut out: Vec<Named> = Vec::new();
    let mut push = |line: usize, path: String| {
        if !out.iter().any(|n| n.path == path) {
            out.push(Named { line, path });
        }
    };
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            for word in line.split(|c: char| c.is_whitespace() || "│├└─┬┴┼→←↑↓↖↗".contains(c))
            {
                let word = word.trim_matches(|c: char| "()[],;:\"'".contains(c));
                if let Some(p) = as_path(word, top_dirs, false) {
                    push(line_no, p);
                }
            }
            continue;
        }
        for span in code_spans(line) {
            if let Some(p) = as_path(span, top_dirs, false) {
                push(line_no, p);
            }
        }
        for target in link_targets(line) {
            if let Some(p) = as_path(target, top_dirs, true) {
                push(line_no, p);
            }
        }
    }
    out
}

/// The contents of the line's inline code spans (single backticks; an unclosed one is text).
fn code_spans(line: &str) -> Vec<&str> {
    let parts: Vec<&str> = line.split('`').collect();
    // Parts at odd indexes are inside backticks; the last one is unclosed when the count of
    // backticks is odd, i.e. when there is an even number of parts.
    let closed = if parts.len().is_multiple_of(2) {
        parts.len() - 1
    } else {
        parts.len()
    };
    parts[..closed].iter().skip(1).step_by(2).copied().collect()
}

/// The targets of the line's Markdown links, `[text](target)`.
fn link_targets(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        match after.find(')') {
            Some(end) => {
                out.push(&after[..end]);
                rest = &after[end + 1..];
            }
            None => break,
        }
    }
    out
}

/// `word` as a repository path, or `None` when it is no path (or not one of ours).
/// `link`: a link target, checked whatever its first component.
fn as_path(word: &str, top_dirs: &[String], link: bool) -> Option<String> {
    let word = word.trim();
    // A link's anchor names a heading, not a file.
    let word = if link {
        word.split('#').next().unwrap_or("")
    } else {
        word
    };
    let word = word.strip_prefix("./").unwrap_or(word);
    if word.is_empty()
        || word.contains("://")
        || word.starts_with('/')
        || word.starts_with("..")
        || word.starts_with('-')
        || word.starts_with("mailto:")
        || word
            .chars()
            .any(|c| c.is_whitespace() || "*<>{}$…|=?&@".contains(c))
        || word.contains("...")
    {
        return None;
    }
    let first = word.split('/').next().unwrap_or("");
    let rooted = word.contains('/') && top_dirs.iter().any(|d| d == first);
    let sourceish = word.contains('/')
        && word
            .rsplit_once('.')
            .is_some_and(|(_, ext)| SOURCE_EXTENSIONS.contains(&ext));
    if rooted || sourceish || link {
        Some(word.to_string())
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs() -> Vec<String> {
        ["crates", "docs", "pkg", "xtask", ".ci"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    fn paths(text: &str) -> Vec<String> {
        named_paths(text, &dirs())
            .into_iter()
            .map(|n| n.path)
            .collect()
    }

    #[test]
    fn code_spans_from_the_root_are_paths() {
        let text = "The core (`crates/tpsmeter-core/src/`) parses in `crates/tpsmeter-core/src/stream.rs`; \
                    CI is `.ci/run`.";
        assert_eq!(
            paths(text),
            [
                "crates/tpsmeter-core/src/",
                "crates/tpsmeter-core/src/stream.rs",
                ".ci/run"
            ]
        );
    }

    #[test]
    fn identifiers_flags_urls_and_placeholders_are_not_paths() {
        let text = "`LoadDriver`, `--max-tokens`, `tpsmeter/engine`, `https://x.dev/a/b.rs`, \
                    `/v1/chat/completions`, `crates/*/src`, `docs/<name>.md`, `$TPSMETER_CACHE/x.rs`, \
                    `Cargo.toml`, `a b/c.rs`";
        assert!(paths(text).is_empty(), "{:?}", paths(text));
    }

    #[test]
    fn a_source_file_written_from_elsewhere_is_named_so_it_fails() {
        // `engine/warm.rs` cannot be checked from the root: it must be reported, not skipped.
        assert_eq!(paths("see `engine/warm.rs`"), ["engine/warm.rs"]);
    }

    #[test]
    fn link_targets_lose_their_anchor_and_urls_are_skipped() {
        let text = "[metrics](docs/metrics.md#statistics), [readme](README.md), \
                    [up](#the-map), [site](https://example.com/a.md)";
        assert_eq!(paths(text), ["docs/metrics.md", "README.md"]);
    }

    #[test]
    fn fenced_blocks_are_read_word_by_word() {
        let text = "```\ncrates/\n  tpsmeter-core/ (crates/tpsmeter-core/src/lib.rs) → pkg/src/raw.ts\n```\n\
                    `inline` after the fence: `docs/testing.md`";
        assert_eq!(
            paths(text),
            [
                "crates/",
                "crates/tpsmeter-core/src/lib.rs",
                "pkg/src/raw.ts",
                "docs/testing.md"
            ]
        );
    }

    #[test]
    fn an_unclosed_backtick_is_text_and_each_path_is_reported_once_with_its_first_line() {
        let text = "`docs/a.md` and `docs/b.md\n`docs/a.md` again";
        let named = named_paths(text, &dirs());
        assert_eq!(
            named,
            [Named {
                line: 1,
                path: "docs/a.md".into()
            }]
        );
    }

    #[test]
    fn missing_paths_are_found_against_the_checkout() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let named = named_paths(
            "`xtask/src/map.rs`, `xtask/src/`, `xtask/src/no_such_file.rs`, `xtask/src/map.rs/`",
            &top_level_dirs(&root),
        );
        let missing: Vec<String> = missing(&root, &named).into_iter().map(|n| n.path).collect();
        assert_eq!(missing, ["xtask/src/no_such_file.rs", "xtask/src/map.rs/"]);
    }
}
