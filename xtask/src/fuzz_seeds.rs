//! Seed corpora for `cargo xtask fuzz`, written at run time from the real files: the cached
//! SmolLM2 and Gemma 3 models (their metadata, shrunk to a fuzzable size, and raw cuts of the
//! file) and the core's recorded streams of every API. Nothing here is committed: the models
//! are hundreds of MB, and the streams already live in the repository.
//!
//! The GGUF shrinker below reads only what it rewrites (keys, value types, array lengths):
//! xtask depends on none of our crates, and a seed that the real reader then refuses is
//! still a useful seed.

use crate::assets::{gemma_path, model_path};
use crate::sh::repo_root;
use anyhow::{Context, Result, bail};
use std::collections::HashSet;
use std::path::Path;

/// Tokens kept per vocabulary array when shrinking a model's metadata: enough for every
/// special and control token both models define (Gemma's turn markers are ids 105/106),
/// small enough that a seed stays far below the targets' `-max_len`.
const KEEP_TOKENS: usize = 1024;
/// Tensor infos kept: a few of each kind the config reads (token embedding, a layer's norms).
const KEEP_TENSORS: usize = 24;
/// Raw prefixes of each model: inside the first key, inside the vocabulary, and deeper.
const RAW_CUTS: [usize; 3] = [64, 4 << 10, 48 << 10];

/// Writes every target's seeds under `corpus_root/<target>/` (existing files are kept, so a
/// corpus grown by earlier campaigns survives).
pub fn write_all(corpus_root: &Path) -> Result<()> {
    let mut headers = Vec::new();
    for (name, path) in [("smollm2", model_path()), ("gemma3", gemma_path())] {
        if !path.exists() {
            eprintln!(
                "fuzz seeds: {} is missing, its seeds are skipped",
                path.display()
            );
            continue;
        }
        let head = read_prefix(&path, 32 << 20)?;
        let shrunk = shrink_gguf(&head, KEEP_TOKENS, KEEP_TENSORS)
            .with_context(|| format!("shrink {}", path.display()))?;
        let bare = shrink_gguf(&head, KEEP_TOKENS, 0)?;
        headers.push((format!("{name}-meta"), shrunk));
        headers.push((format!("{name}-meta-no-tensors"), bare));
        for cut in RAW_CUTS {
            headers.push((
                format!("{name}-cut{cut}"),
                head[..cut.min(head.len())].to_vec(),
            ));
        }
    }
    for (name, bytes) in &headers {
        write(corpus_root, "gguf_slice", name, bytes)?;
        write(corpus_root, "model_metadata", name, bytes)?;
        // gguf_push reads a cut-count byte and cut lengths first: whole, and cut in three.
        let mut whole = vec![0];
        whole.extend_from_slice(bytes);
        write(corpus_root, "gguf_push", &format!("{name}-whole"), &whole)?;
        let mut cut = vec![2, 7, 0, 200, 1];
        cut.extend_from_slice(bytes);
        write(corpus_root, "gguf_push", &format!("{name}-cut"), &cut)?;
    }
    stream_seeds(corpus_root)?;
    Ok(())
}

/// Writes the corpus `crates/tpsmeter-cli/tests/fuzz_replay.rs` replays (anew, so it holds
/// exactly this checkout's and the cached models' seeds) and returns its directory, the
/// test's `TPSMETER_FUZZ_CORPUS`.
pub fn write_replay_corpus() -> Result<std::path::PathBuf> {
    let dir = crate::assets::cache_dir()
        .join("fuzz")
        .join("replay-corpus");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("remove {}", dir.display()))?;
    }
    write_all(&dir)?;
    Ok(dir)
}

/// `cargo xtask fuzz-seeds`: writes the replay corpus and prints the variable that points the
/// test at it (`eval "$(cargo xtask fuzz-seeds)"`).
pub fn run() -> Result<()> {
    let dir = write_replay_corpus()?;
    println!("export TPSMETER_FUZZ_CORPUS={}", dir.display());
    Ok(())
}

fn write(root: &Path, target: &str, name: &str, bytes: &[u8]) -> Result<()> {
    let dir = root.join(target);
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    let path = dir.join(format!("seed-{name}"));
    std::fs::write(&path, bytes).with_context(|| format!("write {}", path.display()))
}

fn read_prefix(path: &Path, max: u64) -> Result<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path).with_context(|| format!("open {}", path.display()))?;
    let mut out = Vec::new();
    file.take(max).read_to_end(&mut out)?;
    Ok(out)
}

/// The core's golden streams, each as `stream_parser` reads it: a mode byte (the API's index
/// in `Api::ALL` above the low bit, which is set for tiny caps), a cut count with cut lengths,
/// then the body. (`fuzz_replay`'s `stream_seeds_name_every_api` checks each seed's mode
/// against `tpsmeter_fuzz::targets::stream_parser::mode` and `Api::ALL`.)
fn stream_seeds(root: &Path) -> Result<()> {
    let dir = repo_root().join("crates/tpsmeter-core/tests/golden");
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .with_context(|| format!("read {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("sse" | "ndjson")
            )
        })
        .collect();
    entries.sort();
    for path in entries {
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let Some(api) = api_index(stem) else {
            bail!("no API known for golden stream {}", path.display());
        };
        let body = std::fs::read(&path)?;
        for (tag, mode, cuts) in [
            ("whole", api << 1, &[0u8][..]),
            ("cut", api << 1, &[3, 5, 0, 1, 0, 40, 0][..]),
            ("tiny-caps", api << 1 | 1, &[1, 30, 0][..]),
        ] {
            let mut seed = vec![mode];
            seed.extend_from_slice(cuts);
            seed.extend_from_slice(&body);
            write(root, "stream_parser", &format!("{stem}-{tag}"), &seed)?;
        }
    }
    Ok(())
}

