//! Keeps what a template stores in a `namespace` finite.
//!
//! Why: a namespace is the only mutable value in Jinja, so it is the only way a template can
//! build a cycle (`{% set ns.n = ns %}`, or a lazy view such as `ns|items` stored back in
//! `ns`) or grow a value one level per loop turn (`{% set ns.x = [ns.x] %}` in a loop).
//! minijinja prints, compares and drops values by native recursion with no depth guard, so
//! either shape, written into a model file's chat template, overflows the stack and aborts
//! the process (the fuzzer found the first one). Nothing else in a template can grow a value
//! past what its own text spells out.
//!
//! How: before compiling, every assignment to a namespace attribute, `{% set a.b = expr %}`
//! or `{% set a.b %}...{% endset %}`, gets a filter appended to its value
//! ([`FREEZE_FILTER`]). The filter stores a materialized copy: lists and lazy sequences
//! become lists, maps (a namespace included) become maps, all of at most
//! [`MAX_STORED_DEPTH`] levels, with a per-render budget of [`MAX_FROZEN_ELEMENTS`]
//! elements copied so repeated copies cannot run forever. A namespace therefore never holds
//! a live reference to another namespace or to anything that reads one: no cycle can form.
//!
//! What changes for a template: a namespace stored inside a namespace is a snapshot taken at
//! assignment, not an alias (real chat templates store flags, counters, strings and message
//! lists, which behave the same).
//!
//! Strings are the other thing a template can grow step by step: `{% set ns.s = ns.s ~ ns %}`
//! in a loop more than doubles `ns.s` per turn (the namespace prints as a Python repr that
//! escapes the string again), and `{% set a = a ~ a %}` written 30 times reaches a gigabyte
//! without a loop (the fuzzer found the first: one 512 MiB allocation from 16 turns). So
//! every `set`, not only namespace ones, passes its value through a check: no stored string
//! longer than [`MAX_STORED_STRING_BYTES`], and at most [`MAX_STORED_BYTES`] of strings
//! stored per render. A plain `set` gets [`CAP_FILTER`], which checks without copying (a
//! namespace stored there must stay a namespace); a macro's parameters get the same check
//! as its body starts, since recursion can grow them a level at a time. What one expression builds from stored
//! values before it is stored is bounded by the template's text: minijinja offers no hook
//! on `~` itself (docs/engine.md says what this leaves open).

use std::borrow::Cow;

use minijinja::machinery::{Span, Token, tokenize};
use minijinja::syntax::SyntaxConfig;
use minijinja::value::ValueKind;
use minijinja::{Error, ErrorKind, State, Value};

use super::MAX_RENDER_BYTES;

/// The filter appended to every namespace attribute assignment.
pub(super) const FREEZE_FILTER: &str = "__tpsmeter_freeze";

/// The filter appended to every other `set`.
pub(super) const CAP_FILTER: &str = "__tpsmeter_cap";

/// Deepest value a namespace may hold: a message's content parts or a tool's JSON schema is
/// well under ten levels; printing or dropping 64 levels is a few kilobytes of stack.
pub const MAX_STORED_DEPTH: usize = 64;

/// Elements one render may copy into namespaces: a template that appends one message per
/// turn to a list it keeps in a namespace copies n²/2 elements over n turns, so this allows
/// about 2,800 turns while stopping a loop that copies a huge list over and over.
pub const MAX_FROZEN_ELEMENTS: u64 = 4_000_000;

/// Longest string a `set` may store: the whole rendered prompt is capped at
/// [`MAX_RENDER_BYTES`], so no longer piece of it can be printed; one such string repeated
/// or escaped a few times stays far below what a 32-bit browser heap can allocate.
pub const MAX_STORED_STRING_BYTES: usize = MAX_RENDER_BYTES;

/// Bytes of strings one render may store with `set`: a template that appends each message to
/// a string it keeps stores n²/2 message lengths over n turns, so a conversation filling a
/// 128k-token context (about 512 KiB) in 4,000 turns still fits, while a loop that copies a
/// long string over and over is stopped within a few hundred turns.
pub const MAX_STORED_BYTES: u64 = 1 << 30;

