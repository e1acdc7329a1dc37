//! Chat prompts: renders a model's `tokenizer.chat_template` (Jinja) with minijinja.
//!
//! What it does: compiles the template once with the settings Hugging Face's `transformers`
//! uses (`trim_blocks`, `lstrip_blocks`, loop controls), provides what real templates call
//! (`raise_exception`, `strftime_now`, a Python-faithful `tojson`, Python string and dict
//! methods through minijinja-contrib's `pycompat`), and renders messages into the prompt text.
//!
//! What it does not do: tokenize the prompt (the rendered text goes to
//! [`crate::tokenizer::Tokenizer::encode`], control tokens written in it included), or read
//! the clock: `strftime_now` formats the time the caller passes.

mod namespace_guard;
mod pad_guard;
mod pyjson;
mod strftime;

pub use namespace_guard::{
    MAX_FROZEN_ELEMENTS, MAX_STORED_BYTES, MAX_STORED_DEPTH, MAX_STORED_STRING_BYTES,
};
pub use pad_guard::MAX_PAD;

use std::collections::BTreeMap;

use minijinja::value::Serde;
use minijinja::{Environment, Error, ErrorKind, State, Value};
use serde::Serialize;

use crate::tokenizer::Tokenizer;
use crate::{ModelError, Result};

/// Longest template accepted: real ones are a few KiB (Gemma's tool-calling one ~10 KiB,
/// the largest known ~20 KiB). The cap also bounds how deep a value the template's own text
/// can nest (about one level per two bytes), which the render's stack must hold.
pub const MAX_TEMPLATE_BYTES: usize = 256 << 10;

/// Deepest macro call or recursive loop: real templates recurse to print a tool's JSON
/// schema, a few levels; minijinja's default is 500.
const RECURSION_LIMIT: usize = 100;

/// Stack of the thread a native render runs on. minijinja prints, compares and drops values
/// by recursion without a depth guard; namespaces cannot grow values (see
/// `namespace_guard`), so the deepest value is what the template's text can nest within
/// [`MAX_TEMPLATE_BYTES`] and [`RECURSION_LIMIT`], which measured well inside this size in a
/// debug build (tests/chat_template.rs). Pages are committed only as touched.
#[cfg(not(target_arch = "wasm32"))]
const RENDER_STACK_BYTES: usize = 256 << 20;

/// Instructions a render may execute before it is stopped: a hostile template with an endless
/// loop must not hang the engine. Real templates use a few thousand per message.
const RENDER_FUEL: u64 = 50_000_000;

/// Longest rendered prompt: it is tokenized next and must fit a context window (128k tokens
/// is about 512 KiB of text), so 16 MiB holds any conversation the engine could run, and a
/// template that writes in an endless loop is stopped at this size instead of at the end of
/// its fuel, which a few huge writes per instruction would reach only after gigabytes.
pub const MAX_RENDER_BYTES: usize = 16 << 20;

const TEMPLATE_NAME: &str = "chat_template";
/// Context key under which the caller's time reaches `strftime_now`.
const NOW_KEY: &str = "__tpsmeter_now_unix_seconds";

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

impl ChatMessage {
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: content.into(),
        }
    }
}

/// How to render.
#[derive(Debug, Clone, Default)]
pub struct RenderOptions {
    /// End with the header of an assistant turn, so the model writes the reply.
    pub add_generation_prompt: bool,
    /// Seconds since the Unix epoch (UTC) for `strftime_now`; templates that call it fail
    /// with an error naming this field when it is absent.
    pub now_unix_seconds: Option<i64>,
    /// More template variables (`tools`, `enable_thinking`, ...). Set them from JSON text
    /// with [`RenderOptions::set_json`], which keeps object keys in document order as
    /// Python's `json.loads` does (a `serde_json::Value` would sort them).
    pub extra: BTreeMap<String, TemplateValue>,
}

