//! `bench()`'s options read by the core's run spec: the one place the browser's options are
//! checked (the package keeps only what exists in JavaScript alone: callbacks, the render
//! target, the signal, the engine). `checkOptions` lets the package and the benchmark page
//! refuse a run before anything is fetched, with the CLI's sentence in their own names.
//!
//! The values are read where they are (a `JsValue` through [`OptionValue`]), not turned
//! into JSON first: serde_json's `Value` machinery would add ~20 KB to the module.

use tpsmeter_core::BenchOptions;
use tpsmeter_core::spec::{Field, OptionError, OptionValue, is_core, read_given};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

/// A browser value, read as the run spec reads option values.
struct Js(JsValue);

impl OptionValue for Js {
    fn number(&self) -> Option<f64> {
        self.0.as_f64()
    }
    fn text(&self) -> Option<String> {
        self.0.as_string()
    }
    fn boolean(&self) -> Option<bool> {
        self.0.as_bool()
    }
    fn is_null(&self) -> bool {
        self.0.is_null() || self.0.is_undefined()
    }
    fn items(&self) -> Option<Vec<Js>> {
        js_sys::Array::is_array(&self.0).then(|| {
            self.0
                .unchecked_ref::<js_sys::Array>()
                .iter()
                .map(Js)
                .collect()
        })
    }
    fn entries(&self) -> Option<Vec<(String, Js)>> {
        let plain = self.0.is_object() && !js_sys::Array::is_array(&self.0);
        plain.then(|| entries(&self.0))
    }
}

/// An object's own enumerable entries whose value is not `undefined` (an option left out).
fn entries(object: &JsValue) -> Vec<(String, Js)> {
    js_sys::Object::entries(object.unchecked_ref())
        .iter()
        .filter_map(|pair| {
            let pair: js_sys::Array = pair.unchecked_into();
            let value = pair.get(1);
            (!value.is_undefined())
                .then(|| (pair.get(0).as_string().unwrap_or_default(), Js(value)))
        })
        .collect()
}

/// Why options were refused.
pub enum Refused {
    Option(OptionError),
    Other(String),
}

/// Reads `options` (a plain object) into the core's options, every name, kind and rule
/// checked; `extra`: options given outside the object (a dataset taken out of it).
pub fn resolve(options: &JsValue, extra: &[Field]) -> Result<BenchOptions, Refused> {
    let entries = entries(options);
    let mut given = read_given(&entries).map_err(Refused::Option)?;
    given.extend(extra.iter().copied());
    // What the core's options read: not the key, a dataset or a browser object; one level
    // given as a number is a list of one; `findMax: true` is the default limits, `false` no
    // search.
    let core = js_sys::Object::new();
    for (name, Js(value)) in entries {
        let Some(field) = Field::from_key(&name) else {
            continue;
        };
        if !is_core(field) {
            continue;
        }
        let value = match field {
            Field::Concurrency | Field::Rate if value.as_f64().is_some() => {
                js_sys::Array::of1(&value).into()
            }
            Field::FindMax if value.as_bool() == Some(false) => continue,
            Field::FindMax if value.as_bool() == Some(true) => js_sys::Object::new().into(),
            _ => value,
        };
        js_sys::Reflect::set(&core, &JsValue::from_str(&name), &value)
            .map_err(|_| Refused::Other("options cannot be read".into()))?;
    }
    let options: BenchOptions = serde_wasm_bindgen::from_value(core.into())
        .map_err(|e| Refused::Other(format!("invalid options: {e}")))?;
    options.resolve(&given).map_err(Refused::Option)
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