/// Returns `source` with [`FREEZE_FILTER`] applied to the value of every namespace
/// attribute assignment and [`CAP_FILTER`] to every other `set`; unchanged (borrowed) when
/// it has none or does not tokenize (its compilation then reports the error at the original
/// position).
pub(super) fn guard_assignments(source: &str, syntax: SyntaxConfig) -> Cow<'_, str> {
    let Ok(tokens) = tokenize(source, false, syntax).collect::<Result<Vec<_>, _>>() else {
        return Cow::Borrowed(source);
    };
    let close_and_freeze = format!(")|{FREEZE_FILTER}");
    let freeze = format!("|{FREEZE_FILTER}");
    let close_and_cap = format!(")|{CAP_FILTER}");
    let cap = format!("|{CAP_FILTER}");
    // (byte offset, text to insert there), in source order.
    let mut inserts: Vec<(usize, Cow<'_, str>)> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if matches!(tokens[i].0, Token::BlockStart)
            && matches!(tokens.get(i + 1), Some((Token::Ident("macro"), _)))
        {
            i = guard_macro_parameters(source, &tokens, i, &mut inserts);
            continue;
        }
        let is_set = matches!(tokens[i].0, Token::BlockStart)
            && matches!(tokens.get(i + 1), Some((Token::Ident("set"), _)));
        if !is_set {
            i += 1;
            continue;
        }
        let Some(end) = (i + 2..tokens.len()).find(|&k| matches!(tokens[k].0, Token::BlockEnd))
        else {
            break;
        };
        // The target runs up to `=` (an expression follows) or to `|`/`%}` (a block set).
        let mut depth = 0usize;
        let mut dotted = false;
        let mut assign = None;
        for (k, (token, _)) in tokens.iter().enumerate().take(end).skip(i + 2) {
            match token {
                Token::ParenOpen | Token::BracketOpen | Token::BraceOpen => depth += 1,
                Token::ParenClose | Token::BracketClose | Token::BraceClose => {
                    depth = depth.saturating_sub(1);
                }
                Token::Dot => dotted = true,
                Token::Assign if depth == 0 => {
                    assign = Some(k);
                    break;
                }
                Token::Pipe if depth == 0 => break,
                _ => {}
            }
        }
        if end > i + 2 {
            let (close_and_filter, filter) = if dotted {
                (&close_and_freeze, &freeze)
            } else {
                (&close_and_cap, &cap)
            };
            // After the last token of the tag, so `-%}` whitespace control stays intact.
            let tail = tokens[end - 1].1.end_offset as usize;
            if let Some(assign) = assign.filter(|&a| a + 1 < end) {
                inserts.push((tokens[assign].1.end_offset as usize, Cow::Borrowed(" (")));
                inserts.push((tail, Cow::Borrowed(close_and_filter)));
            } else if assign.is_none() {
                inserts.push((tail, Cow::Borrowed(filter)));
            }
        }
        i = end + 1;
    }
    if inserts.is_empty() {
        return Cow::Borrowed(source);
    }
    let mut out = String::with_capacity(source.len() + inserts.len() * 20);
    let mut at = 0;
    for (offset, text) in inserts {
        if offset < at || offset > source.len() || !source.is_char_boundary(offset) {
            // Spans always fall on token boundaries; if that ever changed, leave the
            // template alone rather than corrupt it.
            return Cow::Borrowed(source);
        }
        out.push_str(&source[at..offset]);
        out.push_str(&text);
        at = offset;
    }
    out.push_str(&source[at..]);
    Cow::Owned(out)
}

