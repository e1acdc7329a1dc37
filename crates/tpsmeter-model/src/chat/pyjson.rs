//! `tojson` as Hugging Face templates expect it: Python's `json.dumps(x, ensure_ascii=False)`.
//!
//! minijinja's own `tojson` escapes `<`, `>`, `&` and `'` for HTML and spaces differently;
//! a tool-calling template rendered with it gives a prompt the model was never trained on.

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, Value};

/// Deepest nesting serialised: templates serialise tool schemas, a few levels deep.
const MAX_DEPTH: usize = 64;

/// The filter: `x | tojson` or `x | tojson(indent=2)`.
pub(super) fn tojson(value: &Value, indent: Option<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let indent = match indent {
        Some(v) => Some(v),
        None => kwargs.get::<Option<Value>>("indent")?,
    };
    // `ensure_ascii`, `sort_keys` and `separators` are accepted and ignored where harmless.
    let _: Option<Value> = kwargs.get("ensure_ascii")?;
    kwargs.assert_all_used()?;
    let indent = match indent {
        None => None,
        Some(v) if v.is_none() => None,
        Some(v) => Some(usize::try_from(v)?),
    };
    let mut out = String::new();
    write_value(&mut out, value, indent, 0)?;
    Ok(Value::from_safe_string(out))
}

fn write_value(
    out: &mut String,
    v: &Value,
    indent: Option<usize>,
    depth: usize,
) -> Result<(), Error> {
    if depth > MAX_DEPTH {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            "tojson: value nested too deeply",
        ));
    }
    match v.kind() {
        ValueKind::Undefined | ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if v.is_true() { "true" } else { "false" }),
        ValueKind::Number => write_number(out, v),
        ValueKind::String => write_string(out, v.as_str().unwrap_or_default()),
        ValueKind::Map => {
            let keys: Vec<Value> = v.try_iter()?.collect();
            write_container(out, '{', '}', keys.len(), indent, depth, |out, i| {
                let key = &keys[i];
                let key_text = key.as_str().map_or_else(|| key.to_string(), str::to_owned);
                write_string(out, &key_text);
                out.push_str(": ");
                write_value(out, &v.get_item(key)?, indent, depth + 1)
            })?;
        }
        ValueKind::Seq | ValueKind::Iterable => {
            let items: Vec<Value> = v.try_iter()?.collect();
            write_container(out, '[', ']', items.len(), indent, depth, |out, i| {
                write_value(out, &items[i], indent, depth + 1)
            })?;
        }
        _ => write_string(out, &v.to_string()),
    }
    Ok(())
}

fn write_container(
    out: &mut String,
    open: char,
    close: char,
    len: usize,
    indent: Option<usize>,
    depth: usize,
    mut item: impl FnMut(&mut String, usize) -> Result<(), Error>,
) -> Result<(), Error> {
    out.push(open);
    if len == 0 {
        out.push(close);
        return Ok(());
    }
    for i in 0..len {
        if i > 0 {
            out.push_str(if indent.is_some() { "," } else { ", " });
        }
        if let Some(n) = indent {
            out.push('\n');
            out.push_str(&" ".repeat(n * (depth + 1)));
        }
        item(out, i)?;
    }
    if let Some(n) = indent {
        out.push('\n');
        out.push_str(&" ".repeat(n * depth));
    }
    out.push(close);
    Ok(())
}

fn write_number(out: &mut String, v: &Value) {
    if v.is_integer() {
        out.push_str(&v.to_string());
        return;
    }
    match f64::try_from(v.clone()) {
        // Python writes floats with a fractional part always: 1.0, not 1.
        Ok(x) if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e16 => {
            out.push_str(&format!("{x:.1}"));
        }
        Ok(x) if x.is_finite() => out.push_str(&format!("{x}")),
        Ok(x) if x.is_nan() => out.push_str("NaN"),
        Ok(x) if x > 0.0 => out.push_str("Infinity"),
        Ok(_) => out.push_str("-Infinity"),
        Err(_) => out.push_str(&v.to_string()),
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}
