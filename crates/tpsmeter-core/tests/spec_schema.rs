//! The committed run-spec schema is the one the types generate, and it says what the spec
//! says: its settings are exactly the options of `FIELDS` that are data, and the driver's
//! actions serialize as its `Action` describes them.
#![allow(clippy::unwrap_used)]

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

use std::collections::BTreeSet;

use serde_json::Value;
use tpsmeter_core::load::LoadLevel;
use tpsmeter_core::spec::schema::{SCHEMA_JSON, data_keys, generate};
use tpsmeter_core::spec::{Action, FIELDS, RecordExtras, Ticket};

fn schema() -> Value {
    serde_json::from_str(SCHEMA_JSON).unwrap()
}

#[test]
fn committed_schema_matches_the_spec_types() {
    let generated = generate();
    #[cfg(not(target_arch = "wasm32"))]
    if std::env::var_os("TPSMETER_BLESS").is_some() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/spec.schema.json");
        std::fs::write(path, &generated).unwrap();
        return;
    }
    assert!(
        generated == SCHEMA_JSON,
        "spec.schema.json is stale: run TPSMETER_BLESS=1 cargo test -p tpsmeter-core --test spec_schema"
    );
}

#[test]
fn settings_are_the_data_options_of_the_field_table() {
    let schema = schema();
    assert_eq!(schema["title"], "RunSettings");
    let properties: BTreeSet<&str> = schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let data: BTreeSet<&str> = data_keys().into_iter().collect();
    assert_eq!(properties, data, "the schema's settings and FIELDS differ");
    let option_keys: Vec<&str> = schema["$defs"]["OptionKey"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let fields: Vec<&str> = FIELDS.iter().map(|f| f.key).collect();
    assert_eq!(option_keys, fields);
    assert_eq!(
        schema["required"],
        serde_json::json!(["api", "url", "model"])
    );
    // Every setting is documented: the docs are the package's.
    for (key, p) in schema["properties"].as_object().unwrap() {
        assert!(
            p["description"].as_str().is_some_and(|d| d.len() > 10),
            "`{key}` has no description"
        );
    }
}

/// The schema of `kind` among `Action`'s variants.
fn variant<'a>(schema: &'a Value, kind: &str) -> &'a Value {
    schema["$defs"]["Action"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["properties"]["kind"]["const"] == kind)
        .unwrap_or_else(|| panic!("no `{kind}` variant in the schema's Action"))
}

#[test]
fn actions_serialize_as_the_schema_says() {
    let schema = schema();
    let actions = [
        Action::Start(Ticket {
            id: 7,
            level_index: 1,
            level: LoadLevel::Concurrency(4),
            warmup: false,
            scheduled_ms: Some(12.5),
        }),
        Action::Start(Ticket {
            id: 8,
            level_index: 0,
            level: LoadLevel::Rate(2.0),
            warmup: true,
            scheduled_ms: None,
        }),
        Action::Sleep { until_ms: 40.0 },
        Action::Wait,
        Action::Done,
    ];
    for action in actions {
        let json = serde_json::to_value(action).unwrap();
        let kind = json["kind"].as_str().unwrap();
        let v = variant(&schema, kind);
        // `scheduledMs` is left out, never null.
        for p in v["properties"].as_object().unwrap().values() {
            assert!(
                p["type"] != "null"
                    && !p["type"]
                        .as_array()
                        .is_some_and(|t| t.contains(&Value::from("null")))
            );
        }
        let listed: BTreeSet<&str> = v["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let written: BTreeSet<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert!(
            written.is_subset(&listed),
            "{kind}: writes {written:?}, the schema lists {listed:?}"
        );
        for r in v["required"].as_array().unwrap() {
            assert!(written.contains(r.as_str().unwrap()), "{kind}: {r} missing");
        }
    }
    let start = serde_json::to_value(actions[0]).unwrap();
    assert_eq!(
        start,
        serde_json::json!({"kind": "start", "ticket": 7, "level": 1, "warmup": false, "scheduledMs": 12.5})
    );
}

#[test]
fn record_extras_read_only_the_transport_facts() {
    let schema = schema();
    let listed: BTreeSet<&str> = schema["$defs"]["RecordExtras"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let facts = [
        "queueMs",
        "httpVersion",
        "tabHidden",
        "dnsMs",
        "connectMs",
        "tlsMs",
        "waitMs",
    ];
    assert_eq!(listed, facts.into_iter().collect::<BTreeSet<_>>());
    let extras: RecordExtras = serde_json::from_value(serde_json::json!({
        "queueMs": 3.0, "httpVersion": "h2", "tabHidden": true, "dnsMs": 1.0,
        "countPending": true, "outputTokensCounted": 5,
    }))
    .unwrap();
    assert_eq!(extras.queue_ms, Some(3.0));
    assert_eq!(extras.http_version.as_deref(), Some("h2"));
    // What the caller works out itself cannot be set from JSON.
    assert!(!extras.count_pending);
    assert_eq!(extras.output_tokens_counted, None);
}