/// A value handed to a template.
pub use minijinja::Value as TemplateValue;

impl RenderOptions {
    /// Sets template variable `key` to the JSON value in `json`.
    pub fn set_json(&mut self, key: &str, json: &str) -> Result<()> {
        let value: Value = serde_json::from_str(json).map_err(|e| ModelError::ChatTemplate {
            reason: format!("variable {key:?}: invalid JSON: {e}"),
        })?;
        self.extra.insert(key.to_owned(), value);
        Ok(())
    }
}

/// A compiled chat template.
#[derive(Debug)]
pub struct ChatTemplate {
    env: Environment<'static>,
    bos_token: String,
    eos_token: String,
}

fn template_error(e: &Error) -> ModelError {
    // minijinja's alternate Display includes the template line that failed.
    ModelError::ChatTemplate {
        reason: format!("{e:#}"),
    }
}

fn raise_exception(message: String) -> std::result::Result<Value, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, message))
}

/// Jinja2's `length`: an undefined variable has length 0 there (templates write
/// `tools | length` without checking that `tools` was passed); minijinja's refuses.
fn length(value: &Value) -> std::result::Result<usize, Error> {
    if value.is_undefined() {
        return Ok(0);
    }
    minijinja::filters::length(value)
}

fn strftime_now(state: &State, format: String) -> std::result::Result<Value, Error> {
    let now = state
        .lookup(NOW_KEY)
        .and_then(|v| i64::try_from(v).ok())
        .ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidOperation,
                "the template calls strftime_now: pass RenderOptions::now_unix_seconds",
            )
        })?;
    Ok(Value::from(strftime::strftime(&format, now)))
}

impl ChatTemplate {
    /// Compiles `source`; `bos_token`/`eos_token` are the texts templates may insert.
    pub fn new(source: &str, bos_token: &str, eos_token: &str) -> Result<Self> {
        on_template_stack(|| Self::compile(source, bos_token, eos_token))
    }

    fn compile(source: &str, bos_token: &str, eos_token: &str) -> Result<Self> {
        if source.len() > MAX_TEMPLATE_BYTES {
            return Err(ModelError::LimitExceeded {
                what: "chat template length in bytes".to_owned(),
                value: source.len() as u64,
                limit: MAX_TEMPLATE_BYTES as u64,
            });
        }
        let mut env = Environment::new();
        let syntax = minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()
            .map_err(|e| template_error(&e))?;
        env.set_syntax(syntax.clone());
        env.set_fuel(Some(RENDER_FUEL));
        env.set_recursion_limit(RECURSION_LIMIT);
        // Widths, precisions and counts capped (`pad_guard`): `str.format()`, `format`,
        // `indent`, `slice`, `batch`.
        env.set_unknown_method_callback(pad_guard::unknown_method);
        env.add_filter("format", pad_guard::format);
        env.add_filter("indent", pad_guard::indent);
        env.add_filter("slice", pad_guard::slice);
        env.add_filter("batch", pad_guard::batch);
        env.add_function("raise_exception", raise_exception);
        env.add_function("strftime_now", strftime_now);
        env.add_filter("tojson", pyjson::tojson);
        env.add_filter("length", length);
        env.add_filter("count", length);
        env.add_filter(namespace_guard::FREEZE_FILTER, namespace_guard::freeze);
        env.add_filter(namespace_guard::CAP_FILTER, namespace_guard::cap);
        let guarded = namespace_guard::guard_assignments(source, syntax);
        env.add_template_owned(TEMPLATE_NAME, guarded.into_owned())
            .map_err(|e| template_error(&e))?;
        Ok(Self {
            env,
            bos_token: bos_token.to_owned(),
            eos_token: eos_token.to_owned(),
        })
    }

