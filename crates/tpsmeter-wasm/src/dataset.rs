//! `bench({ dataset })` after the package has read it: `{ name, bytes }` in the options
//! object, taken out before the options' strict read and parsed by the core, as the CLI's
//! `--dataset` is.

use tpsmeter_core::dataset::{Dataset, MAX_DATASET_BYTES};
use wasm_bindgen::prelude::*;

/// Takes `dataset` (`{ name: string, bytes: Uint8Array }`) out of the options object, a
/// copy the caller owns, and parses it. `None` when the options have none.
pub fn take(options: &JsValue) -> Result<Option<Dataset>, JsError> {
    let key = JsValue::from_str("dataset");
    let value = js_sys::Reflect::get(options, &key).unwrap_or(JsValue::UNDEFINED);
    let _ = js_sys::Reflect::delete_property(options.unchecked_ref::<js_sys::Object>(), &key);
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    let field = |name: &str| js_sys::Reflect::get(&value, &JsValue::from_str(name)).ok();
    let name = field("name")
        .and_then(|n| n.as_string())
        .ok_or_else(|| JsError::new("dataset.name must be a string"))?;
    let bytes = field("bytes")
        .filter(|b| b.is_instance_of::<js_sys::Uint8Array>())
        .map(js_sys::Uint8Array::unchecked_from_js)
        .ok_or_else(|| JsError::new("dataset.bytes must be a Uint8Array"))?;
    // Checked before the copy into wasm memory.
    if f64::from(bytes.length()) > MAX_DATASET_BYTES as f64 {
        return Err(JsError::new(&format!(
            "dataset: the file is {} bytes, over the cap of {MAX_DATASET_BYTES} bytes",
            bytes.length()
        )));
    }
    Dataset::parse(&name, &bytes.to_vec())
        .map(Some)
        .map_err(|e| JsError::new(&e.to_string()))
}
