//! The requests of a run: one URL and set of headers, and a body per request, each with its
//! own prompt (see [`crate::prompt_plan`]).

use std::cell::RefCell;
use std::rc::Rc;

use crate::conversations::{Conversations, Turn};
use crate::drive::Ticket;
use crate::error::Result;
use crate::exchange::Outcome;
use crate::prompt_plan::{PromptPlan, RequestInput};
use crate::tokens::TokenCounter;

use super::{HttpRequest, RequestSpec, build_browser_request, build_request};

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

    /// The body of `ticket`'s request: [`RequestPlan::body`], or in a multi-turn run its
    /// conversation so far and a new user message.
    pub fn body_for(&self, ticket: &Ticket) -> Result<Option<Vec<u8>>> {
        let Some(conversations) = &self.conversations else {
            return self.body(ticket.id);
        };
        let counter = self.counter();
        let (messages, _) = conversations.borrow_mut().begin(
            ticket,
            |id| Ok(self.prompts.input(id, counter)?.messages),
            |id, turn| self.prompts.follow_up(id, turn),
        )?;
        let input = RequestInput {
            messages,
            max_tokens: None,
            system: None,
        };
        Ok(Some(
            build(&with_input(&self.spec, input), self.browser)?.body,
        ))
    }

    /// What `ticket`'s finished request gives its record: the run tokenizer's count of the
    /// answer where the server reported no output usage, and in a multi-turn run its turn
    /// (a successful answer goes on in its conversation; a failure ends the conversation).
    pub fn finish(&self, ticket: u64, outcome: &Outcome) -> Result<(Option<u64>, Option<Turn>)> {
        let usage = outcome.timeline.usage().and_then(|u| u.output_tokens);
        let counted = match (self.counter(), &outcome.answer, usage) {
            (Some(counter), Some(answer), None) => Some(u64::from(counter.count(answer)?)),
            _ => None,
        };
        let turn = self.conversations.as_ref().and_then(|conversations| {
            let ok = outcome.failure.is_none() && outcome.timeline.stream_error().is_none();
            let turn = conversations.borrow().turn_of(ticket);
            conversations
                .borrow_mut()
                .end(ticket, outcome.answer.as_deref().filter(|_| ok));
            turn
        });
        Ok((counted, turn))
    }

    /// Whether answers must be kept (multi-turn runs send them back).
    pub fn needs_answers(&self) -> bool {
        self.conversations.is_some() || self.counter.is_some()
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
    use crate::options::BenchOptions;
    use crate::prompt_plan::CacheBust;

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
}
