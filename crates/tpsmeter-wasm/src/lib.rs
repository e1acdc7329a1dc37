//! The wasm-bindgen boundary of tpsmeter (see README.md for the JS-visible API).
//!
//! What it does: exposes `tpsmeter-core`'s request builders, stream parser, timeline, load
//! driver and report to JavaScript, so the browser measures with the same code as the CLI.
//!
//! What it does not do: any I/O. The npm package (`pkg/`) calls `fetch`, reads the body,
//! stamps each read with `performance.now()` before calling in here, and owns the timers.

use wasm_bindgen::prelude::*;

/// Sets the panic hook once, when the module is instantiated.
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
}

/// The crate version.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
