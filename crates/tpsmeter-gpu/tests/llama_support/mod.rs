//! llama.cpp as the independent peer of the whole-model tests: a `llama-server` child
//! process, greedy completions from it, and the F32 expansion of a GGUF by `llama-quantize`.
//! The binaries come from `TPSMETER_LLAMA_BIN` (built by `cargo xtask setup`).
#![allow(dead_code, clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A llama-server child process, killed on drop.
pub struct Server {
    child: Child,
    pub port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `bin/llama-server` on `model` (one thread, one slot, 1024 positions, no flash
/// attention: the closest llama.cpp gets to a plain f32 attention) and waits for its own
/// "listening on" log line, not a timer.
///
/// One thread, no polling: a test binary runs its tests two at a time, each with a server
/// of its own, beside our engine on lavapipe's threads. ggml's workers spin at their
/// barriers, so two servers of two threads on two cores spent their time spinning
/// (measured: `model_llamacpp` took 499 s, each server at ~100 % of a core for minutes of
/// 64-token answers). Threads do not change a greedy answer: each thread takes whole rows
/// of a product.
pub fn start_server(bin: &Path, model: &Path) -> Server {
    // Ask the OS for a free port, then hand it to the server.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(bin.join("llama-server"))
        .arg("-m")
        .arg(model)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["-t", "1", "--poll", "0", "-c", "1024", "-np", "1"])
        .args(["--flash-attn", "off"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start llama-server from {}: {e}", bin.display()));
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut log = Vec::new();
    loop {
        match lines.next() {
            Some(Ok(line)) if line.contains("listening on") => break,
            Some(Ok(line)) => log.push(line),
            _ => panic!("llama-server exited before listening:\n{}", log.join("\n")),
        }
    }
    // Keep draining its log so it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    Server { child, port }
}

/// Greedy completion of `prompt` ids (sent as ids, so both sides see the same ones); returns
/// the generated ids. With `ignore_eos` llama.cpp bans end-of-generation tokens and always
/// generates `n`; without, it stops at one and leaves it out.
pub fn complete(server: &Server, prompt: &[u32], n: usize, ignore_eos: bool) -> Vec<u32> {
    let body = serde_json::json!({
        "prompt": prompt,
        "n_predict": n,
        "temperature": 0.0,
        "top_k": 1,
        "ignore_eos": ignore_eos,
        "cache_prompt": false,
        "return_tokens": true,
    })
    .to_string();
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    write!(
        s,
        "POST /completion HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).unwrap();
    let text = String::from_utf8_lossy(&resp);
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(
        head.starts_with("HTTP/1.1 200"),
        "llama-server answered {head}\n{body}"
    );
    assert!(
        !head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "chunked reply"
    );
    let reply: serde_json::Value = serde_json::from_str(body).unwrap();
    reply["tokens"]
        .as_array()
        .unwrap_or_else(|| panic!("no tokens in llama-server's reply: {reply}"))
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect()
}

/// Env var gate shared by the asset tests: `None` = skip (with a message), panics in CI
/// (`TPSMETER_REQUIRE_ASSETS=1`).
pub fn asset(var: &str) -> Option<PathBuf> {
    match std::env::var_os(var) {
        Some(p) if Path::new(&p).exists() => Some(p.into()),
        _ if std::env::var("TPSMETER_REQUIRE_ASSETS").as_deref() == Ok("1") => {
            panic!("{var} is not set or missing and TPSMETER_REQUIRE_ASSETS=1")
        }
        _ => {
            eprintln!("skipping: {var} is not set or does not exist");
            None
        }
    }
}

/// Where requantized variants are cached: `$TPSMETER_VARIANTS_DIR`, default
/// `~/.cache/tpsmeter/variants`.
pub fn variants_dir() -> PathBuf {
    std::env::var_os("TPSMETER_VARIANTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
            Path::new(&home).join(".cache/tpsmeter/variants")
        })
}

/// `llama-quantize --allow-requantize --pure src dst ty`, cached; written through a
/// temporary name so concurrent test runs never see half a file.
pub fn quantize(bin: &Path, src: &Path, dst: &Path, ty: &str) -> PathBuf {
    if dst.exists() {
        return dst.to_owned();
    }
    std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
    let tmp = dst.with_extension(format!("tmp{}", std::process::id()));
    let out = Command::new(bin.join("llama-quantize"))
        .args(["--allow-requantize", "--pure"])
        .arg(src)
        .arg(&tmp)
        .args([ty, "2"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "llama-quantize {ty} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::rename(&tmp, dst).unwrap();
    dst.to_owned()
}

/// The file stem before its first dot (`SmolLM2-135M-Instruct.Q4_1.gguf` ->
/// `SmolLM2-135M-Instruct`): variants are named `<stem>.<TYPE>.gguf`.
pub fn model_stem(model: &Path) -> String {
    let stem = model.file_stem().unwrap().to_string_lossy().into_owned();
    stem.split('.').next().unwrap_or(&stem).to_owned()
}

/// The F32 expansion of `model` by `llama-quantize` (same cache and naming as
/// quant_variants.rs): the very weights our engine and reference compute with, in a form
/// llama.cpp multiplies in f32 (on a quantized file its CPU backend first rounds activations
/// to 8 bits, which moves logits by tenths).
pub fn f32_variant(bin: &Path, model: &Path) -> PathBuf {
    let dst = variants_dir().join(format!("{}.F32.gguf", model_stem(model)));
    quantize(bin, model, &dst, "F32")
}
