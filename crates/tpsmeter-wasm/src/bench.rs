//! `BenchRun` for JavaScript: the core's load driver, the request every run sends, and the
//! records and report, for the page's `fetch` loop to drive.

use std::collections::HashMap;
use std::rc::Rc;

use serde::Serialize;
use tpsmeter_core::drive::{Action, LoadDriver, RecordExtras, Ticket};
use tpsmeter_core::report::{Environment, Report, Warning};
use tpsmeter_core::request::{HeaderValue, Redactor, RequestPlan, Secret};
use tpsmeter_core::spec::Field;
use tpsmeter_core::tokens::TokenCounter;
use tpsmeter_core::{BenchOptions, PromptPlan};
use wasm_bindgen::prelude::*;

use crate::convert::{from_js, to_js};
use crate::counter::JsCounter;
use crate::exchange::JsExchange;

/// Cap on an API key handed in by the page: real keys are well under 1 KiB.
const MAX_API_KEY_BYTES: usize = 8 * 1024;
/// Cap on the warnings a page can add to a report.
const MAX_WARNINGS: usize = 64;

/// One benchmark run in the browser (see the crate README for the loop that drives it).
#[wasm_bindgen]
#[derive(Debug)]
pub struct BenchRun {
    options: BenchOptions,
    driver: LoadDriver,
    /// Every request's URL and headers, and each one's body (its own prompt).
    plan: RequestPlan,
    prompt_chars: u64,
    /// Tickets started and not yet completed, each with the bytes of answer its request
    /// keeps (known once its body is built; see [`BenchRun::body`]).
    tickets: HashMap<u64, (Ticket, Option<usize>)>,
}

/// The request as `fetch` takes it. Holds the key header when a key was given.
#[derive(Serialize)]
struct JsRequest<'a> {
    method: &'a str,
    url: &'a str,
    headers: Vec<(&'a str, &'a str)>,
    body: &'a str,
}

