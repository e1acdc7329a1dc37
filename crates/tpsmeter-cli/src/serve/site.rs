//! `tpsmeter serve --www DIR`: the web site and the loaded model file, served from the API's
//! own origin so the page (a Vite build) runs cross-origin isolated against the engine.
//!
//! What it does: maps a GET/HEAD path that is not an API route to a file under DIR (`/` and
//! directories to their `index.html`), refusing anything that could name a file outside DIR;
//! streams the file in chunks with Content-Type, Content-Length and Cache-Control; serves the
//! GGUF the server loaded at `/models/<its file name>`; adds the isolation and lock-down
//! headers.
//!
//! What it does not do: SPA fallback (an unknown path is a 404), directory listings, Range
//! requests, compression, ETags, or hidden (dot) files.

use std::ffi::{OsStr, OsString};
use std::path::{Component, Path, PathBuf};

use anyhow::Context as _;
use bytes::Bytes;
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Response};
use tokio::io::AsyncReadExt;

use super::body::ChannelBody;

/// Bytes per body chunk: large enough that a model of hundreds of MB is a few thousand
/// frames, small enough that a download holds little memory.
const CHUNK_BYTES: usize = 256 << 10;

/// Chunks read ahead of a slow client: 1 MiB per download in memory at most.
const QUEUED_CHUNKS: usize = 4;

/// The file a directory path serves.
const INDEX: &str = "index.html";

/// `Cross-Origin-Opener-Policy`. With COEP it makes the page cross-origin isolated, which is
/// what gives it SharedArrayBuffer and a fine-grained `performance.now()` (the page times
/// tokens with it); on its own it keeps pages it opens, or that open it, from scripting it.
const COOP: (HeaderName, &str) = (
    HeaderName::from_static("cross-origin-opener-policy"),
    "same-origin",
);

/// `Cross-Origin-Embedder-Policy`: the other half of cross-origin isolation; the page loads
/// only same-origin subresources and CORS fetches, both of which pass it.
const COEP: (HeaderName, &str) = (
    HeaderName::from_static("cross-origin-embedder-policy"),
    "require-corp",
);

/// `Cross-Origin-Resource-Policy` on the site's files and the model: other origins' pages
/// cannot embed them (no-cors loads); this origin's isolated page still can.
const CORP: (HeaderName, &str) = (
    HeaderName::from_static("cross-origin-resource-policy"),
    "same-origin",
);

/// Browsers must trust our Content-Type rather than guess one (a guessed `text/html` on a
/// file that was not meant as a page is how uploads turn into scripts).
const NOSNIFF: (HeaderName, &str) = (header::X_CONTENT_TYPE_OPTIONS, "nosniff");

/// The page's URL (which may carry an API URL in its query) goes to nobody it links to.
const REFERRER_POLICY: (HeaderName, &str) = (header::REFERRER_POLICY, "no-referrer");

/// `Content-Security-Policy` of HTML responses. It has no `connect-src` and no `default-src`
/// (which `connect-src` would fall back to) on purpose: the page adds its own `connect-src`
/// list (the APIs the user chose) through a `<meta>` CSP at boot, and a page's policies
/// intersect, so a `connect-src` here would cap what the page may connect to.
/// `'wasm-unsafe-eval'` lets the engine compile its WebAssembly; `blob:` workers and images
/// are what the page makes itself.
pub const CONTENT_SECURITY_POLICY: &str = "script-src 'self' 'wasm-unsafe-eval'; \
     style-src 'self'; img-src 'self' data: blob:; font-src 'self'; worker-src 'self' blob:; \
     object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Files that are not content-hashed: a rebuild changes them under the same name, so the
/// browser must revalidate every time.
const NO_CACHE: &str = "no-cache";

/// The path the page reads to learn whether `tpsmeter serve` serves it (see `site_json`).
const SITE_JSON: &str = "/site.json";

/// Vite's `assets/` output carries a content hash in every file name: a name never changes
/// meaning, so the browser may keep it for a year without asking.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// The GGUF model's Content-Type.
const GGUF_TYPE: &str = "application/octet-stream";

/// The site's files and the model the server loaded.
#[derive(Debug)]
pub struct Site {
    /// DIR, canonical: every file served resolves to a path under it.
    root: PathBuf,
    model: Option<Model>,
}

#[derive(Debug)]
struct Model {
    /// The file name `/models/` serves it under.
    name: OsString,
    path: PathBuf,
}

