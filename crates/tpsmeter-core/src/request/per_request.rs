//! The requests of a run: one URL and set of headers, and a body per request, each with its
//! own prompt (see [`crate::prompts`]).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::answer::{CountFailures, KeptAnswer, answer_cap, answer_to_count, count_answer};
use crate::conversations::{Conversations, MAX_CONVERSATION_BYTES, Turn};
use crate::error::Result;
use crate::exchange::Outcome;
use crate::prompts::{PromptPlan, RequestInput};
use crate::report::Warning;
use crate::spec::Ticket;
use crate::tokens::TokenCounter;

use super::{HttpRequest, RequestSpec, build_browser_request, build_request};

/// One request as the plan makes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedRequest {
    /// Its body; `None` when it sends the template's (every request sends the same).
    pub body: Option<Vec<u8>>,
    /// How many bytes of its answer to keep ([`crate::exchange::Exchange::keep_answer`]);
    /// `None` when no later step needs the answer.
    pub keep_answer: Option<usize>,
}

/// Builds each request of a run from one spec and the run's prompts.
#[derive(Debug, Clone)]
pub struct RequestPlan {
    /// The spec less its prompt (each request's comes from `prompts`): cloning it per
    /// request then copies no prompt text that is thrown away.
    spec: RequestSpec,
    prompts: PromptPlan,
    /// The run's tokenizer, which cuts synthesised prompts to their exact lengths.
    counter: Option<Rc<dyn TokenCounter>>,
    browser: bool,
    /// Multi-turn runs: the conversations in progress.
    conversations: Option<RefCell<Conversations>>,
    /// Answers that ran past what their requests kept (see [`crate::answer`]).
    answers_cut: Cell<u64>,
    /// Answers the tokenizer could not count.
    count_failures: RefCell<CountFailures>,
    /// Request 0, whose URL and headers every request shares.
    template: HttpRequest,
}

impl RequestPlan {
    /// The plan for `spec` (its prompt is replaced by each request's own); `browser` adds
    /// what a page must send ([`build_browser_request`]); `counter` is the tokenizer the
    /// prompts were planned with.
    pub fn new(
        spec: RequestSpec,
        prompts: PromptPlan,
        counter: Option<Rc<dyn TokenCounter>>,
        browser: bool,
    ) -> Result<RequestPlan> {
        let spec = RequestSpec {
            messages: Vec::new(),
            ..spec
        };
        let template = build(
            &with_input(&spec, prompts.input(0, counter.as_deref())?),
            browser,
        )?;
        Ok(RequestPlan {
            spec,
            prompts,
            counter,
            browser,
            conversations: None,
            answers_cut: Cell::new(0),
            count_failures: RefCell::default(),
            template,
        })
    }

    /// Each virtual user holds a conversation of `turns` turns (see
    /// [`crate::conversations`]); 1 or less: single requests.
    pub fn with_turns(mut self, turns: Option<u32>) -> RequestPlan {
        self.conversations = turns
            .filter(|&t| t > 1)
            .map(|t| RefCell::new(Conversations::new(t)));
        self
    }

    /// What `ticket`'s request sends ([`RequestPlan::body`], or in a multi-turn run its
    /// conversation so far and a new user message), and how much of its answer to keep.
    pub fn request_for(&self, ticket: &Ticket) -> Result<PlannedRequest> {
        let Some(conversations) = &self.conversations else {
            if self.prompts.is_constant() {
                return Ok(PlannedRequest {
                    body: None,
                    keep_answer: self.keep_answer(None),
                });
            }
            let input = self.prompts.input(ticket.id, self.counter())?;
            return self.planned(input);
        };
        let counter = self.counter();
        let (input, _) = conversations.borrow_mut().begin(
            ticket,
            |id| self.prompts.input(id, counter),
            |id, turn| self.prompts.follow_up(id, turn),
        )?;
        self.planned(input)
    }

    fn planned(&self, input: RequestInput) -> Result<PlannedRequest> {
        let keep_answer = self.keep_answer(input.max_tokens);
        let body = build(&with_input(&self.spec, input), self.browser)?.body;
        Ok(PlannedRequest {
            body: Some(body),
            keep_answer,
        })
    }

    /// How much answer a request with its own output cap `max_tokens` (else the run's)
    /// keeps: [`answer_cap`] of it when a later step needs the text (a next turn, or a
    /// count when the server sends no usage), else nothing.
    pub fn keep_answer(&self, max_tokens: Option<u32>) -> Option<usize> {
        self.needs_answers()
            .then(|| answer_cap(max_tokens.unwrap_or(self.spec.max_tokens)))
    }

    /// The run tokenizer's count of `outcome`'s answer where the server reported no output
    /// usage ([`answer_to_count`], [`count_answer`]); `None` without a tokenizer. The CLI
    /// counts on another thread instead, with the same functions.
    pub fn count(&self, outcome: &Outcome) -> Result<Option<u64>> {
        match (self.counter(), answer_to_count(outcome)) {
            (Some(counter), Some(answer)) => match count_answer(counter, answer) {
                Ok(n) => Ok(Some(n)),
                // A count that failed (over its time budget) leaves the stream's estimate;
                // `warnings` says so, and the run goes on.
                Err(e) => {
                    self.count_failures.borrow_mut().note(&e.to_string());
                    Ok(None)
                }
            },
            _ => Ok(None),
        }
    }