    /// The template a tokenizer's model ships, with its BOS/EOS texts.
    pub fn from_tokenizer(tokenizer: &Tokenizer) -> Result<Self> {
        let source = tokenizer
            .chat_template()
            .ok_or_else(|| ModelError::MissingMetadata {
                key: "tokenizer.chat_template".to_owned(),
            })?;
        let text_of = |id: Option<u32>| {
            id.and_then(|id| tokenizer.token_text(id))
                .unwrap_or_default()
        };
        let specials = tokenizer.specials();
        Self::new(source, &text_of(specials.bos), &text_of(specials.eos))
    }

    /// Sets the instructions each render may execute (default 50 M; see `RENDER_FUEL`). The
    /// fuzzer lowers it to spend its time on many inputs instead of a few endless loops.
    pub fn set_fuel(&mut self, instructions: u64) {
        self.env.set_fuel(Some(instructions));
    }

    /// Renders `messages` into the prompt text.
    pub fn render(&self, messages: &[ChatMessage], options: &RenderOptions) -> Result<String> {
        on_template_stack(|| self.render_here(messages, options))
    }

    fn render_here(&self, messages: &[ChatMessage], options: &RenderOptions) -> Result<String> {
        let template = self
            .env
            .get_template(TEMPLATE_NAME)
            .map_err(|e| template_error(&e))?;
        let mut ctx: BTreeMap<String, Value> = options
            .extra
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        ctx.insert("messages".to_owned(), Value::from(Serde(messages)));
        ctx.insert(
            "add_generation_prompt".to_owned(),
            Value::from(options.add_generation_prompt),
        );
        ctx.insert("bos_token".to_owned(), Value::from(self.bos_token.clone()));
        ctx.insert("eos_token".to_owned(), Value::from(self.eos_token.clone()));
        if let Some(now) = options.now_unix_seconds {
            ctx.insert(NOW_KEY.to_owned(), Value::from(now));
        }
        let mut out = CappedOutput::default();
        let rendered = template.render_captured_to(ctx, &mut out);
        if out.over {
            return Err(ModelError::LimitExceeded {
                what: "rendered chat prompt in bytes".to_owned(),
                value: out.bytes.len() as u64 + 1,
                limit: MAX_RENDER_BYTES as u64,
            });
        }
        rendered.map_err(|e| template_error(&e))?;
        String::from_utf8(out.bytes).map_err(|e| ModelError::ChatTemplate {
            reason: format!("rendered text is not UTF-8: {e}"),
        })
    }
}

/// Runs `work` (a compile or a render) where minijinja's unguarded recursion has room: on
/// a thread with [`RENDER_STACK_BYTES`] of stack natively. Both need it: a long operator or
/// filter chain is parsed into a deep tree that code generation walks by recursion.
#[cfg(not(target_arch = "wasm32"))]
fn on_template_stack<T: Send>(work: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("chat-template".to_owned())
            .stack_size(RENDER_STACK_BYTES)
            .spawn_scoped(scope, work)
            .map_err(|e| ModelError::ChatTemplate {
                reason: format!("cannot start the template thread: {e}"),
            })?
            .join()
            .map_err(|_| ModelError::ChatTemplate {
                reason: "the template thread panicked".to_owned(),
            })?
    })
}

/// The browser has no threads to spare: work runs on the caller's stack, where a template
/// text built to nest thousands of levels traps instead of returning an error (namespace
/// cycles and growth are still stopped by `namespace_guard`).
#[cfg(target_arch = "wasm32")]
fn on_template_stack<T>(work: impl FnOnce() -> Result<T>) -> Result<T> {
    work()
}

/// The render's sink: fails the render's next write once [`MAX_RENDER_BYTES`] would be
/// passed (minijinja stops at the first failed write).
#[derive(Debug, Default)]
struct CappedOutput {
    bytes: Vec<u8>,
    over: bool,
}

impl std::io::Write for CappedOutput {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len().saturating_add(buf.len()) > MAX_RENDER_BYTES {
            self.over = true;
            return Err(std::io::Error::other("rendered prompt too long"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
