//! The rules between options that hold whatever their values: which cannot go together and
//! which need another. Written once here as data; the CLI, `bench()` and the benchmark page
//! all check a run against this table ([`check_given`]) and say the same sentence, each with
//! its own names for the options. Rules on values (a ramp-up shorter than the level's
//! duration, a shared prefix below the input length) are in [`BenchOptions::validate`](super::BenchOptions::validate).

use super::field::Field;
use super::option_error::OptionError;

/// A rule on which options were given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// The two cannot be given together.
    Conflicts(Field, Field, &'static str),
    /// The first means nothing without the second.
    Needs(Field, Field, &'static str),
}

/// Every rule on given options, in the order they are checked (the first broken one is
/// reported).
pub const RULES: &[Rule] = &[
    Rule::Conflicts(
        Field::Concurrency,
        Field::Rate,
        "{concurrency} runs closed-loop levels (requests kept in flight), {rate} open-loop ones \
         (arrivals per second); give one",
    ),
    Rule::Needs(
        Field::MaxConcurrency,
        Field::Rate,
        "it caps the requests in flight of open-loop levels",
    ),
    Rule::Conflicts(
        Field::Requests,
        Field::DurationS,
        "a level runs for a request count or for a duration; give one",
    ),
    Rule::Conflicts(
        Field::MaxDurationS,
        Field::DurationS,
        "{maxDurationS} caps a level run by request count; a level of {durationS} already \
         ends on time",
    ),
    Rule::Conflicts(
        Field::Dataset,
        Field::Prompt,
        "a dataset gives each request its messages; give one",
    ),
    Rule::Conflicts(
        Field::Dataset,
        Field::InputTokens,
        "a dataset gives each request its messages; give one",
    ),
    Rule::Conflicts(
        Field::Dataset,
        Field::SharedPrefix,
        "a dataset gives each request its messages; give one",
    ),
    Rule::Conflicts(
        Field::Dataset,
        Field::Workload,
        "a dataset gives each request its messages; give one",
    ),
    Rule::Conflicts(
        Field::Workload,
        Field::Prompt,
        "a workload sets the input itself; give one",
    ),
    Rule::Conflicts(
        Field::Workload,
        Field::InputTokens,
        "a workload sets the input itself; give one",
    ),
    Rule::Conflicts(
        Field::Workload,
        Field::InputTokensStdev,
        "a workload sets the input itself; give one",
    ),
    Rule::Conflicts(
        Field::Prompt,
        Field::InputTokens,
        "{inputTokens} generates the prompt; give one",
    ),
    Rule::Needs(
        Field::InputTokensStdev,
        Field::InputTokens,
        "the mean it draws lengths around",
    ),
    Rule::Needs(
        Field::FindMax,
        Field::Slo,
        "each level is judged by it, e.g. ttft=500ms,tpot=50ms",
    ),
];

/// Checks [`RULES`] against the options given (`given(field)`: whether the user set it).
pub fn check_given(given: &dyn Fn(Field) -> bool) -> Result<(), OptionError> {
    for rule in RULES {
        match *rule {
            Rule::Conflicts(field, other, why) if given(field) && given(other) => {
                return Err(OptionError::Conflict { field, other, why });
            }
            Rule::Needs(field, other, why) if given(field) && !given(other) => {
                return Err(OptionError::Needs { field, other, why });
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_first_broken_rule_is_reported_with_both_names() {
        let given = |set: &'static [Field]| move |f: Field| set.contains(&f);
        assert_eq!(check_given(&given(&[Field::Concurrency])), Ok(()));
        let e = check_given(&given(&[Field::Concurrency, Field::Rate])).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("`concurrency` and `rate` conflict: "),
            "{e}"
        );
        let e = check_given(&given(&[Field::MaxConcurrency])).unwrap_err();
        assert_eq!(
            e.for_cli(),
            "--max-concurrency needs --rate: it caps the requests in flight of open-loop levels"
        );
        assert!(check_given(&given(&[Field::MaxConcurrency, Field::Rate])).is_ok());
    }
}
