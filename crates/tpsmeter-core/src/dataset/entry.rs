//! One dataset entry, from its JSON value to an [`Entry`]: the three shapes of the module
//! docs, each fault named by its field.

use serde_json::{Map, Value};

use super::{
    At, Entry, MAX_COUNTED_ANSWER_BYTES, MAX_MESSAGES, MAX_OUTPUT_TOKENS, estimate_tokens,
};
use crate::error::Result;
use crate::message::Message;

/// The keys that say an entry's shape.
const SHAPES: [&str; 3] = ["prompt", "messages", "conversations"];

/// Parses one entry's JSON text. `Ok(None)`: a well-formed ShareGPT entry without a prompt.
pub(super) fn parse(text: &[u8], at: At) -> Result<Option<Entry>> {
    let value: Value = serde_json::from_slice(text).map_err(|e| {
        // serde_json counts lines from the entry's start; the file's line is what helps.
        let at = At {
            line: at.line + e.line().saturating_sub(1) as u64,
            ..at
        };
        let message = e.to_string();
        let message = message
            .rfind(" at line ")
            .map_or(message.as_str(), |i| &message[..i]);
        at.err(None, format!("not valid JSON: {message}"))
    })?;
    let Value::Object(map) = value else {
        return Err(at.err(
            None,
            format!(
                "must be a JSON object with one of {}, not {}",
                shape_list(),
                kind(&value)
            ),
        ));
    };
    entry(&map, at)
}

fn entry(map: &Map<String, Value>, at: At) -> Result<Option<Entry>> {
    let given: Vec<&str> = SHAPES
        .into_iter()
        .filter(|k| map.contains_key(*k))
        .collect();
    let shape = match given.as_slice() {
        [one] => *one,
        [] => {
            return Err(at.err(None, format!("needs one of {}", shape_list())));
        }
        [a, b, ..] => {
            return Err(at.err(None, format!("has both `{a}` and `{b}`: give one")));
        }
    };
    let system = match map.get("system") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(v) => return Err(at.err(Some("system".into()), expected("a string", v))),
    };
    let output_tokens = output_tokens(map, at)?;
    let parsed = match shape {
        "prompt" => {
            let prompt = string(map, "prompt", at)?;
            if prompt.trim().is_empty() {
                return Err(at.err(Some("prompt".into()), "is empty"));
            }
            Parsed {
                system: None,
                messages: vec![Message::user(prompt)],
                reference: None,
            }
        }
        "messages" => messages(&map["messages"], at)?,
        _ => match conversations(&map["conversations"], at)? {
            Some(p) => p,
            None => return Ok(None),
        },
    };
    let system = match (system, parsed.system) {
        (Some(_), Some(_)) => {
            return Err(at.err(
                Some("system".into()),
                "the entry has system messages too: give the system text once",
            ));
        }
        (a, b) => a.or(b),
    };
    // The entry's own cap wins; otherwise the reference answer sets it, estimated here and
    // kept (moved, not copied) for a tokenizer to count.
    let (output_tokens, answer) = match output_tokens {
        Some(cap) => (Some(cap), None),
        None => (
            parsed.reference.as_deref().and_then(estimate_tokens),
            parsed
                .reference
                .filter(|r| !r.is_empty() && r.len() <= MAX_COUNTED_ANSWER_BYTES),
        ),
    };
    Ok(Some(Entry {
        system,
        messages: parsed.messages,
        answer,
        output_tokens,
    }))
}

/// An entry's messages before its own fields are applied.
struct Parsed {
    system: Option<String>,
    messages: Vec<Message>,
    /// The reference answer, whose length is the output length.
    reference: Option<String>,
}

/// Who a message is from, in either spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    System,
    User,
    Assistant,
}

impl Who {
    /// OpenAI's roles and ShareGPT's `from` values (`human`, `gpt`; `chatgpt`, `bing` and
    /// `bard` are in ShareGPT's scraped logs too).
    fn parse(s: &str) -> Option<Who> {
        match s {
            "system" | "developer" => Some(Who::System),
            "user" | "human" => Some(Who::User),
            "assistant" | "gpt" | "chatgpt" | "bing" | "bard" | "model" => Some(Who::Assistant),
            _ => None,
        }
    }
}

/// OpenAI's `messages`.
fn messages(value: &Value, at: At) -> Result<Parsed> {
    let turns = turns(value, "messages", ["role", "content"], at)?;
    let first = turns.iter().position(|(w, _)| *w != Who::System);
    let Some(first) = first else {
        return Err(at.err(Some("messages".into()), "has no user message"));
    };
    if turns[first].0 != Who::User {
        return Err(at.err(
            Some(format!("messages[{first}].role")),
            "the conversation must start with a user message (after any system messages)",
        ));
    }
    if let Some(i) = turns[first..].iter().position(|(w, _)| *w == Who::System) {
        return Err(at.err(
            Some(format!("messages[{}].role", first + i)),
            "a system message after the conversation started cannot be sent: every API \
             here takes the system text apart from the turns",
        ));
    }
    // `first` is a user message, so there is a last one.
    let last = turns
        .iter()
        .rposition(|(w, _)| *w == Who::User)
        .unwrap_or(first);
    let reference = turns.get(last + 1).map(|(_, text)| text.clone());
    let system = join_system(&turns[..first]);
    let messages = turns[first..=last]
        .iter()
        .map(|(w, text)| Message {
            role: if *w == Who::User {
                crate::message::Role::User
            } else {
                crate::message::Role::Assistant
            },
            content: text.clone(),
        })
        .collect();
    Ok(Parsed {
        system,
        messages,
        reference,
    })
}

