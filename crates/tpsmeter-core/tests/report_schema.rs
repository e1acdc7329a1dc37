//! The committed JSON Schema is the one the types generate: a report field added, renamed
//! or retyped without regenerating the schema fails here.
#![allow(clippy::unwrap_used)]

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

use tpsmeter_core::report::schema::{SCHEMA_JSON, generate};

#[test]
fn committed_schema_matches_the_report_types() {
    let generated = generate();
    #[cfg(not(target_arch = "wasm32"))]
    if std::env::var_os("TPSMETER_BLESS").is_some() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/report.schema.json");
        std::fs::write(path, &generated).unwrap();
        return;
    }
    assert!(
        generated == SCHEMA_JSON,
        "report.schema.json is stale: run TPSMETER_BLESS=1 cargo test -p tpsmeter-core --test report_schema"
    );
    let schema: serde_json::Value = serde_json::from_str(SCHEMA_JSON).unwrap();
    assert_eq!(schema["title"], "Report");
    assert!(schema["properties"]["schema_version"].is_object());
}
