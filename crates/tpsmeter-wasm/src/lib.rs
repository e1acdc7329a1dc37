//! The wasm-bindgen boundary of tpsmeter (see README.md for the JS-visible API).
//!
//! What it does: exposes `tpsmeter-core`'s request builders, stream parser and timeline
//! (`Exchange`, [`JsExchange`] in Rust), load driver and report (`BenchRun`, with the
//! default `bench` feature) to JavaScript, so the browser measures with the same code as the CLI and writes the
//! same report.
//!
//! What it does not do: any I/O. The npm package (`pkg/`) calls `fetch`, reads the body,
//! stamps each read with `performance.now()` before calling in here, and owns the timers and
//! the DOM. No engine and no tokenizer are linked in (the `gpu` and `cpu` features are for the
//! local engine, the `tokenizer` feature for `bench({ tokenizer })`'s counter: separate
//! builds).

#[cfg(feature = "bench")]
mod bench;
#[cfg(feature = "bench")]
mod convert;
#[cfg(feature = "bench")]
mod counter;
#[cfg(feature = "bench")]
mod dataset;
#[cfg(any(feature = "gpu", feature = "cpu"))]
mod engine;
#[cfg(feature = "exchange")]
mod exchange;
#[cfg(any(feature = "gpu", feature = "cpu", feature = "tokenizer"))]
mod named;
#[cfg(feature = "bench")]
mod options;
#[cfg(feature = "tokenizer")]
mod tokenizer;

use wasm_bindgen::prelude::*;

// Single-threaded wasm (no `atomics`): Talc's dynamic allocator grows memory as dlmalloc does.
#[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

#[cfg(feature = "bench")]
pub use bench::BenchRun;
#[cfg(any(feature = "gpu", feature = "cpu"))]
pub use engine::{JsEngine, JsEngineLoader};
#[cfg(feature = "exchange")]
pub use exchange::JsExchange;

/// Sets the panic hook once, when the module is instantiated.
#[wasm_bindgen(start)]
pub fn start() {
    #[cfg(any(feature = "gpu", feature = "cpu"))]
    engine::set_panic_hook();
    #[cfg(not(any(feature = "gpu", feature = "cpu")))]
    console_error_panic_hook::set_once();
}

/// The crate version.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

#[cfg(feature = "bench")]
/// The API names `bench` and `Exchange` accept.
#[wasm_bindgen]
pub fn apis() -> Vec<String> {
    tpsmeter_core::Api::ALL
        .iter()
        .map(|a| a.name().to_string())
        .collect()
}

#[cfg(feature = "bench")]
/// `url` without credentials: no `user:pass@`, no query parameter whose name looks like a
/// credential (`key`, `sig`, `*_token`, ...), no fragment; the one redactor the CLI, the
/// package and the page use for a URL shown in a message, a report or a link.
#[wasm_bindgen(js_name = redactUrl)]
pub fn redact_url(url: &str) -> String {
    tpsmeter_core::redact::redact_url(url)
}

#[cfg(feature = "bench")]
/// Checks that `report` is a report of the schema version this build writes: it must
/// read back into the Rust types the schema is generated from. Throws an `Error` naming
/// the first field that does not fit.
#[wasm_bindgen(js_name = validateReport)]
pub fn validate_report(report: JsValue) -> Result<(), JsError> {
    let text = js_sys::JSON::stringify(&report)
        .map_err(|_| JsError::new("the report cannot be turned into JSON"))?;
    let text = String::from(text);
    tpsmeter_core::report::Report::from_json(&text)
        .map(|_| ())
        .map_err(|e| JsError::new(&e.to_string()))
}

#[cfg(feature = "bench")]
/// `records` (a report's `requests`) as the CSV `tpsmeter bench --csv` writes: the header
/// row and one row per request. Throws naming the first field that does not fit.
#[wasm_bindgen(js_name = recordsToCsv)]
pub fn records_to_csv(records: JsValue) -> Result<String, JsError> {
    let text = js_sys::JSON::stringify(&records)
        .map_err(|_| JsError::new("the records cannot be turned into JSON"))?;
    let records: Vec<tpsmeter_core::report::RequestRecord> =
        serde_json::from_str(&String::from(text))
            .map_err(|e| JsError::new(&format!("records: {e}")))?;
    Ok(tpsmeter_core::report::csv::to_csv(&records))
}

#[cfg(feature = "bench")]
/// `header` and the `cells` of its rows, row after row (`header.length` cells each), written
/// as `recordsToCsv` writes its CSV (the same quoting and line ends): a CSV the page
/// imported, exported again. Flat strings cross the boundary without serde.
#[wasm_bindgen(js_name = csvOfRows)]
pub fn csv_of_rows(header: Vec<String>, cells: Vec<String>) -> Result<String, JsError> {
    let width = header.len().max(1);
    if !cells.len().is_multiple_of(width) {
        return Err(JsError::new(&format!(
            "{} cells do not make rows of {width}",
            cells.len()
        )));
    }
    Ok(tpsmeter_core::report::csv::write_table(
        header,
        cells.chunks(width).map(|row| row.iter()),
    ))
}

#[cfg(feature = "bench")]
/// The CSV's columns, in order (its header row).
#[wasm_bindgen(js_name = csvColumns)]
pub fn csv_columns() -> Vec<String> {
    tpsmeter_core::report::csv::COLUMNS
        .iter()
        .map(|c| c.to_string())
        .collect()
}
