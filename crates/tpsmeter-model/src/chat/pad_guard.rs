//! Caps the sizes a template can name as a number: padding in string formatting, and the
//! count of `slice` and `batch`.
//!
//! Why: the `format` filter (printf style, `'%05d'|format(n)`), the `str.format()` method of
//! `pycompat` (`'{:>5}'.format(s)`) and the `indent` filter take a width or precision from the
//! template and allocate that many characters at once, with no cap of their own. The fuzzer
//! found `'%0645970003280702122d'|format(3)`: a 6.4e17-byte allocation, which aborts the
//! process (an allocation failure is not an error Rust can return). Fuel and the recursion
//! limit do not help: it is one instruction.
//!
//! How: these three are replaced by wrappers that read the widths and precisions first
//! (literal numbers in the format specifications, the arguments a `*` or a nested `{}` takes
//! them from, `indent`'s width) and refuse any over [`MAX_PAD`] with a template error; then
//! they call minijinja's own implementation. Real chat templates indent by 4 or 8 and format
//! without widths.
//!
//! The same wrappers refuse format strings that would panic minijinja 3.0.5's format parser:
//! it reads a printf key (`%(key)s`) and a `str.format()` index (`{0[key]}`) one byte at a
//! time and slices the string there, which panics inside a multi-byte character (the fuzzer
//! found `'%(\u{fffd})s'|format(..)`). A panic is an error natively (the render thread's),
//! but aborts the engine's Worker in the browser. Keys and indexes must be ASCII.
//!
//! `slice(n)` makes `n` lists whatever the input's length, and `batch(n, fill)` pads its last
//! batch to `n` items: one instruction each, so `[1]|slice(10000000000)` ran out of memory
//! the same way. Their counts are capped at [`MAX_PAD`] too (no real template uses either).

use minijinja::value::{Kwargs, Rest, StringInput, ValueOrKwargs};
use minijinja::{Error, ErrorKind, State, Value};

/// The largest width or precision a template may format or indent with.
pub const MAX_PAD: usize = 1024;

fn too_wide(what: &str, n: u128) -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!("{what} {n} is over the chat template limit of {MAX_PAD}"),
    )
}

fn non_ascii_key(what: &str) -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!("a {what} in a format string must be ASCII (the formatter cannot read others)"),
    )
}

/// `b` up to the first `end` (all of it when there is none) is ASCII: minijinja's key
/// parser reads that far one byte at a time.
fn ascii_until(b: &[u8], end: u8) -> bool {
    b.iter().take_while(|&&c| c != end).all(u8::is_ascii)
}

/// The number spelled by the ASCII digits at the start of `b`, saturated, and its length.
fn digits(b: &[u8]) -> (u128, usize) {
    let len = b.iter().take_while(|c| c.is_ascii_digit()).count();
    let n = b[..len].iter().fold(0u128, |n, &c| {
        n.saturating_mul(10).saturating_add(u128::from(c - b'0'))
    });
    (n, len)
}

/// Every number argument is within [`MAX_PAD`] (a `*` width, or a nested `{}` field, takes
/// its value from the arguments; which one is not worth tracking).
fn check_args<'a>(what: &str, args: impl Iterator<Item = &'a Value>) -> Result<(), Error> {
    for v in args {
        if let Ok(n) = i128::try_from(v.clone()) {
            if n.unsigned_abs() > MAX_PAD as u128 {
                return Err(too_wide(what, n.unsigned_abs()));
            }
        }
    }
    Ok(())
}

/// Checks the widths and precisions of a printf-style format string:
/// `%[(key)][flags][width|*][.precision|*]...`.
fn check_printf<'a>(fmt: &str, args: impl Iterator<Item = &'a Value>) -> Result<(), Error> {
    let b = fmt.as_bytes();
    let mut star = false;
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' {
            i += 1;
            continue;
        }
        i += 1;
        if b.get(i) == Some(&b'%') {
            i += 1;
            continue;
        }
        if b.get(i) == Some(&b'(') {
            if !ascii_until(&b[i + 1..], b')') {
                return Err(non_ascii_key("printf key"));
            }
            i += b[i..]
                .iter()
                .position(|&c| c == b')')
                .map_or(b.len() - i, |p| p + 1);
        }
        while matches!(b.get(i), Some(b'#' | b'0' | b'-' | b' ' | b'+')) {
            i += 1;
        }
        for part in ["width", "precision"] {
            if part == "precision" {
                if b.get(i) != Some(&b'.') {
                    break;
                }
                i += 1;
            }
            if b.get(i) == Some(&b'*') {
                star = true;
                i += 1;
                continue;
            }
            let (n, len) = digits(&b[i..]);
            if n > MAX_PAD as u128 {
                return Err(too_wide(&format!("format {part}"), n));
            }
            i += len;
        }
    }
    if star {
        check_args("format width", args)?;
    }
    Ok(())
}