/// Index in `tpsmeter_core::Api::ALL` of the API a golden file records (by its name).
fn api_index(stem: &str) -> Option<u8> {
    const PREFIXES: [(&str, u8); 9] = [
        ("openai_chat", 0),
        ("openai_completions", 1),
        ("openai_responses", 2),
        ("anthropic", 3),
        ("gemini", 4),
        ("ollama_chat", 5),
        ("ollama_error", 5),
        ("ollama_generate", 6),
        ("vercel_ui", 7),
    ];
    PREFIXES
        .iter()
        .find(|(p, _)| stem.starts_with(p))
        .map(|&(_, i)| i)
}

/// Rewrites a GGUF header with every array cut to its first `keep` elements (merges kept
/// only where both halves and their join survive, so a BPE vocabulary stays buildable) and
/// only the first `tensors` tensor infos, without tensor data. Array types are read per
/// element, so a string array is walked, not assumed fixed-size.
fn shrink_gguf(bytes: &[u8], keep: usize, tensors: usize) -> Result<Vec<u8>> {
    let mut r = Reader { bytes, pos: 0 };
    if r.take(4)? != b"GGUF" {
        bail!("not a GGUF file");
    }
    let version = r.u32()?;
    let n_tensors = r.u64()?;
    let n_kv = r.u64()?;
    let mut kvs: Vec<(String, u32, Vec<u8>)> = Vec::new();
    let mut kept_tokens: HashSet<String> = HashSet::new();
    for _ in 0..n_kv {
        let key = r.string()?;
        let ty = r.u32()?;
        let mut value = Vec::new();
        if ty == ARRAY {
            let elem = r.u32()?;
            let n = r.u64()?;
            let mut items = Vec::new();
            for _ in 0..n {
                items.push(r.value(elem)?);
            }
            if key == "tokenizer.ggml.tokens" {
                kept_tokens = items.iter().take(keep).map(|b| str_of(b)).collect();
            }
            let items: Vec<Vec<u8>> = if key == "tokenizer.ggml.merges" {
                items
                    .into_iter()
                    .filter(|m| {
                        let m = str_of(m);
                        m.split_once(' ').is_some_and(|(a, b)| {
                            kept_tokens.contains(a)
                                && kept_tokens.contains(b)
                                && kept_tokens.contains(&format!("{a}{b}"))
                        })
                    })
                    .take(keep)
                    .collect()
            } else {
                items.into_iter().take(keep).collect()
            };
            value.extend_from_slice(&elem.to_le_bytes());
            value.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for item in items {
                value.extend_from_slice(&item);
            }
        } else {
            value = r.value(ty)?;
        }
        kvs.push((key, ty, value));
    }
    let mut infos = Vec::new();
    for _ in 0..n_tensors.min(tensors as u64) {
        let start = r.pos;
        r.string()?;
        let dims = r.u32()?;
        r.take(8 * dims as usize + 4 + 8)?;
        infos.push(&bytes[start..r.pos]);
    }
    let mut out = b"GGUF".to_vec();
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&(infos.len() as u64).to_le_bytes());
    out.extend_from_slice(&(kvs.len() as u64).to_le_bytes());
    for (key, ty, value) in &kvs {
        out.extend_from_slice(&(key.len() as u64).to_le_bytes());
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(&ty.to_le_bytes());
        out.extend_from_slice(value);
    }
    for info in infos {
        out.extend_from_slice(info);
    }
    Ok(out)
}

const STRING: u32 = 8;
const ARRAY: u32 = 9;

/// A GGUF string item's text (its 8-byte length prefix dropped).
fn str_of(item: &[u8]) -> String {
    String::from_utf8_lossy(item.get(8..).unwrap_or_default()).into_owned()
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            bail!("GGUF header ends early at byte {}", self.pos);
        };
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    fn string(&mut self) -> Result<String> {
        let n = self.u64()?;
        let b = self.take(usize::try_from(n)?)?;
        Ok(String::from_utf8_lossy(b).into_owned())
    }

    /// One value of type `ty`, as its raw encoded bytes.
    fn value(&mut self, ty: u32) -> Result<Vec<u8>> {
        let start = self.pos;
        match ty {
            0 | 1 | 7 => self.take(1).map(drop)?,
            2 | 3 => self.take(2).map(drop)?,
            4..=6 => self.take(4).map(drop)?,
            10..=12 => self.take(8).map(drop)?,
            STRING => self.string().map(drop)?,
            // Nested arrays: no real model has them, and the hand seeds cover them.
            other => bail!("GGUF value type {other} is not shrunk"),
        }
        Ok(self.bytes[start..self.pos].to_vec())
    }
}
