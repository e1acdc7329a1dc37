//! Values across the boundary: serde-wasm-bindgen in JSON-compatible mode (maps as plain
//! objects, `None` as `null`), so what JS receives is the JSON the CLI writes, field for
//! field.

use serde::Serialize;
use serde::de::DeserializeOwned;
use wasm_bindgen::prelude::*;

/// `value` as a plain JS value shaped like its JSON.
pub fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, JsError> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| JsError::new(&format!("cannot hand a value to JavaScript: {e}")))
}

/// A JS value read as `T`; `what` names it in the error.
pub fn from_js<T: DeserializeOwned>(value: JsValue, what: &str) -> Result<T, JsError> {
    serde_wasm_bindgen::from_value(value).map_err(|e| JsError::new(&format!("{what}: {e}")))
}
