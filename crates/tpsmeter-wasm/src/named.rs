//! [`named`]: a JS `Error` whose `name` says what kind of failure it is. The engine's and the
//! tokenizer's exports return these rather than `JsError` (which is always named `Error`):
//! the page branches on the name (`InvalidModel`, `DeviceLost`, `OutOfMemory`,
//! `LimitExceeded`, ... from the crates' `kind()`; `InvalidRequest` and `InvalidState` from
//! the engine), and device loss must be told apart from a bad request.

use wasm_bindgen::JsValue;

/// The error `message`, named `name`.
pub(crate) fn named(name: &str, message: &str) -> JsValue {
    let e = js_sys::Error::new(message);
    e.set_name(name);
    e.into()
}
