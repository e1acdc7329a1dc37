//! Unit tests of `site.rs`: path resolution, headers, streaming, `/models/` and `/site.json`.
#![allow(clippy::unwrap_used)]
use super::*;
use http_body_util::BodyExt;

/// A fresh directory under the system's temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let p = std::env::temp_dir().join(format!("tpsmeter-site-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }

    fn write(&self, rel: &str, bytes: &[u8]) -> PathBuf {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A site with `index.html`, `assets/app-1a2b.js`, `sw.js` and a model file beside it.
fn site(name: &str) -> (TempDir, Site) {
    let tmp = TempDir::new(name);
    tmp.write("www/index.html", b"<!doctype html><title>t</title>");
    tmp.write("www/assets/app-1a2b.js", b"console.log(1)");
    tmp.write("www/sw.js", b"self.x = 1");
    tmp.write("www/docs/index.html", b"docs");
    tmp.write("www/.env", b"SECRET=1");
    let model = tmp.write("m/Tiny.Q4_1.gguf", b"GGUF\x03\0\0\0rest");
    let site = Site::open(&tmp.0.join("www"), Some(&model)).unwrap();
    (tmp, site)
}

fn header<'a>(r: &'a Response<ChannelBody>, name: &str) -> Option<&'a str> {
    r.headers().get(name).map(|v| v.to_str().unwrap())
}

async fn body(r: Response<ChannelBody>) -> Vec<u8> {
    r.into_body().collect().await.unwrap().to_bytes().to_vec()
}

#[test]
fn relative_maps_root_and_directories_to_index_html() {
    let p = |s| relative(s).map(|p| p.to_string_lossy().into_owned());
    assert_eq!(p("/").as_deref(), Some("index.html"));
    assert_eq!(p("/docs/").as_deref(), Some("docs/index.html"));
    assert_eq!(p("/assets/a.js").as_deref(), Some("assets/a.js"));
    assert_eq!(p("/a%20b.txt").as_deref(), Some("a b.txt"));
    // Decoded once: `%252e%252e` names a file literally called `%2e%2e`.
    assert_eq!(p("/%252e%252e").as_deref(), Some("%2e%2e"));
}

#[test]
fn relative_refuses_every_way_out_of_the_root() {
    for path in [
        "/..",
        "/../etc/passwd",
        "/assets/../../etc/passwd",
        "/%2e%2e/etc/passwd",
        "/%2E%2E/etc/passwd",
        "/.%2e/etc/passwd",
        "/assets/..%2f..%2fetc/passwd",
        "/%2f%2fetc/passwd",
        "//etc/passwd",
        "/assets//x.js",
        "/..\\etc\\passwd",
        "/%5c..%5cetc",
        "/index.html%00.js",
        "/C:/Windows/win.ini",
        "/c%3a/x",
        "/./index.html",
        "/.env",
        "/.git/config",
        "etc/passwd",
        "/%zz",
        "/%2",
        "/%ff%fe",
    ] {
        assert_eq!(relative(path), None, "{path}");
    }
}

#[test]
fn content_types_by_extension() {
    for (file, want) in [
        ("index.html", "text/html; charset=utf-8"),
        ("A.HTML", "text/html; charset=utf-8"),
        ("a.js", "text/javascript; charset=utf-8"),
        ("a.mjs", "text/javascript; charset=utf-8"),
        ("a.css", "text/css; charset=utf-8"),
        ("a.json", "application/json"),
        ("a.js.map", "application/json"),
        ("a.wasm", "application/wasm"),
        ("a.svg", "image/svg+xml"),
        ("a.png", "image/png"),
        ("favicon.ico", "image/x-icon"),
        ("manifest.webmanifest", "application/manifest+json"),
        ("a.txt", "text/plain; charset=utf-8"),
        ("a.woff2", "font/woff2"),
        ("m.gguf", "application/octet-stream"),
        ("no-extension", "application/octet-stream"),
    ] {
        assert_eq!(mime(Path::new(file)), want, "{file}");
    }
}