/// Checks the specifications of a `str.format()` string: every number after the `:` of a
/// `{...}` field; fields nested in a specification take theirs from the arguments.
fn check_str_format(fmt: &str, args: &[Value]) -> Result<(), Error> {
    let b = fmt.as_bytes();
    let mut nested = false;
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'{' || b.get(i + 1) == Some(&b'{') {
            i += if b[i] == b'{' { 2 } else { 1 };
            continue;
        }
        // The field name's path: digits, identifiers and `.`, then `[index]`s, each read to
        // its `]` (or the string's end) whatever lies between.
        let mut j = i + 1;
        loop {
            while matches!(b.get(j), Some(c) if c.is_ascii_alphanumeric() || *c == b'_' || *c == b'.')
            {
                j += 1;
            }
            if b.get(j) != Some(&b'[') {
                break;
            }
            if !ascii_until(&b[j + 1..], b']') {
                return Err(non_ascii_key("format index"));
            }
            match b[j + 1..].iter().position(|&c| c == b']') {
                Some(p) => j += p + 2,
                None => break,
            }
        }
        let end = b[i..]
            .iter()
            .position(|&c| c == b'}')
            .map_or(b.len(), |p| i + p);
        let field = &b[i + 1..end];
        if let Some(colon) = field.iter().position(|&c| c == b':') {
            let spec = &field[colon + 1..];
            nested |= spec.contains(&b'{');
            let mut j = 0;
            while j < spec.len() {
                let (n, len) = digits(&spec[j..]);
                if n > MAX_PAD as u128 {
                    return Err(too_wide("format width or precision", n));
                }
                j += len.max(1);
            }
        }
        i = end + 1;
    }
    if nested {
        check_args("format width", args.iter())?;
    }
    Ok(())
}

/// minijinja's `format` filter, after [`check_printf`].
pub fn format(state: &mut State, fmt: &Value, args: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    if let Some(s) = fmt.as_str() {
        check_printf(s, args.iter().map(|a| &**a))?;
    }
    minijinja::filters::format(state, fmt, args)
}

/// minijinja's `indent` filter, with its width (positional or `width=`) capped.
pub fn indent(
    value: StringInput<'_>,
    width: Option<usize>,
    first: Option<bool>,
    blank: Option<bool>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let w = match width {
        Some(w) => Some(w),
        None => kwargs.peek::<Option<usize>>("width")?,
    };
    check_count("indent width", w.unwrap_or(0))?;
    minijinja::filters::indent(value, width, first, blank, kwargs)
}

/// A count or width a filter takes as an argument is within [`MAX_PAD`].
fn check_count(what: &str, n: usize) -> Result<(), Error> {
    if n > MAX_PAD {
        return Err(too_wide(what, n as u128));
    }
    Ok(())
}

/// minijinja's `slice` filter, with its count capped.
pub fn slice(
    state: &State,
    value: Value,
    count: usize,
    fill_with: Option<Value>,
) -> Result<Value, Error> {
    check_count("slice count", count)?;
    minijinja::filters::slice(state, value, count, fill_with)
}

/// minijinja's `batch` filter, with its count capped.
pub fn batch(
    state: &State,
    value: Value,
    count: usize,
    fill_with: Option<Value>,
) -> Result<Value, Error> {
    check_count("batch count", count)?;
    minijinja::filters::batch(state, value, count, fill_with)
}

/// `pycompat`'s method callback, with `str.format()` checked by [`check_str_format`].
pub fn unknown_method(
    state: &mut State,
    value: &Value,
    method: &str,
    args: &[Value],
) -> Result<Value, Error> {
    if method == "format" {
        if let Some(s) = value.as_str() {
            check_str_format(s, args)?;
        }
    }
    minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::{MAX_PAD, check_printf, check_str_format};
    use minijinja::Value;

    #[test]
    fn printf_widths_and_precisions_over_the_cap_are_refused() {
        let none: [Value; 0] = [];
        for ok in [
            "%s",
            "%5d",
            "%-10s|%.3f",
            "100%% of %s",
            "%(name)08.2f",
            "2024: %s",
        ] {
            assert!(check_printf(ok, none.iter()).is_ok(), "{ok}");
        }
        for bad in [
            "%0645970003280702122d",
            "%1025s",
            "%.99999f",
            "%(k)#-+ 2000x",
        ] {
            assert!(check_printf(bad, none.iter()).is_err(), "{bad}");
        }
        for bad in ["%(é)s", "%(a\u{fffd}b)d", "%(日本", "x %%%(é)s"] {
            assert!(check_printf(bad, none.iter()).is_err(), "{bad}");
        }
        for ok in ["%(a)s é", "é %s", "%%(é)s"] {
            assert!(check_printf(ok, none.iter()).is_ok(), "{ok}");
        }
        let big = [Value::from(MAX_PAD as i64 + 1), Value::from(1)];
        assert!(check_printf("%*d", big.iter()).is_err());
        assert!(
            check_printf("%d %d", big.iter()).is_ok(),
            "no * takes the argument"
        );
    }

    #[test]
    fn str_format_specifications_over_the_cap_are_refused() {
        for ok in [
            "{}",
            "{0:>8}",
            "{:.3f} and {{literal 99999}}",
            "{name:0>10}",
            "2024 {}",
        ] {
            assert!(check_str_format(ok, &[]).is_ok(), "{ok}");
        }
        for bad in ["{:>99999999999}", "{0:.5000f}", "{:x<2048}"] {
            assert!(check_str_format(bad, &[]).is_err(), "{bad}");
        }
        for bad in ["{0[é]}", "{a.b[x\u{fffd}]}", "{0[a][日本}", "{0[\u{fffd}"] {
            assert!(check_str_format(bad, &[]).is_err(), "{bad}");
        }
        // Brackets outside a field name, and ASCII indexes, are the formatter's business.
        for ok in ["[é] {}", "{0[a]} é", "{a[1]}[é]"] {
            assert!(check_str_format(ok, &[]).is_ok(), "{ok}");
        }
        let big = [Value::from(1u64 << 40)];
        assert!(check_str_format("{:>{}}", &big).is_err());
        assert!(check_str_format("{:>5}", &big).is_ok());
    }
}