/// A macro's parameters are values that outlive a step too: a macro that calls itself with
/// `s ~ s` doubles `s` per level, 100 levels deep. For `{% macro name(a, b=x) %}` at
/// `tokens[start]`, queues `{% set a = a|__tpsmeter_cap %}` for each parameter right after
/// the tag, ending as the tag ends (`-%}` strips what follows it either way). Returns the
/// index of the token after the tag.
fn guard_macro_parameters<'s>(
    source: &'s str,
    tokens: &[(Token<'s>, Span)],
    start: usize,
    inserts: &mut Vec<(usize, Cow<'s, str>)>,
) -> usize {
    let Some(end) = (start + 2..tokens.len()).find(|&k| matches!(tokens[k].0, Token::BlockEnd))
    else {
        return tokens.len();
    };
    let mut params = Vec::new();
    let mut depth = 0usize;
    let mut expect_name = false;
    for (token, _) in &tokens[start + 2..end] {
        match token {
            Token::ParenOpen | Token::BracketOpen | Token::BraceOpen => {
                depth += 1;
                expect_name = depth == 1;
            }
            Token::ParenClose | Token::BracketClose | Token::BraceClose => {
                depth = depth.saturating_sub(1);
            }
            Token::Comma if depth == 1 => expect_name = true,
            Token::Ident(name) if depth == 1 && expect_name => {
                params.push(*name);
                expect_name = false;
            }
            _ => expect_name = false,
        }
    }
    let text = |k: usize| {
        let span = tokens[k].1;
        source
            .get(span.start_offset as usize..span.end_offset as usize)
            .unwrap_or_default()
    };
    let open = text(start).trim_end_matches(['-', '+']);
    let close = text(end);
    if !params.is_empty() && !open.is_empty() && !close.is_empty() {
        let sets: String = params
            .iter()
            .map(|p| format!("{open} set {p} = {p}|{CAP_FILTER} {close}"))
            .collect();
        inserts.push((tokens[end].1.end_offset as usize, Cow::Owned(sets)));
    }
    end + 1
}

/// What one render has left to copy: elements into namespaces, bytes of stored strings.
struct FreezeBudget {
    elements: u64,
    bytes: u64,
}

impl Default for FreezeBudget {
    fn default() -> Self {
        Self {
            elements: MAX_FROZEN_ELEMENTS,
            bytes: MAX_STORED_BYTES,
        }
    }
}

/// [`FREEZE_FILTER`]: a materialized copy of `value`, or an error past the caps.
pub(super) fn freeze(state: &mut State, value: &Value) -> Result<Value, Error> {
    let budget = state.get_or_insert_extension_with(FreezeBudget::default);
    copy(value, 0, budget)
}

/// [`CAP_FILTER`]: `value` itself, or an error if it is a string past the caps.
pub(super) fn cap(state: &mut State, value: &Value) -> Result<Value, Error> {
    let budget = state.get_or_insert_extension_with(FreezeBudget::default);
    charge_string(value, budget)?;
    Ok(value.clone())
}

fn copy(value: &Value, depth: usize, budget: &mut FreezeBudget) -> Result<Value, Error> {
    if depth > MAX_STORED_DEPTH {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("a value stored in a namespace may nest at most {MAX_STORED_DEPTH} levels"),
        ));
    }
    spend(budget)?;
    match value.kind() {
        ValueKind::Seq | ValueKind::Iterable => {
            let mut items = Vec::new();
            for item in value.try_iter()? {
                spend(budget)?;
                items.push(copy(&item, depth + 1, budget)?);
            }
            Ok(Value::from(items))
        }
        ValueKind::Map => {
            let mut pairs = Vec::new();
            for key in value.try_iter()? {
                spend(budget)?;
                let item = value.get_item(&key)?;
                pairs.push((
                    copy(&key, depth + 1, budget)?,
                    copy(&item, depth + 1, budget)?,
                ));
            }
            Ok(Value::from_pairs(pairs))
        }
        // Strings are immutable: shared, not copied, but their size is what can grow.
        ValueKind::String | ValueKind::Bytes => {
            charge_string(value, budget)?;
            Ok(value.clone())
        }
        // Scalars are immutable; plain objects (macros, functions, `loop`) print as their
        // name and are not walked by comparisons, so they cannot close a cycle.
        _ => Ok(value.clone()),
    }
}

fn spend(budget: &mut FreezeBudget) -> Result<(), Error> {
    budget.elements = budget.elements.checked_sub(1).ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("the template copied more than {MAX_FROZEN_ELEMENTS} elements into namespaces"),
        )
    })?;
    Ok(())
}

/// Checks a string (or bytes) against [`MAX_STORED_STRING_BYTES`] and takes its length from
/// the render's [`MAX_STORED_BYTES`]; other values pass free.
fn charge_string(value: &Value, budget: &mut FreezeBudget) -> Result<(), Error> {
    let len = match value.kind() {
        ValueKind::String => value.as_str().map_or(0, str::len),
        ValueKind::Bytes => value.as_bytes().map_or(0, <[u8]>::len),
        _ => return Ok(()),
    };
    if len > MAX_STORED_STRING_BYTES {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "a string of {len} bytes is longer than the {MAX_STORED_STRING_BYTES} a `set` may store"
            ),
        ));
    }
    budget.bytes = budget.bytes.checked_sub(len as u64).ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("the template stored more than {MAX_STORED_BYTES} bytes of strings with `set`"),
        )
    })?;
    Ok(())
}
