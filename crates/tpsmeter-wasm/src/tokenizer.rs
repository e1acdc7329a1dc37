//! `TokenCounter` for the page: a model's tokenizer, from a GGUF's header or a
//! `tokenizer.json`, counting tokens for `bench()` (exact input lengths, output counts when
//! a server sends no usage). The same `tokenizers` code as the CLI's `--tokenizer`. Its own
//! build (the `tokenizer` feature, `tpsmeter_tokenizer`): the model floor's tokenizer
//! without an engine, so a benchmark with a tokenizer never downloads the GPU engine.

use std::cell::Cell;
use tpsmeter_model::ModelError;

use tpsmeter_model::tokenizer::{MAX_TOKENIZER_JSON_BYTES, Tokenizer, count_budget_ms};
use wasm_bindgen::prelude::*;

use crate::named::named;

fn model_err(e: ModelError) -> JsValue {
    named(e.kind(), &e.to_string())
}

/// A tokenizer that counts.
#[wasm_bindgen(js_name = TokenCounter)]
#[derive(Debug)]
pub struct JsTokenCounter {
    tokenizer: Tokenizer,
    /// Set once a count has gone over its time budget.
    too_slow: Cell<bool>,
}

#[wasm_bindgen(js_class = TokenCounter)]
impl JsTokenCounter {
    /// From a file's bytes: a GGUF (its header is enough: the bytes may stop after it) or a
    /// `tokenizer.json`. Throws a named error (`Truncated` when a GGUF's header goes on past
    /// the bytes given: hand in more; `UnsafeTokenizer` when a `tokenizer.json` has a regex
    /// that could pin the CPU; `LimitExceeded` over [`Self::max_json_bytes`]).
    #[wasm_bindgen(constructor)]
    pub fn new(bytes: &[u8]) -> Result<JsTokenCounter, JsValue> {
        let tokenizer = Tokenizer::from_file_bytes(bytes).map_err(|e| match e {
            ModelError::Truncated { .. } => named("Truncated", &e.to_string()),
            e => model_err(e),
        })?;
        Ok(JsTokenCounter {
            tokenizer,
            too_slow: Cell::new(false),
        })
    }

    /// The largest `tokenizer.json` accepted, in bytes (the CLI's cap too): the page stops
    /// reading a body past it.
    #[wasm_bindgen(js_name = maxJsonBytes)]
    pub fn max_json_bytes() -> u32 {
        u32::try_from(MAX_TOKENIZER_JSON_BYTES).unwrap_or(u32::MAX)
    }

    /// Tokens in `text`, without special tokens, within the CLI's time budget
    /// (`count_budget_ms`, on `Date.now()`): a count over it throws `LimitExceeded`, and
    /// so does every later one, at once, since the next would be as slow (the CLI does the
    /// same).
    pub fn count(&self, text: &str) -> Result<u32, JsValue> {
        if self.too_slow.get() {
            return Err(named(
                "LimitExceeded",
                "an earlier count went over its time budget, so this one was not tried",
            ));
        }
        let counted =
            self.tokenizer
                .count_within(text, count_budget_ms(text.len()), &mut js_sys::Date::now);
        if matches!(counted, Err(ModelError::CountTooSlow { .. })) {
            self.too_slow.set(true);
        }
        counted.map_err(model_err)
    }
}
