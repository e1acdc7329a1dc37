//! A [`TokenCounter`] the page hands in as a function: `(text) => number`. The tokenizer
//! itself lives in the engine's wasm (the `tokenizers` crate is too large for the benchmark
//! module), and a synchronous call through JavaScript joins the two.

use tpsmeter_core::CoreError;
use tpsmeter_core::tokens::TokenCounter;
use wasm_bindgen::JsValue;

/// Calls `count(text)` for each count.
#[derive(Debug)]
pub struct JsCounter {
    count: js_sys::Function,
    name: String,
}

impl JsCounter {
    pub fn new(count: js_sys::Function, name: String) -> JsCounter {
        JsCounter { count, name }
    }
}

impl TokenCounter for JsCounter {
    fn count(&self, text: &str) -> tpsmeter_core::Result<u32> {
        let bad = |reason: String| CoreError::InvalidSpec {
            what: "tokenizer",
            input: self.name.clone(),
            reason,
        };
        let n = self
            .count
            .call1(&JsValue::NULL, &JsValue::from_str(text))
            .map_err(|e| bad(format!("counting failed: {}", error_text(&e))))?
            .as_f64()
            .ok_or_else(|| bad("the count is not a number".into()))?;
        if !(n.is_finite() && n >= 0.0 && n <= f64::from(u32::MAX)) {
            return Err(bad(format!("the count {n} is not a token count")));
        }
        Ok(n as u32)
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// A thrown value's message (an `Error`'s), or its string form.
fn error_text(e: &JsValue) -> String {
    let message = js_sys::Reflect::get(e, &JsValue::from_str("message"))
        .ok()
        .and_then(|m| m.as_string());
    message
        .or_else(|| e.as_string())
        .unwrap_or_else(|| "an exception".into())
        .chars()
        .take(200)
        .collect()
}
