//! [`OptionError`]: an option the run cannot take, keyed by the option, so that each surface
//! names it the way its user typed it. One rule gives `` `maxConcurrency` needs `rate` `` in
//! `bench()`, `--max-concurrency needs --rate` on the command line, and the form's own
//! labels on the benchmark page: the reason is the same text, the names are the surface's.

use super::field::{FIELDS, Field};
use crate::cap::cap_chars;
use crate::error::CoreError;

/// Why an option set was refused. Reasons are written with other options as `{key}`
/// placeholders (`{durationS}`), which [`OptionError::render`] replaces by the surface's name.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum OptionError {
    /// A name no option has, with the one it most likely meant.
    Unknown {
        name: String,
        suggestion: Option<Field>,
    },
    /// A value of the wrong kind (`bench()` only: the CLI's parser types its flags).
    Expects { field: Field, got: String },
    /// An option that must be given.
    Missing { field: Field },
    /// Two options that cannot go together.
    Conflict {
        field: Field,
        other: Field,
        why: &'static str,
    },
    /// An option that means nothing without another.
    Needs {
        field: Field,
        other: Field,
        why: &'static str,
    },
    /// A value out of its range, or at odds with another option's value.
    Invalid {
        field: Field,
        input: String,
        reason: String,
    },
    /// A value its own parser refused (an SLO list, find-max limits), with that parser's words.
    Rejected { field: Field, message: String },
}

impl OptionError {
    /// The option at fault (none for an unknown name).
    pub fn field(&self) -> Option<Field> {
        match self {
            OptionError::Unknown { .. } => None,
            OptionError::Expects { field, .. }
            | OptionError::Missing { field }
            | OptionError::Conflict { field, .. }
            | OptionError::Needs { field, .. }
            | OptionError::Invalid { field, .. }
            | OptionError::Rejected { field, .. } => Some(*field),
        }
    }

    /// The message, each option named by `name` (`Field::quoted_key` for `bench()`,
    /// `Field::flag_name` for the CLI, the form's labels on the page).
    pub fn render(&self, name: &dyn Fn(Field) -> String) -> String {
        let fill = |text: &str| fill(text, name);
        match self {
            OptionError::Unknown {
                name: typed,
                suggestion,
            } => {
                let typed = cap_chars(typed, 40);
                match suggestion {
                    Some(s) => format!("unknown option `{typed}` (did you mean {}?)", name(*s)),
                    None => format!("unknown option `{typed}`"),
                }
            }
            OptionError::Expects { field, got } => format!(
                "{} expects {}, got {got}",
                name(*field),
                field.spec().kind.expected()
            ),
            OptionError::Missing { field } => format!("{} is required", name(*field)),
            OptionError::Conflict { field, other, why } => {
                format!(
                    "{} and {} conflict: {}",
                    name(*field),
                    name(*other),
                    fill(why)
                )
            }
            OptionError::Needs { field, other, why } => {
                format!("{} needs {}: {}", name(*field), name(*other), fill(why))
            }
            OptionError::Invalid {
                field,
                input,
                reason,
            } => format!(
                "{} {}, got {}",
                name(*field),
                fill(reason),
                cap_chars(input, 40)
            ),
            OptionError::Rejected { field, message } => format!("{}: {message}", name(*field)),
        }
    }

    /// The message with the command line's flag names.
    pub fn for_cli(&self) -> String {
        self.render(&Field::flag_name)
    }
}

/// `bench()`'s wording: options named by their keys.
impl std::fmt::Display for OptionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render(&Field::quoted_key))
    }
}

impl std::error::Error for OptionError {}

/// Where a run's options meet the crate's other errors (the load driver checks them too).
impl From<OptionError> for CoreError {
    fn from(e: OptionError) -> CoreError {
        CoreError::InvalidOption {
            field: e.field().map(Field::key),
            message: e.to_string(),
        }
    }
}

/// `text` with each `{key}` replaced by that option's name.
fn fill(text: &str, name: &dyn Fn(Field) -> String) -> String {
    let mut out = text.to_owned();
    for s in FIELDS {
        let placeholder = format!("{{{}}}", s.key);
        if out.contains(&placeholder) {
            out = out.replace(&placeholder, &name(s.field));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_rule_reads_in_each_surface_s_names() {
        let e = OptionError::Invalid {
            field: Field::RampUpS,
            input: "5".into(),
            reason: "must be shorter than {durationS}".into(),
        };
        assert_eq!(
            e.to_string(),
            "`rampUpS` must be shorter than `durationS`, got 5"
        );
        assert_eq!(
            e.for_cli(),
            "--ramp-up must be shorter than --duration, got 5"
        );
        let labels = |f: Field| match f {
            Field::RampUpS => "Ramp-up".to_owned(),
            other => other.quoted_key(),
        };
        assert_eq!(
            e.render(&labels),
            "Ramp-up must be shorter than `durationS`, got 5"
        );
    }
}
