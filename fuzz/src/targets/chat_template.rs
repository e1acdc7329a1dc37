//! The chat template renderer with a hostile template and hostile messages: compiling and
//! rendering may fail, never panic, hang past the fuel or write past `MAX_RENDER_BYTES`.
//!
//! Input: byte 0 holds flags (add_generation_prompt, a clock for `strftime_now`, a `tools`
//! variable); the rest, read as UTF-8 (lossily), is split at NUL: the template, then
//! alternating roles and contents of the messages.

use tpsmeter_model::chat::{ChatMessage, ChatTemplate, MAX_RENDER_BYTES, RenderOptions};

/// Most messages per input: enough for a system, user, assistant, tool round trip and more.
const MAX_MESSAGES: usize = 16;

/// Instructions per render: real templates take a few thousand per message, so every path
/// of a 16-message render is reached; the product's 50 M made a few looping inputs take
/// seconds each (one 5.2 s unit in 800) and held the target at ~460 executions/s.
const FUZZ_FUEL: u64 = 1_000_000;

/// One input: see the module's docs.
pub fn run(data: &[u8]) {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let mut parts = text.split('\0');
    let source = parts.next().unwrap_or_default();
    let Ok(mut template) = ChatTemplate::new(source, "<s>", "</s>") else {
        return;
    };
    template.set_fuel(FUZZ_FUEL);
    let fields: Vec<&str> = parts.collect();
    let messages: Vec<ChatMessage> = fields
        .chunks(2)
        .take(MAX_MESSAGES)
        .map(|p| ChatMessage::new(p[0], p.get(1).copied().unwrap_or_default()))
        .collect();
    let mut options = RenderOptions {
        add_generation_prompt: flags & 1 != 0,
        now_unix_seconds: (flags & 2 != 0).then_some(i64::from(flags) * 86_400 * 365),
        ..RenderOptions::default()
    };
    if flags & 4 != 0 {
        let tools = r#"[{"type":"function","function":{"name":"f","parameters":{"b":1,"a":[2]}}}]"#;
        options.set_json("tools", tools).expect("valid JSON");
    }
    if let Ok(prompt) = template.render(&messages, &options) {
        assert!(prompt.len() <= MAX_RENDER_BYTES);
    }
}