#[test]
fn only_hashed_assets_are_immutable() {
    for (rel, want) in [
        ("assets/app-1a2b.js", IMMUTABLE),
        ("assets/sub/x.wasm", IMMUTABLE),
        ("assets/index.html", NO_CACHE),
        ("assets", NO_CACHE),
        ("index.html", NO_CACHE),
        ("sw.js", NO_CACHE),
        ("manifest.webmanifest", NO_CACHE),
        ("docs/assets/x.js", NO_CACHE),
    ] {
        assert_eq!(cache_control(Path::new(rel)), want, "{rel}");
    }
}

#[test]
fn api_routes_are_never_site_files() {
    for p in [
        "/health",
        "/v1",
        "/v1/models",
        "/v1/anything",
        "/models",
        "/models/",
        "/chat/completions",
        "/completions",
    ] {
        assert!(is_api(p), "{p}");
    }
    for p in ["/", "/index.html", "/models/x.gguf", "/v1x", "/assets/a.js"] {
        assert!(!is_api(p), "{p}");
    }
}

#[test]
fn open_requires_an_index_html() {
    let tmp = TempDir::new("no-index");
    let e = Site::open(&tmp.0, None).unwrap_err().to_string();
    assert!(e.contains("no index.html"), "{e}");
    assert!(Site::open(&tmp.0.join("missing"), None).is_err());
}

