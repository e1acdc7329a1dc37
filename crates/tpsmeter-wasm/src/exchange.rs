//! `Exchange` for JavaScript: one streamed response, fed the reads the page stamped.

use tpsmeter_core::paint::{Frame, Ready};
use tpsmeter_core::protocol::Decoder;
use tpsmeter_core::quoted::Quoted;
use tpsmeter_core::report::{ErrorClass, RequestRecord};
use tpsmeter_core::{Api, Exchange, Failure, StreamEvent};
use wasm_bindgen::prelude::*;

/// Cap on a failure message coming from the page (it may quote a browser error).
const MAX_MESSAGE_CHARS: usize = 1000;

/// One streamed response: stream parser plus timeline (see `tpsmeter_core::exchange`).
#[wasm_bindgen(js_name = Exchange)]
#[derive(Debug)]
pub struct JsExchange {
    pub(crate) inner: Exchange,
    api: Api,
}

#[wasm_bindgen(js_class = Exchange)]
impl JsExchange {
    /// An exchange for a request of `api` sent at `start_ms` (`performance.now()`).
    #[wasm_bindgen(constructor)]
    pub fn new(api: &str, start_ms: f64) -> Result<JsExchange, JsError> {
        let api = Api::from_name(api).ok_or_else(|| {
            let shown: String = api.chars().take(40).collect();
            JsError::new(&format!("unknown api {}", Quoted(&shown)))
        })?;
        let decoder = decoder(api).ok_or_else(|| {
            JsError::new(&format!(
                "api {} is not decoded by this build of the parser (each of the meter's builds carries one wire family)",
                Quoted(api.name())
            ))
        })?;
        Ok(JsExchange {
            inner: Exchange::with_decoder(decoder, start_ms),
            api,
        })
    }

    /// The response headers arrived.
    pub fn response(&mut self, _t_ms: f64, status: u16, retry_after: Option<String>) {
        self.inner.on_response(status, retry_after.as_deref());
    }

    /// One body read stamped `t_ms`. Returns the answer text it carried (content and
    /// tool-call arguments: the characters the paint metrics count), `""` when none.
    pub fn bytes(&mut self, t_ms: f64, chunk: &[u8]) -> String {
        let mut text = String::new();
        for event in self.inner.on_bytes(t_ms, chunk) {
            match event {
                StreamEvent::ContentDelta { text: t } => text.push_str(t),
                StreamEvent::ToolCallDelta { arguments, .. } => text.push_str(arguments),
                _ => {}
            }
        }
        text
    }

    /// The request has ended: stop reading.
    #[wasm_bindgen(getter)]
    pub fn ended(&self) -> bool {
        self.inner.is_ended()
    }

    /// The request failed (it may still be draining nothing: `ended` is true too).
    #[wasm_bindgen(getter)]
    pub fn failed(&self) -> bool {
        self.inner.failure().is_some()
    }

    /// The body ended at `t_ms`.
    pub fn end(&mut self, t_ms: f64) {
        self.inner.on_body_end(t_ms);
    }

    /// A read of a non-2xx body (kept as a capped excerpt).
    #[wasm_bindgen(js_name = errorBody)]
    pub fn error_body(&mut self, t_ms: f64, chunk: &[u8]) {
        self.inner.on_bytes(t_ms, chunk);
    }

    /// A failure the page classified: `timeout_first_byte`, `stall`, `connect`,
    /// `connect_refused`, `dns`, `cors`, `redirect`, `cancelled` or `other`. A `redirect`
    /// (fetch's `opaqueredirect`, which hides status and target) gets the core's message.
    pub fn fail(&mut self, t_ms: f64, error_class: &str, message: &str) -> Result<(), JsError> {
        let class = ErrorClass::from_name(error_class)
            .ok_or_else(|| JsError::new("unknown error class"))?;
        let message: String = message.chars().take(MAX_MESSAGE_CHARS).collect();
        let failure = match class {
            ErrorClass::Cancelled => Failure::Cancelled,
            ErrorClass::Redirect => Failure::redirect(None, None),
            ErrorClass::TimeoutFirstByte | ErrorClass::Stall if self.inner.started() => {
                // The page's timer fired: after the first byte it is a stall whatever it
                // was armed as.
                Failure::Reported {
                    class: ErrorClass::Stall,
                    message,
                }
            }
            class => Failure::Reported { class, message },
        };
        // A read that broke after the stream started is a cut stream.
        if matches!(class, ErrorClass::Connect | ErrorClass::Other) {
            self.inner.on_read_error(t_ms, failure);
        } else {
            self.inner.fail(t_ms, failure);
        }
        Ok(())
    }

    /// Already-decoded answer text the app received at `t_ms` (the meter's `chunk(text)`):
    /// measured as a read of the exchange's API carrying that text, with no wire to parse.
    pub fn text(&mut self, t_ms: f64, text: &str) {
        self.inner.on_text(t_ms, text);
    }

