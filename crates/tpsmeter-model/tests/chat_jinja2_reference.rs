//! Every chat template llama.cpp collects in `models/templates` (real Hugging Face templates:
//! Llama 3.x, Qwen, Gemma, Mistral, DeepSeek, Phi, ...) rendered by us and by Python's Jinja2
//! configured exactly as `transformers` configures it: same text, or both refuse.
#![allow(clippy::unwrap_used)]

mod tokenizer_support;

use std::io::Write;
use std::process::{Command, Stdio};

use tokenizer_support::llama_cpp_root;
use tpsmeter_model::chat::{ChatMessage, ChatTemplate, RenderOptions};

/// The reference: `transformers`' `_compile_jinja_template` set-up (sandboxed environment,
/// trim_blocks, lstrip_blocks, loop controls, its `tojson`, `raise_exception`,
/// `strftime_now`). Reads one JSON job per line, writes one JSON result per line.
const REFERENCE: &str = r#"
import json, sys, datetime
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.ext import loopcontrols
from jinja2.exceptions import TemplateError

def raise_exception(message):
    raise TemplateError(message)

def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

for line in sys.stdin:
    job = json.loads(line)
    now = job["now"]
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.datetime.fromtimestamp(now, datetime.timezone.utc).strftime(fmt)
    try:
        text = env.from_string(job["template"]).render(
            messages=job["messages"], add_generation_prompt=job["add_generation_prompt"],
            bos_token=job["bos"], eos_token=job["eos"])
        print(json.dumps({"ok": text}))
    except Exception as e:
        print(json.dumps({"err": f"{type(e).__name__}: {e}"}))
"#;

fn python_with_jinja2() -> Option<&'static str> {
    let ok = Command::new("python3")
        .args(["-c", "import jinja2"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Some("python3")
    } else {
        tokenizer_support::asset("TPSMETER_PYTHON_JINJA2_MISSING", "python3 with jinja2")?;
        None
    }
}

fn conversations() -> Vec<Vec<ChatMessage>> {
    vec![
        vec![ChatMessage::new("user", "Hello!")],
        vec![
            ChatMessage::new("system", "You are terse."),
            ChatMessage::new("user", "Bonjour 😀 <b>&</b> \"quoted\"\nsecond line"),
            ChatMessage::new("assistant", "  Hi, how can I help?  "),
            ChatMessage::new("user", "Count to 3."),
        ],
    ]
}

#[test]
fn llama_cpp_template_collection_renders_like_jinja2() {
    let Some(root) = llama_cpp_root() else { return };
    let Some(python) = python_with_jinja2() else {
        return;
    };
    let mut templates: Vec<_> = std::fs::read_dir(root.join("models/templates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jinja"))
        .collect();
    templates.sort();
    assert!(
        templates.len() > 20,
        "expected llama.cpp's template collection"
    );
    let now = 1_721_747_045_i64;

    let mut jobs = String::new();
    let mut cases = Vec::new();
    for path in &templates {
        let source = std::fs::read_to_string(path).unwrap();
        for messages in conversations() {
            for add_generation_prompt in [true, false] {
                let job = serde_json::json!({
                    "template": source, "messages": messages, "now": now,
                    "add_generation_prompt": add_generation_prompt, "bos": "<BOS>", "eos": "<EOS>",
                });
                jobs.push_str(&job.to_string());
                jobs.push('\n');
                cases.push((
                    path.clone(),
                    source.clone(),
                    messages.clone(),
                    add_generation_prompt,
                ));
            }
        }
    }
    let mut child = Command::new(python)
        .args(["-c", REFERENCE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Written from another thread: the reference answers while it reads, and a full stdout
    // pipe would otherwise stop both processes.
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(jobs.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success());
    let results: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(results.len(), cases.len());

    let (mut same, mut both_refuse, mut differ) = (0, 0, Vec::new());
    for ((path, source, messages, add_generation_prompt), reference) in cases.iter().zip(&results) {
        let name = path.file_name().unwrap().to_string_lossy();
        let options = RenderOptions {
            add_generation_prompt: *add_generation_prompt,
            now_unix_seconds: Some(now),
            ..RenderOptions::default()
        };
        let ours =
            ChatTemplate::new(source, "<BOS>", "<EOS>").and_then(|t| t.render(messages, &options));
        match (ours, reference.get("ok").and_then(|v| v.as_str())) {
            (Ok(a), Some(b)) if a == b => same += 1,
            (Err(_), None) => both_refuse += 1,
            (Ok(a), Some(b)) => differ.push(format!(
                "{name} (gen={add_generation_prompt}): text differs\n  ours  {a:?}\n  jinja {b:?}"
            )),
            (Ok(_), None) => differ.push(format!(
                "{name}: jinja2 refused ({}), we rendered",
                reference["err"]
            )),
            (Err(e), Some(_)) => differ.push(format!("{name}: we refused: {e}")),
        }
    }
    eprintln!(
        "{} templates: {same} cases identical, {both_refuse} refused by both, {} differ",
        templates.len(),
        differ.len()
    );
    assert!(
        differ.is_empty(),
        "{} cases differ:\n{}",
        differ.len(),
        differ.join("\n")
    );
    // Refusals (templates that need tools or other variables) must stay the exception, or
    // this test would compare nothing.
    assert!(
        same > 4 * both_refuse,
        "only {same} cases rendered, {both_refuse} refused"
    );
}