/// ShareGPT's `conversations`: the first human turn, the first gpt turn after it as the
/// reference. `None` when there is no non-empty human turn.
fn conversations(value: &Value, at: At) -> Result<Option<Parsed>> {
    let turns = turns(value, "conversations", ["from", "value"], at)?;
    let lead = turns
        .iter()
        .position(|(w, _)| *w != Who::System)
        .unwrap_or(turns.len());
    let Some(human) = turns.iter().position(|(w, _)| *w == Who::User) else {
        return Ok(None);
    };
    if turns[human].1.trim().is_empty() {
        return Ok(None);
    }
    let reference = turns[human + 1..]
        .iter()
        .find(|(w, _)| *w == Who::Assistant)
        .map(|(_, text)| text.clone());
    Ok(Some(Parsed {
        system: join_system(&turns[..lead]),
        messages: vec![Message::user(turns[human].1.clone())],
        reference,
    }))
}

/// The turns of an array of `{who, text}` objects named `field`, keys `[who, text]` (either
/// spelling is read: `role`/`content` or `from`/`value`).
fn turns(value: &Value, field: &str, keys: [&str; 2], at: At) -> Result<Vec<(Who, String)>> {
    let Value::Array(items) = value else {
        return Err(at.err(Some(field.into()), expected("an array", value)));
    };
    if items.len() > MAX_MESSAGES {
        return Err(at.err(
            Some(field.into()),
            format!("has {} items, over the cap of {MAX_MESSAGES}", items.len()),
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let name = |key: &str| format!("{field}[{i}].{key}");
        let Value::Object(turn) = item else {
            return Err(at.err(Some(format!("{field}[{i}]")), expected("an object", item)));
        };
        // Either spelling, whichever this item uses; the field's own when it uses neither.
        let [who_key, text_key] = if turn.contains_key("role") || turn.contains_key("content") {
            ["role", "content"]
        } else if turn.contains_key("from") || turn.contains_key("value") {
            ["from", "value"]
        } else {
            keys
        };
        let who = match turn.get(who_key) {
            Some(Value::String(s)) => Who::parse(s).ok_or_else(|| {
                at.err(
                    Some(name(who_key)),
                    format!(
                        "{} is not a role this reads: system, user, assistant (or ShareGPT's \
                         human, gpt)",
                        crate::quoted::Quoted(&s.chars().take(40).collect::<String>())
                    ),
                )
            })?,
            Some(v) => return Err(at.err(Some(name(who_key)), expected("a string", v))),
            None => return Err(at.err(Some(name(who_key)), "is missing")),
        };
        let text = match turn.get(text_key) {
            Some(Value::String(s)) => s.clone(),
            Some(v) => {
                return Err(at.err(
                    Some(name(text_key)),
                    expected("a string (content parts are not read)", v),
                ));
            }
            None => return Err(at.err(Some(name(text_key)), "is missing")),
        };
        out.push((who, text));
    }
    Ok(out)
}

/// The system texts of leading system turns, joined by a blank line.
fn join_system(turns: &[(Who, String)]) -> Option<String> {
    let texts: Vec<&str> = turns.iter().map(|(_, t)| t.as_str()).collect();
    (!texts.is_empty()).then(|| texts.join("\n\n"))
}

/// `max_tokens` or `output_tokens`, a whole number from 1.
fn output_tokens(map: &Map<String, Value>, at: At) -> Result<Option<u32>> {
    let mut found = None;
    for key in ["max_tokens", "output_tokens"] {
        let Some(v) = map.get(key) else { continue };
        if v.is_null() {
            continue;
        }
        if let Some(other) = found.map(|(k, _)| k) {
            return Err(at.err(
                Some(key.into()),
                format!("the entry gives `{other}` too: give one output length"),
            ));
        }
        let n = v
            .as_u64()
            .filter(|n| (1..=u64::from(MAX_OUTPUT_TOKENS)).contains(n))
            .ok_or_else(|| {
                at.err(
                    Some(key.into()),
                    expected(&format!("a whole number from 1 to {MAX_OUTPUT_TOKENS}"), v),
                )
            })?;
        found = Some((key, n as u32));
    }
    Ok(found.map(|(_, n)| n))
}

fn string(map: &Map<String, Value>, key: &str, at: At) -> Result<String> {
    match &map[key] {
        Value::String(s) => Ok(s.clone()),
        v => Err(at.err(Some(key.into()), expected("a string", v))),
    }
}

/// "must be {what}, not a number" and the like.
fn expected(what: &str, got: &Value) -> String {
    format!("must be {what}, not {}", kind(got))
}

fn kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Number(n) => format!(
            "the number {}",
            n.to_string().chars().take(24).collect::<String>()
        ),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

fn shape_list() -> String {
    SHAPES.map(|s| format!("`{s}`")).join(", ")
}