impl Site {
    /// The site in `dir`, which must have an `index.html`, and the model file `model`, served
    /// at `/models/<file name>`.
    pub fn open(dir: &Path, model: Option<&Path>) -> anyhow::Result<Self> {
        let root = dir
            .canonicalize()
            .with_context(|| format!("--www {}", dir.display()))?;
        anyhow::ensure!(
            root.join(INDEX).is_file(),
            "--www {}: no {INDEX} there (give the directory of a built site, e.g. target/www)",
            dir.display()
        );
        let model = match model {
            Some(m) => {
                let path = m
                    .canonicalize()
                    .with_context(|| format!("--model {}", m.display()))?;
                let name = path
                    .file_name()
                    .with_context(|| format!("--model {}: not a file", m.display()))?
                    .to_owned();
                Some(Model { name, path })
            }
            None => None,
        };
        Ok(Self { root, model })
    }

    /// The response to a GET or HEAD of `url_path` (not an API route), or `None` when there is
    /// no such file (the caller answers 404).
    pub async fn respond(&self, method: &Method, url_path: &str) -> Option<Response<ChannelBody>> {
        let head = method == Method::HEAD;
        if url_path == SITE_JSON {
            return Some(self.site_json(head));
        }
        if let Some(name) = url_path.strip_prefix("/models/") {
            let model = self.model.as_ref()?;
            if OsStr::new(&percent_decode(name)?) != model.name {
                return None;
            }
            return send(&model.path, head, GGUF_TYPE, NO_CACHE).await;
        }
        let (file, rel) = self.resolve(relative(url_path)?).await?;
        let content_type = mime(&rel);
        let mut r = send(&file, head, content_type, cache_control(&rel)).await?;
        if content_type.starts_with("text/html") {
            r.headers_mut().insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CONTENT_SECURITY_POLICY),
            );
        }
        Some(r)
    }

    /// `/site.json`: tells the page it is served by `tpsmeter serve` and where the model is.
    /// The built site ships this path saying there is no server, so on a static host the
    /// page's probe finds a file, not a 404 (a console error on every visit).
    fn site_json(&self, head: bool) -> Response<ChannelBody> {
        let model = self.model.as_ref().map(|m| {
            let name = m.name.to_string_lossy();
            let id = name.strip_suffix(".gguf").unwrap_or(&name).to_owned();
            serde_json::json!({ "id": id, "url": format!("models/{}", percent_encode(&name)) })
        });
        let body = serde_json::json!({ "server": "tpsmeter serve", "model": model }).to_string();
        let len = body.len();
        let mut r = Response::new(if head {
            ChannelBody::empty()
        } else {
            ChannelBody::full(body)
        });
        let h = r.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static(NO_CACHE));
        h.insert(CORP.0, HeaderValue::from_static(CORP.1));
        isolate(h);
        r
    }

    /// The canonical file `rel` names and the path relative to the root it is served as
    /// (`index.html` appended for a directory), if both stay under the root: this is what
    /// refuses a symlink out of the site.
    async fn resolve(&self, mut rel: PathBuf) -> Option<(PathBuf, PathBuf)> {
        let mut file = self.inside(&self.root.join(&rel)).await?;
        if tokio::fs::metadata(&file).await.ok()?.is_dir() {
            rel.push(INDEX);
            file = self.inside(&file.join(INDEX)).await?;
        }
        Some((file, rel))
    }

    async fn inside(&self, path: &Path) -> Option<PathBuf> {
        let canonical = tokio::fs::canonicalize(path).await.ok()?;
        canonical.starts_with(&self.root).then_some(canonical)
    }
}

/// Adds the headers every response carries when the site is served: with them the page is
/// cross-origin isolated, and neither sniffs types nor leaks its URL.
pub fn isolate(headers: &mut HeaderMap) {
    for (name, value) in [COOP, COEP, NOSNIFF, REFERRER_POLICY] {
        headers.insert(name, HeaderValue::from_static(value));
    }
}

/// Whether `url_path` is one of the API's routes, which the site never shadows.
pub fn is_api(url_path: &str) -> bool {
    let p = url_path.trim_end_matches('/');
    matches!(
        p,
        "/health" | "/v1" | "/models" | "/chat/completions" | "/completions"
    ) || p.starts_with("/v1/")
}

