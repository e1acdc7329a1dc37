//! `bench()`'s options read by the core's run spec: the one place the browser's options are
//! checked (the package keeps only what exists in JavaScript alone: callbacks, the render
//! target, the signal, the engine). `checkOptions` lets the package and the benchmark page
//! refuse a run before anything is fetched, with the CLI's sentence in their own names.

use tpsmeter_core::BenchOptions;
use tpsmeter_core::spec::{Field, Given, OptionError};
use wasm_bindgen::prelude::*;

/// Reads `options` (a plain object: no key, no dataset bytes) into the core's options and
/// the set of options given, every rule checked. Errors keep their field for the caller to
/// name.
pub fn resolve(options: &JsValue, extra: &[Field]) -> Result<BenchOptions, Refused> {
    let text = js_sys::JSON::stringify(options)
        .map_err(|_| Refused::Other("options cannot be turned into JSON".into()))?;
    let value: serde_json::Value = serde_json::from_str(&String::from(text))
        .map_err(|e| Refused::Other(format!("options: {e}")))?;
    let serde_json::Value::Object(map) = value else {
        return Err(Refused::Other("options must be an object".into()));
    };
    let (options, mut given): (BenchOptions, Given) =
        BenchOptions::from_json(map).map_err(Refused::Option)?;
    given.extend(extra.iter().copied());
    options.resolve(&given).map_err(Refused::Option)
}

/// Why options were refused.
pub enum Refused {
    Option(OptionError),
    Other(String),
}

impl Refused {
    /// The message, each option named by `names[key]` when the caller gave a name for it,
    /// else as `bench()` names it.
    pub fn into_js(self, names: &JsValue) -> JsError {
        match self {
            Refused::Option(e) => {
                let name = |f: Field| {
                    js_sys::Reflect::get(names, &JsValue::from_str(f.key()))
                        .ok()
                        .and_then(|v| v.as_string())
                        .unwrap_or_else(|| f.quoted_key())
                };
                JsError::new(&e.render(&name))
            }
            Refused::Other(message) => JsError::new(&message),
        }
    }
}

/// Checks `bench()`'s run settings as the run will (every name, kind and rule), throwing an
/// `Error` with the first problem. `names`, when given, maps option keys to the words the
/// caller's users know them by (a form's labels); other options are named as `bench()`
/// names them. `dataset` and `apiKey` only count as given; callbacks are ignored.
#[wasm_bindgen(js_name = checkOptions)]
pub fn check_options(options: JsValue, names: JsValue) -> Result<(), JsError> {
    if !options.is_object() {
        return Err(JsError::new("options must be an object"));
    }
    resolve(&options, &[])
        .map(|_| ())
        .map_err(|e| e.into_js(&names))
}