    /// What `ticket`'s finished request gives its record in a multi-turn run: its turn (a
    /// successful answer goes on in its conversation; a failure ends the conversation).
    /// Call it once per request: it also counts the answers that ran past their cap.
    pub fn finish(&self, ticket: u64, outcome: &Outcome) -> Option<Turn> {
        if outcome.answer.as_ref().is_some_and(KeptAnswer::is_cut) {
            self.answers_cut.set(self.answers_cut.get() + 1);
        }
        self.conversations.as_ref().and_then(|conversations| {
            let ok = outcome.failure.is_none() && outcome.timeline.stream_error().is_none();
            let turn = conversations.borrow().turn_of(ticket);
            conversations
                .borrow_mut()
                .end(ticket, outcome.answer.as_ref().filter(|_| ok));
            turn
        })
    }

    /// Whether answers must be kept (multi-turn runs send them back; a tokenizer counts
    /// them when the server sends no usage).
    pub fn needs_answers(&self) -> bool {
        self.conversations.is_some() || self.counter.is_some()
    }

    /// What the report should say about what the plan saw: answers the tokenizer could not
    /// count, answers that ran past what their requests keep, and conversations cut short
    /// (see [`crate::conversations`]).
    pub fn warnings(&self) -> Vec<Warning> {
        let mut out: Vec<Warning> = self.count_failures.borrow().warning().into_iter().collect();
        let long = self.answers_cut.get();
        if long > 0 {
            out.push(Warning {
                code: "answers_cut".into(),
                message: format!(
                    "{long} answers ran past what the client keeps of an answer ({} bytes a \
                     token of max_tokens, {} to {} KiB): the server sent more than asked. \
                     Their tokenizer counts are scaled from the part kept, and later turns \
                     resend that part",
                    crate::answer::KEPT_BYTES_PER_TOKEN,
                    crate::answer::MIN_KEPT_ANSWER_BYTES >> 10,
                    crate::answer::MAX_KEPT_ANSWER_BYTES >> 10,
                ),
            });
        }
        let cut = self.conversations.as_ref().map_or(0, |c| c.borrow().cut());
        if cut > 0 {
            out.push(Warning {
                code: "conversations_cut".into(),
                message: format!(
                    "{cut} conversations ended before their last turn: they would have \
                     passed {} MiB, the most a conversation resends",
                    MAX_CONVERSATION_BYTES >> 20,
                ),
            });
        }
        out
    }

    /// The first request: the URL, headers and method of all of them.
    pub fn template(&self) -> &HttpRequest {
        &self.template
    }

    /// The body of request `index` (the driver's ticket id); `None` when every request sends
    /// the template's body (prompts not marked, one prompt).
    pub fn body(&self, index: u64) -> Result<Option<Vec<u8>>> {
        if self.prompts.is_constant() {
            return Ok(None);
        }
        let spec = with_input(&self.spec, self.prompts.input(index, self.counter())?);
        Ok(Some(build(&spec, self.browser)?.body))
    }

    pub fn prompts(&self) -> &PromptPlan {
        &self.prompts
    }

    /// The run's tokenizer, when it has one.
    pub fn counter(&self) -> Option<&dyn TokenCounter> {
        self.counter.as_deref()
    }
}

fn with_input(spec: &RequestSpec, input: RequestInput) -> RequestSpec {
    RequestSpec {
        messages: input.messages,
        max_tokens: input.max_tokens.unwrap_or(spec.max_tokens),
        system: input.system.or_else(|| spec.system.clone()),
        ..spec.clone()
    }
}

fn build(spec: &RequestSpec, browser: bool) -> Result<HttpRequest> {
    if browser {
        build_browser_request(spec)
    } else {
        build_request(spec)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::spec::BenchOptions;
    use crate::spec::CacheBust;

    fn plan(bust: CacheBust) -> RequestPlan {
        let options = BenchOptions {
            prompt: Some("Hello".into()),
            cache_bust: bust,
            seed: Some(1),
            ..crate::options::tests::options()
        };
        let prompts = PromptPlan::new(&options, None, 0, None).unwrap();
        RequestPlan::new(options.request_spec(None).unwrap(), prompts, None, false).unwrap()
    }

    #[test]
    fn each_body_carries_its_requests_mark() {
        let p = plan(CacheBust::Prefix);
        let body = |i| String::from_utf8(p.body(i).unwrap().unwrap()).unwrap();
        let mark = |i| p.prompts().mark(i);
        assert!(
            body(0).contains(&format!("{} Hello", mark(0))),
            "{}",
            body(0)
        );
        assert!(body(7).contains(&format!("{} Hello", mark(7))));
        assert_eq!(p.body(0).unwrap().unwrap(), p.template().body);
    }

    #[test]
    fn without_cache_busting_the_template_is_every_body() {
        let p = plan(CacheBust::Off);
        assert_eq!(p.body(3).unwrap(), None);
        assert!(String::from_utf8_lossy(&p.template().body).contains("\"Hello\""));
    }

    #[test]
    fn answers_are_kept_only_for_a_later_step_and_capped_by_the_requests_max_tokens() {
        let p = plan(CacheBust::Prefix);
        assert_eq!(p.keep_answer(None), None, "nothing needs the answer");
        let t = |id| Ticket {
            id,
            level_index: 0,
            level: crate::load::LoadLevel::Concurrency(1),
            warmup: false,
            scheduled_ms: None,
        };
        assert_eq!(p.request_for(&t(0)).unwrap().keep_answer, None);
        let p = p.with_turns(Some(2));
        assert_eq!(
            p.request_for(&t(1)).unwrap().keep_answer,
            Some(answer_cap(256))
        );
        assert_eq!(p.keep_answer(Some(8192)), Some(256 << 10));
    }
}