#[tokio::test]
async fn pages_and_assets_carry_their_headers() {
    let (_tmp, site) = site("headers");
    let r = site.respond(&Method::GET, "/").await.unwrap();
    assert_eq!(header(&r, "content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(header(&r, "content-length"), Some("31"));
    assert_eq!(header(&r, "cache-control"), Some(NO_CACHE));
    assert_eq!(
        header(&r, "content-security-policy"),
        Some(CONTENT_SECURITY_POLICY)
    );
    assert_eq!(
        header(&r, "cross-origin-opener-policy"),
        Some("same-origin")
    );
    assert_eq!(
        header(&r, "cross-origin-embedder-policy"),
        Some("require-corp")
    );
    assert_eq!(
        header(&r, "cross-origin-resource-policy"),
        Some("same-origin")
    );
    assert_eq!(header(&r, "x-content-type-options"), Some("nosniff"));
    assert_eq!(header(&r, "referrer-policy"), Some("no-referrer"));
    assert_eq!(body(r).await, b"<!doctype html><title>t</title>");

    let r = site
        .respond(&Method::GET, "/assets/app-1a2b.js")
        .await
        .unwrap();
    assert_eq!(
        header(&r, "content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert_eq!(header(&r, "cache-control"), Some(IMMUTABLE));
    assert_eq!(header(&r, "content-security-policy"), None);
    assert_eq!(body(r).await, b"console.log(1)");

    let r = site.respond(&Method::GET, "/sw.js").await.unwrap();
    assert_eq!(header(&r, "cache-control"), Some(NO_CACHE));

    for dir in ["/docs", "/docs/"] {
        let r = site.respond(&Method::GET, dir).await.unwrap();
        assert_eq!(header(&r, "content-type"), Some("text/html; charset=utf-8"));
        assert_eq!(body(r).await, b"docs");
    }
}

#[tokio::test]
async fn missing_hidden_and_escaping_paths_are_not_found() {
    let (tmp, site) = site("not-found");
    // A file beside the root that a traversal would reach.
    tmp.write("secret.txt", b"secret");
    for path in [
        "/nope.js",
        "/nope",
        "/assets/",
        "/.env",
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/assets/%2e%2e/%2e%2e/secret.txt",
    ] {
        assert!(
            site.respond(&Method::GET, path).await.is_none(),
            "{path} was served"
        );
    }
}

#[cfg(unix)]
#[tokio::test]
async fn symlinks_out_of_the_root_are_refused() {
    let (tmp, site) = site("symlink");
    let secret = tmp.write("secret.txt", b"secret");
    let www = tmp.0.join("www");
    std::os::unix::fs::symlink(&secret, www.join("out.txt")).unwrap();
    std::os::unix::fs::symlink(&tmp.0, www.join("up")).unwrap();
    std::os::unix::fs::symlink(www.join("sw.js"), www.join("in.js")).unwrap();
    assert!(site.respond(&Method::GET, "/out.txt").await.is_none());
    assert!(site.respond(&Method::GET, "/up/secret.txt").await.is_none());
    // A link that stays inside the site is followed.
    let r = site.respond(&Method::GET, "/in.js").await.unwrap();
    assert_eq!(body(r).await, b"self.x = 1");
}

#[tokio::test]
async fn site_json_names_the_server_and_the_model_url() {
    let (_tmp, site) = site("site-json");
    let r = site.respond(&Method::GET, "/site.json").await.unwrap();
    assert_eq!(header(&r, "content-type"), Some("application/json"));
    assert_eq!(header(&r, "cache-control"), Some("no-cache"));
    let v: serde_json::Value = serde_json::from_slice(&body(r).await).unwrap();
    assert_eq!(v["server"], "tpsmeter serve");
    assert_eq!(v["model"]["id"], "Tiny.Q4_1");
    // The URL the page fetches is one the model route answers.
    let url = format!("/{}", v["model"]["url"].as_str().unwrap());
    assert!(site.respond(&Method::GET, &url).await.is_some(), "{url}");
    assert_eq!(percent_encode("a b+c.gguf"), "a%20b%2Bc.gguf");
}

#[tokio::test]
async fn models_serves_only_the_loaded_model() {
    let (_tmp, site) = site("model");
    for path in ["/models/Tiny.Q4_1.gguf", "/models/Tiny%2EQ4_1.gguf"] {
        let r = site.respond(&Method::GET, path).await.unwrap();
        assert_eq!(header(&r, "content-type"), Some("application/octet-stream"));
        assert_eq!(header(&r, "content-length"), Some("12"));
        assert_eq!(
            header(&r, "cross-origin-resource-policy"),
            Some("same-origin")
        );
        assert_eq!(body(r).await, b"GGUF\x03\0\0\0rest");
    }
    for path in [
        "/models/other.gguf",
        "/models/Tiny.Q4_1",
        "/models/../m/Tiny.Q4_1.gguf",
        "/models/index.html",
    ] {
        assert!(site.respond(&Method::GET, path).await.is_none(), "{path}");
    }
    let (_tmp, no_model) = {
        let tmp = TempDir::new("no-model");
        tmp.write("index.html", b"x");
        let s = Site::open(&tmp.0, None).unwrap();
        (tmp, s)
    };
    assert!(
        no_model
            .respond(&Method::GET, "/models/Tiny.Q4_1.gguf")
            .await
            .is_none()
    );
}

#[tokio::test]
async fn head_has_the_length_but_no_body() {
    let (_tmp, site) = site("head");
    let r = site
        .respond(&Method::HEAD, "/models/Tiny.Q4_1.gguf")
        .await
        .unwrap();
    assert_eq!(header(&r, "content-length"), Some("12"));
    assert!(hyper::body::Body::is_end_stream(r.body()));
    assert!(body(r).await.is_empty());
}

/// Chunks of a file several chunks long (and not a whole number of them) come through the
/// bounded channel in order, none lost or repeated, none larger than a chunk.
#[tokio::test]
async fn a_file_larger_than_a_chunk_streams_byte_identical() {
    let tmp = TempDir::new("stream");
    let len = 3 * CHUNK_BYTES + 12_345;
    let data: Vec<u8> = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
    let path = tmp.write("big.bin", &data);
    let file = tokio::fs::File::open(&path).await.unwrap();
    let mut b = stream(file, len as u64);
    let mut got = Vec::new();
    let mut frames = 0;
    while let Some(f) = b.frame().await {
        let chunk = f.unwrap().into_data().unwrap();
        assert!(chunk.len() <= CHUNK_BYTES);
        got.extend_from_slice(&chunk);
        frames += 1;
    }
    assert_eq!(frames, 4);
    assert!(got == data, "streamed bytes differ from the file");
}
