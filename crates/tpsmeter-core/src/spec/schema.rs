//! The run spec's JSON Schema, generated from the Rust types with `schemars` and committed as
//! `crates/tpsmeter-core/spec.schema.json`, as the report's is (`report/schema.rs`). The
//! package's TypeScript types for `bench()`'s settings (`RunSettings`, `FindMaxLimits`),
//! for the driver's `Action` and for `RecordExtras` are generated from it
//! (`pkg/scripts/report-types.mjs`), so none of them is written twice. A test regenerates
//! it and fails when the committed file differs (`TPSMETER_BLESS=1 cargo test -p
//! tpsmeter-core --test spec_schema` rewrites it after a deliberate change).
//!
//! The root is `RunSettings`: every option of [`FIELDS`] that is data (all but the
//! browser's own objects), as `bench()` takes it. Where `bench()` takes more shapes than
//! [`BenchOptions`] holds (one level or a list; `findMax: true`), the schema says so through
//! the schema-only types below; the spec's reader turns them into the one shape.

use schemars::generate::{Contract, SchemaSettings};
use serde_json::{Map, Value};

use super::field::{FIELDS, Field, Kind};
use super::{Action, BenchOptions, FindMaxOptions, RecordExtras};

/// The committed schema (JSON text).
pub const SCHEMA_JSON: &str = include_str!("../../spec.schema.json");

// Schema-only types: `bench()` takes these shapes, the spec's reader turns them into
// `BenchOptions`' one shape; nothing constructs them.

/// One number of streams, or a list of them (one level each).
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub(super) enum Levels {
    One(u32),
    Many(Vec<u32>),
}

/// One rate in requests/s, or a list of them (one level each).
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub(super) enum Rates {
    One(f64),
    Many(Vec<f64>),
}

/// `findMax`: `true` for the default limits, `false` for no search, or the limits.
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub(super) enum FindMaxSetting {
    On(bool),
    Limits(FindMaxOptions),
}

/// `bench()`'s settings: the options, the key and the dataset.
// The key is kept apart from the options (see `BenchOptions`), and the dataset is read by
// the caller: only this schema puts them together.
#[derive(schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct RunSettings {
    #[serde(flatten)]
    options: BenchOptions,
    /// Sent in the API's header (or query for Gemini); kept in memory only, never in a
    /// report or message.
    api_key: Option<String>,
    /// Draw each request's messages from a dataset instead of one prompt (the package types
    /// what it takes; the CLI's `--dataset` reads the same formats).
    #[schemars(with = "Option<serde_json::Value>")]
    dataset: Option<()>,
}

/// The options `bench()` cannot run without (a local run fills `url` and `model` in).
const REQUIRED: &[Field] = &[Field::Api, Field::Url, Field::Model];

