//! [`OptionValue`]: an option's value as the browser hands it in, whatever holds it (a
//! `serde_json::Value` natively and in tests, a `JsValue` in the wasm), so the kinds of
//! [`super::field`] are checked in one place without the wasm build converting every option
//! set into JSON first.

use serde_json::Value;

/// Read access to a JSON-like value.
pub trait OptionValue: Sized {
    fn number(&self) -> Option<f64>;
    fn text(&self) -> Option<String>;
    fn boolean(&self) -> Option<bool>;
    fn is_null(&self) -> bool;
    /// The items of an array.
    fn items(&self) -> Option<Vec<Self>>;
    /// The entries of a plain object (not an array, not null).
    fn entries(&self) -> Option<Vec<(String, Self)>>;

    /// How an error message shows the value: strings quoted and cut, arrays listed, objects
    /// named.
    fn describe(&self) -> String {
        if let Some(s) = self.text() {
            let cut = if s.chars().count() > 40 {
                format!("{}…", s.chars().take(40).collect::<String>())
            } else {
                s
            };
            return format!("\"{cut}\"");
        }
        if let Some(n) = self.number() {
            return n.to_string();
        }
        if let Some(b) = self.boolean() {
            return b.to_string();
        }
        if let Some(items) = self.items() {
            let shown: Vec<String> = items.iter().map(OptionValue::describe).collect();
            return format!("[{}]", shown.join(", "));
        }
        if self.is_null() {
            return "null".into();
        }
        "an object".into()
    }
}

impl OptionValue for Value {
    fn number(&self) -> Option<f64> {
        self.as_f64()
    }
    fn text(&self) -> Option<String> {
        self.as_str().map(str::to_owned)
    }
    fn boolean(&self) -> Option<bool> {
        self.as_bool()
    }
    fn is_null(&self) -> bool {
        Value::is_null(self)
    }
    fn items(&self) -> Option<Vec<Value>> {
        self.as_array().cloned()
    }
    fn entries(&self) -> Option<Vec<(String, Value)>> {
        self.as_object()
            .map(|o| o.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
    }
}