/// The file a URL path names, relative to the site's root, or `None` for anything that could
/// name a file outside it or a hidden one. Purely lexical (nothing on the file system is
/// touched), so a hostile path is refused before any lookup.
fn relative(url_path: &str) -> Option<PathBuf> {
    let decoded = percent_decode(url_path)?;
    // Backslashes are separators on Windows; NUL ends a C path; ':' starts a drive or an
    // NTFS stream. None belongs in a built site's file names.
    if decoded.contains(['\\', '\0', ':']) {
        return None;
    }
    let rest = decoded.strip_prefix('/')?;
    let mut rel = PathBuf::new();
    let mut segments = rest.split('/').peekable();
    while let Some(seg) = segments.next() {
        if seg.is_empty() && segments.peek().is_none() {
            break;
        }
        // An empty segment (`//etc`) would make the rest absolute; `.` and `..` are dot
        // files too, and hidden files (`.env`, `.git`) are never part of a site.
        if seg.is_empty() || seg.starts_with('.') {
            return None;
        }
        let mut parts = Path::new(seg).components();
        match (parts.next(), parts.next()) {
            (Some(Component::Normal(n)), None) if n == OsStr::new(seg) => rel.push(seg),
            _ => return None,
        }
    }
    if rest.is_empty() || rest.ends_with('/') {
        rel.push(INDEX);
    }
    Some(rel)
}

/// `%XX` decoding of a URL path (once: `%252e` is the file name `%2e`), or `None` for a
/// malformed escape or bytes that are not UTF-8.
/// `s` with every byte outside RFC 3986's unreserved set percent-encoded (a file name as
/// one URL path segment).
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn percent_decode(s: &str) -> Option<String> {
    fn hex(c: u8) -> Option<u8> {
        char::from(c)
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hi = hex(*bytes.get(i + 1)?)?;
            let lo = hex(*bytes.get(i + 2)?)?;
            out.push((hi << 4) | lo);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Content-Type by extension; anything else is bytes (and with nosniff stays bytes).
fn mime(rel: &Path) -> &'static str {
    let ext = rel
        .extension()
        .and_then(OsStr::to_str)
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("json" | "map") => "application/json",
        Some("webmanifest") => "application/manifest+json",
        Some("wasm") => "application/wasm",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("txt") => "text/plain; charset=utf-8",
        Some("woff2") => "font/woff2",
        _ => GGUF_TYPE,
    }
}

/// Cache-Control by the path served: hashed `assets/` files are immutable; everything else
/// (pages, `sw.js`, the manifest) is revalidated, so a rebuild shows at the next load.
fn cache_control(rel: &Path) -> &'static str {
    let mut parts = rel.components();
    let under_assets =
        parts.next() == Some(Component::Normal(OsStr::new("assets"))) && parts.next().is_some();
    let unhashed = rel.file_name() == Some(OsStr::new(INDEX)) || rel == Path::new("sw.js");
    if under_assets && !unhashed {
        IMMUTABLE
    } else {
        NO_CACHE
    }
}

/// A response with `path`'s bytes (or, for HEAD, its headers only), or `None` when it is not
/// a readable file.
async fn send(
    path: &Path,
    head: bool,
    content_type: &'static str,
    cache_control: &'static str,
) -> Option<Response<ChannelBody>> {
    let file = tokio::fs::File::open(path).await.ok()?;
    // The length of the file opened, not of whatever the path names by now.
    let meta = file.metadata().await.ok()?;
    if !meta.is_file() {
        return None;
    }
    let len = meta.len();
    let body = if head {
        ChannelBody::empty()
    } else {
        stream(file, len)
    };
    let mut r = Response::new(body);
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(cache_control),
    );
    h.insert(CORP.0, HeaderValue::from_static(CORP.1));
    isolate(h);
    Some(r)
}

/// The first `len` bytes of `file` as a body of chunks of [`CHUNK_BYTES`], read as the client
/// takes them.
fn stream(file: tokio::fs::File, len: u64) -> ChannelBody {
    let (body, tx) = ChannelBody::bounded(QUEUED_CHUNKS);
    tokio::spawn(async move {
        let mut file = file.take(len);
        loop {
            let mut buf = vec![0; CHUNK_BYTES];
            let mut filled = 0;
            while filled < buf.len() {
                match file.read(&mut buf[filled..]).await {
                    Ok(0) => break,
                    Ok(n) => filled += n,
                    // Ending the body short of its Content-Length makes hyper abort the
                    // connection: the client sees a failed download, never a short file
                    // passed off as whole.
                    Err(_) => return,
                }
            }
            if filled == 0 {
                return;
            }
            buf.truncate(filled);
            let end = filled < CHUNK_BYTES;
            // A send error means the client went away: stop reading.
            if tx.send(Bytes::from(buf)).await.is_err() || end {
                return;
            }
        }
    });
    body
}

#[cfg(test)]
#[path = "site_tests.rs"]
mod tests;