/// The schema as the current types define it, pretty-printed with a final newline.
pub fn generate() -> String {
    // What the page hands in is described as the spec reads it, what it gets back (an
    // action) as the core writes it: `scheduledMs` is left out, not null, when absent.
    let settings = |contract: &Contract| {
        SchemaSettings::draft2020_12()
            .with(|s| s.contract = contract.clone())
            .into_generator()
    };
    let read = Contract::Deserialize;
    let written = Contract::Serialize;
    let mut root = to_value(settings(&read).into_root_schema_for::<RunSettings>());
    let mut defs = take_defs(&mut root);
    for (name, mut schema) in [
        (
            "Action",
            to_value(settings(&written).into_root_schema_for::<Action>()),
        ),
        (
            "RecordExtras",
            to_value(settings(&read).into_root_schema_for::<RecordExtras>()),
        ),
    ] {
        defs.extend(take_defs(&mut schema));
        if let Some(o) = schema.as_object_mut() {
            o.remove("$schema");
        }
        defs.insert(name.into(), schema);
    }
    // `start` is a `Ticket` with its kind: written out in the variant, so that the generated
    // TypeScript has one `{ kind: 'start', ticket, ... }` (json-schema-to-typescript drops
    // properties beside a `$ref`).
    if let Some(ticket) = defs.remove("Ticket") {
        if let Some(Value::Array(variants)) =
            defs.get_mut("Action").and_then(|a| a.get_mut("oneOf"))
        {
            for v in variants.iter_mut().filter(|v| v.get("$ref").is_some()) {
                inline(v, &ticket);
            }
        }
    }
    // An option left out is absent, not null: the spec's reader refuses `null` for every
    // option but a find-max limit, so the types say `number`, not `number | null`.
    not_null(&mut root);
    for name in ["RecordExtras", "FindMaxLimits"] {
        if let Some(def) = defs.get_mut(name) {
            not_null(def);
        }
    }
    if let Some(Value::Array(variants)) = defs.get_mut("Action").and_then(|a| a.get_mut("oneOf")) {
        variants.iter_mut().for_each(not_null);
    }
    // Every option name, the browser's own objects included: the package checks at compile
    // time that its `BenchOptions` has exactly these keys.
    let keys: Vec<Value> = FIELDS.iter().map(|f| Value::from(f.key)).collect();
    defs.insert(
        "OptionKey".into(),
        serde_json::json!({
            "description": "The name of every option `bench()` takes (the spec's `FIELDS`).",
            "type": "string",
            "enum": keys,
        }),
    );
    if let Some(o) = root.as_object_mut() {
        let required: Vec<Value> = REQUIRED.iter().map(|f| Value::from(f.key())).collect();
        o.insert("required".into(), Value::from(required));
        o.insert("$defs".into(), Value::Object(defs));
    }
    let mut text = serde_json::to_string_pretty(&root).unwrap_or_default();
    text.push('\n');
    text
}

/// `variant` (`{ $ref, properties: { kind }, required: [kind] }`) with the properties and
/// required keys of `def`, the definition it referred to, in place of the reference.
fn inline(variant: &mut Value, def: &Value) {
    let Some(v) = variant.as_object_mut() else {
        return;
    };
    v.remove("$ref");
    if let (Some(Value::Object(into)), Some(Value::Object(from))) =
        (v.get_mut("properties"), def.get("properties"))
    {
        for (k, p) in from {
            into.insert(k.clone(), p.clone());
        }
    }
    if let (Some(Value::Array(into)), Some(Value::Array(from))) =
        (v.get_mut("required"), def.get("required"))
    {
        into.extend(from.iter().cloned());
    }
}

/// Takes `null` out of what each of `object`'s properties accepts (`Option` adds it), and
/// out of their defaults.
fn not_null(object: &mut Value) {
    let Some(properties) = object.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for p in properties.values_mut() {
        let Some(p) = p.as_object_mut() else { continue };
        if p.get("default").is_some_and(Value::is_null) {
            p.remove("default");
        }
        if let Some(Value::Array(types)) = p.get_mut("type") {
            types.retain(|t| t != "null");
            if let [one] = types.as_slice() {
                let one = one.clone();
                p.insert("type".into(), one);
            }
        }
        if let Some(Value::Array(any)) = p.get_mut("anyOf") {
            any.retain(|s| s.get("type").is_none_or(|t| t != "null"));
            if let [Value::Object(only)] = any.as_slice() {
                let only = only.clone();
                p.remove("anyOf");
                for (k, v) in only {
                    p.entry(k).or_insert(v);
                }
            }
        }
    }
}

/// The keys the root's properties must be: every option that is data, in `FIELDS`' order.
pub fn data_keys() -> Vec<&'static str> {
    FIELDS
        .iter()
        .filter(|f| f.kind != Kind::Browser)
        .map(|f| f.key)
        .collect()
}

fn to_value(schema: schemars::Schema) -> Value {
    serde_json::to_value(schema).unwrap_or(Value::Null)
}

fn take_defs(schema: &mut Value) -> Map<String, Value> {
    match schema.as_object_mut().and_then(|o| o.remove("$defs")) {
        Some(Value::Object(defs)) => defs,
        _ => Map::new(),
    }
}