    /// A stream fed with `text` ended at `t_ms`, complete.
    #[wasm_bindgen(js_name = textEnd)]
    pub fn text_end(&mut self, t_ms: f64) {
        self.inner.on_text_end(t_ms);
    }

    /// The frames that showed the answer (`raf`: each frame's `requestAnimationFrame` time;
    /// `shown`: when it reached the screen, the end of a long animation frame spanning it),
    /// with `ready[i]`: when the i-th piece of text `bytes` returned was in the DOM
    /// (`Infinity`: never). Records which frame painted how many characters.
    #[wasm_bindgen(js_name = paintFrames)]
    pub fn paint_frames(&mut self, ready: &[f64], raf: &[f64], shown: &[f64]) {
        self.inner
            .on_frames(Ready::PerChunk(ready), &frames(raf, shown));
    }

    /// As `paintFrames`, with the stamps of the app's DOM updates instead of a time per
    /// piece of text (the real-user meter): text is in the DOM from the first update at or
    /// after its arrival.
    #[wasm_bindgen(js_name = paintFramesAfterUpdates)]
    pub fn paint_frames_after_updates(&mut self, updates: &[f64], raf: &[f64], shown: &[f64]) {
        self.inner
            .on_frames(Ready::Updates(updates), &frames(raf, shown));
    }

    /// Records the negotiated HTTP version (`nextHopProtocol`).
    #[wasm_bindgen(js_name = httpVersion)]
    pub fn http_version(&mut self, version: &str) {
        self.inner.set_http_version(version);
    }

    /// The request's record as it stands, as JSON text (standalone use: the real-user
    /// meter, which `JSON.parse`s it): an exchange still open is finished at `now_ms`, or at
    /// its last stamp when omitted. Text rather than a JS object because serde_json's
    /// writer is far smaller than serde-wasm-bindgen's object builder, and this build is the
    /// one apps load on their users' pages.
    pub fn record(&self, now_ms: Option<f64>) -> Result<String, JsError> {
        // An ended exchange keeps its end whatever `now` is given.
        let now = now_ms.filter(|n| n.is_finite());
        let outcome = self
            .inner
            .outcome(now.unwrap_or_else(|| self.inner.timeline().last_stamp_ms()));
        let error = outcome.failure.as_ref().map(|f| f.to_record());
        let mut record = RequestRecord::from_timeline(
            0,
            tpsmeter_core::load::LoadLevel::Concurrency(1),
            false,
            &outcome.timeline,
            outcome.http_status,
            error,
            true,
        );
        record.http_version = outcome.http_version;
        // Writing our own record fails only if memory runs out; serde_json's message table
        // would cost this build 1 KB for that.
        serde_json::to_string(&record).map_err(|_| JsError::new("the record could not be written"))
    }

    /// The API this exchange decodes.
    #[wasm_bindgen(getter)]
    pub fn api(&self) -> String {
        self.api.name().to_string()
    }
}

#[cfg(feature = "bench")]
impl JsExchange {
    pub(crate) fn for_api(api: Api, start_ms: f64) -> JsExchange {
        JsExchange {
            inner: Exchange::new(api, start_ms),
            api,
        }
    }
}

/// The decoder for `api`: every API's in the benchmark build.
#[cfg(feature = "bench")]
fn decoder(api: Api) -> Option<Decoder> {
    Some(Decoder::new(api))
}

/// The decoder for `api` among the wire families this build links (its `meter-*` features),
/// `None` for the others: a build of the real-user meter links one family's adapter, the
/// largest part of the module (measured in `tests/browser/bench/meter.mjs`).
#[cfg(not(feature = "bench"))]
fn decoder(api: Api) -> Option<Decoder> {
    let linked: &[fn(Api) -> Option<Decoder>] = &[
        #[cfg(feature = "meter-openai-chat")]
        Decoder::openai_chat,
        #[cfg(feature = "meter-openai-completions")]
        Decoder::openai_completions,
        #[cfg(feature = "meter-openai-responses")]
        Decoder::openai_responses,
        #[cfg(feature = "meter-anthropic")]
        Decoder::anthropic,
        #[cfg(feature = "meter-gemini")]
        Decoder::gemini,
        #[cfg(feature = "meter-ollama")]
        Decoder::ollama,
        #[cfg(feature = "meter-vercel-ui")]
        Decoder::vercel_ui,
    ];
    linked.iter().find_map(|make| make(api))
}

/// Frames from their rAF times and shown times (a missing shown time is the rAF time).
fn frames(raf: &[f64], shown: &[f64]) -> Vec<Frame> {
    raf.iter()
        .enumerate()
        .map(|(i, &raf_ms)| Frame {
            raf_ms,
            shown_ms: shown.get(i).copied().unwrap_or(raf_ms),
        })
        .collect()
}
