//! The run spec: the floor of this crate. What a benchmark run is asked to do, defined once
//! for every surface that asks: the CLI's `bench` flags, `bench()` in the npm package and
//! the benchmark page's form.
//!
//! It holds the options as data ([`BenchOptions`], with their defaults), the find-max
//! limits ([`FindMaxOptions`]) and prompt-cache mode ([`CacheBust`]) they carry; every
//! option's names and kind ([`FIELDS`]); the rules between options ([`rules::RULES`] and
//! [`BenchOptions::validate`]); and the error that names an option the way each surface
//! wrote it ([`OptionError`]). Everything
//! above (the load driver, the prompt and request plans, the report) imports it; it imports
//! none of them, only the leaf modules that name an API, a workload, a load level or an
//! error.
//!
//! What it does not do: build requests, draw prompts or run anything. The methods that turn
//! options into those live beside the code they feed (`impl BenchOptions` in
//! `options`).

mod bench_options;
mod cache_bust;
pub mod field;
pub mod find_max;
mod option_error;
mod read;
mod record_extras;
pub mod rules;
pub mod schema;
mod ticket;
mod validate;
mod value;

pub use bench_options::{BenchOptions, MAX_SECONDS, MAX_TURNS};
pub use cache_bust::CacheBust;
pub use field::{FIELDS, Field, FieldSpec, Kind};
pub use find_max::{FindMaxConfig, FindMaxOptions};
pub use option_error::OptionError;
pub use read::{Given, is_core, read_given};
pub use record_extras::RecordExtras;
pub use ticket::{Action, Ticket, Turn};
pub use value::OptionValue;