#[wasm_bindgen]
impl BenchRun {
    /// A run for `options` (the CLI's options in camelCase, plus `apiKey`). Throws an
    /// `Error` naming the first invalid option; the message never contains the key.
    /// `count`, when the run has a tokenizer (`options.tokenizer` names it), is
    /// `(text) => number`: its token count of a text without special tokens.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue, count: Option<js_sys::Function>) -> Result<BenchRun, JsError> {
        let (options, api_key) = split_key(options)?;
        // `dataset` (the package has read it: `{ name, bytes }`) is no option of the core's.
        let dataset = crate::dataset::take(&options)?;
        // Options first: their errors name the option, whatever the request would need.
        let given: &[Field] = if dataset.is_some() {
            &[Field::Dataset]
        } else {
            &[]
        };
        let options =
            crate::options::resolve(&options, given).map_err(|e| e.into_js(&JsValue::UNDEFINED))?;
        let spec = options
            .request_spec(api_key)
            .map_err(|e| JsError::new(&e.to_string()))?;
        let driver = LoadDriver::new(&options, Redactor::for_spec(&spec))
            .map_err(|e| JsError::new(&e.to_string()))?;
        // The run id of the prompts' marks when no seed fixes it (see `prompts`).
        let entropy = (js_sys::Math::random() * 2f64.powi(53)) as u64;
        let counter: Option<Rc<dyn TokenCounter>> = count.map(|f| {
            let name = options
                .tokenizer
                .clone()
                .unwrap_or_else(|| "tokenizer".into());
            Rc::new(JsCounter::new(f, name)) as Rc<dyn TokenCounter>
        });
        let mut prompts = PromptPlan::new(&options, None, entropy, counter.as_deref())
            .map_err(|e| JsError::new(&e.to_string()))?;
        if let Some(dataset) = dataset {
            prompts = prompts
                .with_dataset(dataset, &options, None)
                .map_err(|e| JsError::new(&e.to_string()))?;
        }
        let prompt_chars = spec.prompt_text().chars().count() as u64;
        let plan = RequestPlan::new(spec, prompts, counter, true)
            .map_err(|e| JsError::new(&e.to_string()))?
            .with_turns(options.turns);
        if std::str::from_utf8(&plan.template().body).is_err() {
            return Err(JsError::new("the request body is not UTF-8"));
        }
        Ok(BenchRun {
            prompt_chars,
            options,
            driver,
            plan,
            tickets: HashMap::new(),
        })
    }

    /// The request of the run: `{method, url, headers: [name, value][], body}`, the body
    /// request 0's (each request's own is [`BenchRun::body`]).
    pub fn request(&self) -> Result<JsValue, JsError> {
        let request = self.plan.template();
        let headers = request
            .headers
            .iter()
            .map(|(n, v)| {
                let v = match v {
                    HeaderValue::Plain(v) => v.as_str(),
                    HeaderValue::Sensitive(s) => s.expose(),
                };
                (n.as_str(), v)
            })
            .collect();
        to_js(&JsRequest {
            method: request.method,
            url: &request.url,
            headers,
            body: std::str::from_utf8(&request.body).unwrap_or_default(),
        })
    }

    /// The body of request `ticket`: its own prompt, marked (see `prompts` in the core);
    /// `undefined` when every request sends `request().body` (cache busting off). Call it
    /// once per ticket, before [`BenchRun::begin`]: in a multi-turn run it takes the
    /// conversation's next turn.
    pub fn body(&mut self, ticket: u32) -> Result<Option<String>, JsError> {
        let (t, keep) = self
            .tickets
            .get_mut(&u64::from(ticket))
            .ok_or_else(|| JsError::new(&format!("ticket {ticket} is not in flight")))?;
        let planned = self
            .plan
            .request_for(t)
            .map_err(|e| JsError::new(&e.to_string()))?;
        *keep = planned.keep_answer;
        planned
            .body
            .map(|b| {
                String::from_utf8(b).map_err(|_| JsError::new("the request body is not UTF-8"))
            })
            .transpose()
    }

    /// What to do at `now_ms`: `{kind: 'start' | 'sleep' | 'wait' | 'done', ...}`.
    pub fn next(&mut self, now_ms: f64) -> Result<JsValue, JsError> {
        let action = self
            .driver
            .next(now_ms)
            .map_err(|e| JsError::new(&e.to_string()))?;
        if let Action::Start(t) = action {
            if u32::try_from(t.id).is_err() {
                return Err(JsError::new("more than 2^32 requests in one run"));
            }
            // Until its body says otherwise, a request keeps what one with the run's output
            // cap keeps.
            self.tickets.insert(t.id, (t, self.plan.keep_answer(None)));
        }
        // The core's `Action` serializes as the page's loop reads it (`spec/ticket.rs`).
        to_js(&action)
    }

    /// The exchange of a started ticket, its request sent at `start_ms`. Tickets cross as
    /// JS numbers (`u32`): a run starts far fewer than 2³² requests (64 levels of at most
    /// `MAX_ARRIVALS`), and a `u64` would make them `bigint`s.
    pub fn begin(&self, ticket: u32, start_ms: f64) -> Result<JsExchange, JsError> {
        let ticket = u64::from(ticket);
        let Some((_, keep)) = self.tickets.get(&ticket) else {
            return Err(JsError::new(&format!("ticket {ticket} is not in flight")));
        };
        let mut exchange = JsExchange::for_api(self.options.api, start_ms);
        if let Some(cap) = *keep {
            // Re-counted at the end when the server sends no usage; sent back in the next
            // turn of a multi-turn run. At most `cap` bytes (see the core's `answer`): the
            // count runs on the page's thread, so its size is what bounds its time.
            exchange.inner.keep_answer(cap);
        }
        Ok(exchange)
    }

    /// Hands back the finished request of `ticket` (the exchange is consumed). Returns its
    /// record, shaped as the report's `requests[]`.
    pub fn complete(
        &mut self,
        ticket: u32,
        exchange: JsExchange,
        extras: JsValue,
    ) -> Result<JsValue, JsError> {
        let ticket = u64::from(ticket);
        let (t, _) = self
            .tickets
            .remove(&ticket)
            .ok_or_else(|| JsError::new(&format!("ticket {ticket} is not in flight")))?;
        // The transport's facts, as the core defines them (`spec/record_extras.rs`); the
        // fields the page has no say in are skipped by their serde attributes.
        let extras: RecordExtras = if extras.is_undefined() || extras.is_null() {
            RecordExtras::default()
        } else {
            from_js(extras, "invalid record extras")?
        };
        let inner = exchange.inner;
        let outcome = inner.into_outcome();
        let now = outcome.timeline.end_ms().unwrap_or(0.0);
        let output_tokens_counted = self
            .plan
            .count(&outcome)
            .map_err(|e| JsError::new(&e.to_string()))?;
        let turn = self.plan.finish(ticket, &outcome);
        let record = self.driver.complete(
            &t,
            outcome,
            RecordExtras {
                output_tokens_counted,
                turn,
                // Counted above, on the page's thread: the text is bounded.
                count_pending: false,
                ..extras
            },
            now,
        );
        to_js(record)
    }

    /// Starts nothing more; the page ends what is in flight and completes it.
    pub fn cancel(&mut self, _now_ms: f64) {
        self.driver.cancel();
    }

    /// Levels whose summary is final.
    #[wasm_bindgen(js_name = levelsDone)]
    pub fn levels_done(&self) -> usize {
        self.driver.level_reports().len()
    }

    /// Where the run stands: `{levelIndex, levels, warmup, started, completed, failed,
    /// inFlight, target}`.
    pub fn progress(&self) -> Result<JsValue, JsError> {
        let p = self.driver.progress();
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct JsProgress {
            level_index: usize,
            levels: usize,
            warmup: bool,
            started: u64,
            completed: u64,
            failed: u64,
            in_flight: u32,
            target: Option<u64>,
        }
        to_js(&JsProgress {
            level_index: p.level_index,
            levels: p.levels,
            warmup: p.warmup,
            started: p.started,
            completed: p.completed,
            failed: p.failed,
            in_flight: p.in_flight,
            target: p.target,
        })
    }

    /// The report (the CLI's `--json` schema). Call when nothing is in flight; a run that
    /// was cancelled still summarises the level it was in.
    pub fn report(&mut self, environment: JsValue, warnings: JsValue) -> Result<JsValue, JsError> {
        if !self.tickets.is_empty() {
            return Err(JsError::new(&format!(
                "{} requests are still in flight",
                self.tickets.len()
            )));
        }
        // Let the driver close the phase it is in (a cancelled run stops at `next`).
        self.driver.cancel();
        let _ = self
            .driver
            .next(f64::INFINITY)
            .map_err(|e| JsError::new(&e.to_string()))?;
        let environment: Environment = from_js(environment, "invalid environment")?;
        let mut warnings: Vec<Warning> = if warnings.is_undefined() || warnings.is_null() {
            Vec::new()
        } else {
            from_js(warnings, "invalid warnings")?
        };
        warnings.truncate(MAX_WARNINGS);
        // The plan's own (conversations cut short), after the page's.
        warnings.extend(self.plan.warnings());
        warnings.extend(self.driver.warnings());
        let mut environment = environment;
        environment.notes.insert(
            "http_versions".into(),
            self.driver.http_versions().join(","),
        );
        let prompt = match self.plan.prompts().dataset() {
            Some(dataset) => dataset.prompt_source(self.options.tokenizer.clone()),
            None => self.options.prompt_source(self.prompt_chars),
        };
        let config = self
            .options
            .run_config(prompt, self.plan.prompts())
            .map_err(|e| JsError::new(&e.to_string()))?;
        let (levels, requests) = (
            self.driver.level_reports().to_vec(),
            self.driver.records().to_vec(),
        );
        let mut report = Report::new(config, environment, levels, requests, warnings);
        // With find-max: the levels the search ran and its verdict.
        self.driver.annotate(&mut report);
        to_js(&report)
    }
}

/// Takes `apiKey` out of the options object (a shallow copy: the page's object is left as
/// it was) so the rest can be read strictly, and the key never reaches a message.
fn split_key(options: JsValue) -> Result<(JsValue, Option<Secret>), JsError> {
    if !options.is_object() {
        return Err(JsError::new("options must be an object"));
    }
    let copy = js_sys::Object::assign(&js_sys::Object::new(), options.unchecked_ref());
    let name = JsValue::from_str("apiKey");
    let key = js_sys::Reflect::get(&copy, &name).unwrap_or(JsValue::UNDEFINED);
    let _ = js_sys::Reflect::delete_property(&copy, &name);
    let key = if key.is_undefined() || key.is_null() {
        None
    } else {
        let Some(k) = key.as_string() else {
            return Err(JsError::new("apiKey must be a string"));
        };
        let k = k.trim();
        if k.is_empty() {
            None
        } else if k.len() > MAX_API_KEY_BYTES {
            return Err(JsError::new("apiKey is over 8 KiB"));
        } else {
            Some(Secret::new(k))
        }
    };
    Ok((copy.into(), key))
}
