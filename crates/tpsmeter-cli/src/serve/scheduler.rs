//! Continuous batching for `tpsmeter serve`: the model thread's loop, on the GPU model or the
//! CPU one (anything [`Batched`]).
//!
//! Each request gets a slot of the model's KV cache when one is free (arrival order; beyond
//! the slots it queues, and the wait is reported apart as `queue_ms`). Every turn of the loop
//! runs one engine step of at most `--step-tokens` tokens (chunked prefill, as vLLM schedules
//! it): first the next token of every running request, then with the budget left, chunks of
//! the unfinished prompts, oldest admitted first, as many as fit. So a burst of new requests
//! prefills together, several prompts in one step, and gets its first tokens within a few
//! steps of each other; the streams already flowing get a token every step meanwhile; and a
//! new request starts at the next step. Oldest first (not an equal share each) gives the
//! earliest of a burst its first token soonest without delaying the last one.
//!
//! A prompt with only its last token left to run (the slot held the rest: a repeated prompt,
//! a chat's next turn) runs that token as a decode token, so a step of such arrivals alone is
//! a plain decode step. A request leaves its slot the step it ends; a client that went away
//! ends its request at the next step it reaches (its channel is closed), before any more of
//! its prompt runs, freeing the slot at once.
//!
//! A request runs through the same [`Sequence`] rules as `Engine::generate`, and a sequence's
//! rows in a step do not depend on the other rows (see `tpsmeter_gpu::runtime::StepPart`), so
//! its tokens equal the same request run alone.

use std::collections::VecDeque;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tpsmeter_model::ModelError;

use tpsmeter_gpu::GpuError;
use tpsmeter_gpu::engine::{Batched, Prompts};
use tpsmeter_gpu::runtime::StepPart;
use tpsmeter_model::generate::{Sequence, StopReason, reusable_prefix};

use super::worker::{Event, Job, Summary};
use crate::run::RunFigures;

/// A request holding a slot.
struct Active<'e> {
    job: Job,
    seq: Sequence<'e>,
    prompt: Vec<u32>,
    /// Prompt tokens whose keys and values the slot holds (reused or run so far).
    filled: usize,
    /// The id sampled last, to run at the next decode step.
    next: Option<u32>,
    /// Seconds the request waited for a slot.
    queued_s: f64,
    /// Admission order: prompts run oldest first.
    order: u64,
}

/// The loop's state: the model, the queue and the slots.
pub struct Scheduler<'e, M> {
    prompts: &'e Prompts,
    model: &'e mut M,
    jobs: mpsc::Receiver<Job>,
    waiting: VecDeque<Job>,
    slots: Vec<Option<Active<'e>>>,
    epoch: Instant,
    admitted: u64,
    /// How long the loop waits for a new request after one ended, before the next step.
    join_window: Duration,
    /// Whether a request ended since the loop last waited for arrivals.
    ended: bool,
    /// Most tokens one step runs (`--step-tokens`).
    step_tokens: usize,
}

impl<'e, M: Batched> Scheduler<'e, M> {
    pub fn new(
        prompts: &'e Prompts,
        model: &'e mut M,
        jobs: mpsc::Receiver<Job>,
        join_window: Duration,
        step_tokens: usize,
    ) -> Self {
        let n = model.slots();
        Self {
            prompts,
            model,
            jobs,
            waiting: VecDeque::new(),
            slots: (0..n).map(|_| None).collect(),
            epoch: Instant::now(),
            admitted: 0,
            join_window,
            ended: false,
            step_tokens,
        }
    }

    fn now(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64()
    }

    /// Runs until the server drops its end of the job channel.
    pub fn run(mut self) {
        loop {
            let idle = self.slots.iter().all(Option::is_none) && self.waiting.is_empty();
            if idle {
                match self.jobs.recv() {
                    Ok(job) => self.waiting.push_back(job),
                    Err(_) => return,
                }
            }
            if self.ended && self.waiting.is_empty() && !self.join_window.is_zero() {
                // A request just ended while others run. A client in a loop (a chat, an
                // agent, a benchmark) sends its next request as soon as it has the answer,
                // a few ms from now: without this wait it arrives just after the next step
                // started and waits that whole step before its own, so its TTFT is two
                // steps where one will do. The running streams lose at most the window.
                match self.jobs.recv_timeout(self.join_window) {
                    Ok(job) => self.waiting.push_back(job),
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                }
            }
            self.ended = false;
            while let Ok(job) = self.jobs.try_recv() {
                self.waiting.push_back(job);
            }
            self.admit();
            if let Err(e) = self.step() {
                self.fail_all(&e);
            }
        }
    }

    /// Moves waiting requests into free slots, oldest first; a request whose client left is
    /// dropped, one whose prompt cannot run fails at once.
    fn admit(&mut self) {
        self.waiting.retain(|j| !j.events.is_closed());
        while !self.waiting.is_empty() {
            let free: Vec<usize> = (0..self.slots.len())
                .filter(|&s| self.slots[s].is_none())
                .collect();
            if free.is_empty() {
                return;
            }
            let Some(mut job) = self.waiting.pop_front() else {
                return;
            };
            let queued_s = job.arrived.elapsed().as_secs_f64();
            // Encoded and checked against the context by the server (`worker::encode_prompt`); the
            // model's own limits are checked again here, where one bad request can fail
            // alone, not inside a step, where an error fails every request in it.
            let prompt = std::mem::take(&mut job.prompt);
            let vocab = self
                .prompts
                .tokenizer()
                .vocab_size()
                .min(self.model.vocab_size());
            let bad = if prompt.is_empty() {
                Some(GpuError::from(ModelError::EmptyPrompt))
            } else if prompt.len() >= self.model.max_context() {
                Some(GpuError::from(ModelError::ContextFull {
                    position: prompt.len(),
                    limit: self.model.max_context(),
                }))
            } else {
                prompt
                    .iter()
                    .find(|&&t| t as usize >= vocab)
                    .map(|&token| GpuError::from(ModelError::TokenOutOfRange { token, vocab }))
            };
            if let Some(e) = bad {
                let _ = job.events.send(Event::Failed(e.to_string()));
                continue;
            }
            // The free slot that already holds the longest part of this prompt (a chat's
            // next turn, a benchmark's repeated prompt).
            let (slot, keep) = free
                .iter()
                .map(|&s| (s, reusable_prefix(self.model.slot_history(s), &prompt)))
                .max_by_key(|&(s, keep)| (keep, usize::MAX - s))
                .unwrap_or((free[0], 0));
            let start = self.now();
            let mut seq = match Sequence::new(
                self.prompts.tokenizer(),
                &job.params,
                prompt.len(),
                keep,
                start,
            ) {
                Ok(s) => s,
                Err(e) => {
                    let _ = job.events.send(Event::Failed(e.to_string()));
                    continue;
                }
            };
            if seq.end_early(job.events.is_closed()) {
                let (_, g) = seq.finish(self.now());
                let _ = job.events.send(Event::Done(summary(&g, queued_s)));
                continue;
            }
            self.slots[slot] = Some(Active {
                job,
                seq,
                prompt,
                filled: keep,
                next: None,
                queued_s,
                order: self.admitted,
            });
            self.admitted += 1;
        }
    }

    /// The part of `slot`'s prompt still to run, as `(from, n)`, while its first token is not
    /// sampled yet. A prompt the slot holds in full still runs its last token, to sample from it.
    fn prompt_left(&self, slot: usize) -> Option<(usize, usize)> {
        let a = self.slots[slot].as_ref()?;
        if a.next.is_some() || a.seq.is_done() {
            return None;
        }
        let rest = a.prompt.len() - a.filled;
        Some(if rest == 0 {
            (a.prompt.len() - 1, 1)
        } else {
            (a.filled, rest)
        })
    }

    /// Whether `slot`'s prompt has only its last token left to run, behind at least one held:
    /// that token runs as a decode token (one decode step for every new arrival of a repeated
    /// prompt or a chat's next turn).
    fn joins_decode(&self, slot: usize) -> bool {
        match (self.prompt_left(slot), self.slots[slot].as_ref()) {
            (Some((from, 1)), Some(a)) => from >= 1 && from + 1 == a.prompt.len(),
            _ => false,
        }
    }

    /// One engine step: the next token of every running request (and the last token of each
    /// prompt that has only that left), then chunks of the other prompts, oldest admitted
    /// first, within `step_tokens`. A request whose client left is ended before its prompt
    /// runs on.
    fn step(&mut self) -> tpsmeter_gpu::Result<()> {
        let mut decodes = Vec::new();
        let mut prompts = Vec::new();
        for s in 0..self.slots.len() {
            let Some(a) = self.slots[s].as_ref() else {
                continue;
            };
            if let Some(t) = a.next {
                decodes.push((s, t));
                continue;
            }
            if self.prompt_left(s).is_none() {
                continue;
            }
            if a.job.events.is_closed() {
                // Cancelled while its prompt runs (or waits to): the slot is free now.
                if let Some(a) = self.slots[s].as_mut() {
                    a.seq.cancel();
                }
                self.finish(s);
            } else if self.joins_decode(s) {
                let Some(a) = self.slots[s].as_mut() else {
                    continue;
                };
                let from = a.prompt.len() - 1;
                let token = a.prompt[from];
                let sampling = a.job.sampling;
                a.filled = a.prompt.len();
                self.model.rewind_slot(s, from, &sampling)?;
                decodes.push((s, token));
            } else {
                prompts.push((a.order, s));
            }
        }
        prompts.sort_unstable();
        // The decode tokens first: running streams never wait for a prompt. At least one
        // prompt token per step, so a burst progresses whatever the number of streams.
        let mut budget = self.step_tokens.saturating_sub(decodes.len()).max(1);
        let mut chunks = Vec::new();
        for &(_, s) in &prompts {
            if budget == 0 {
                break;
            }
            let (Some((from, left)), Some(a)) = (self.prompt_left(s), self.slots[s].as_ref())
            else {
                continue;
            };
            let n = left.min(budget);
            budget -= n;
            let last = from + n == a.prompt.len();
            chunks.push((
                s,
                a.prompt[from..from + n].to_vec(),
                from,
                a.job.sampling,
                last,
            ));
        }
        if decodes.is_empty() && chunks.is_empty() {
            return Ok(());
        }
        let mut parts: Vec<StepPart<'_>> = decodes
            .iter()
            .map(|&(slot, token)| StepPart::Decode { slot, token })
            .collect();
        parts.extend(
            chunks
                .iter()
                .map(|(slot, tokens, start, sampling, sample)| StepPart::Prompt {
                    slot: *slot,
                    tokens,
                    start: *start,
                    sampling,
                    sample: *sample,
                }),
        );
        // The ids come in the order of the parts that sample.
        let order: Vec<usize> = parts
            .iter()
            .filter(|p| p.samples())
            .map(StepPart::slot)
            .collect();
        let ids = self.model.step_slots(&parts)?;
        for (slot, tokens, start, _, _) in &chunks {
            if let Some(a) = self.slots[*slot].as_mut() {
                a.filled = start + tokens.len();
            }
        }
        for (&slot, &id) in order.iter().zip(&ids) {
            self.take(slot, id)?;
        }
        Ok(())
    }

    /// Hands `slot` its newly sampled id: streams its text and ends it when it is done.
    fn take(&mut self, slot: usize, id: u32) -> tpsmeter_gpu::Result<()> {
        let time = self.now();
        let position = self.model.slot_history(slot).len();
        let limit = self.model.max_context();
        let Some(a) = self.slots[slot].as_mut() else {
            return Ok(());
        };
        let mut gone = false;
        if let Some(ev) = a.seq.push(id, time)? {
            // A failed send: the client went away, and its slot is free from the next step on.
            gone = !ev.text.is_empty() && a.job.events.send(Event::Text(ev.text)).is_err();
        }
        if a.seq
            .check(gone || a.job.events.is_closed(), position, limit)
        {
            a.next = Some(id);
        } else {
            self.finish(slot);
        }
        Ok(())
    }

    /// Ends the request in `slot` and frees the slot.
    fn finish(&mut self, slot: usize) {
        let end = self.now();
        let Some(a) = self.slots[slot].take() else {
            return;
        };
        self.ended = true;
        let (flush, g) = a.seq.finish(end);
        if let Some(ev) = flush {
            let _ = a.job.events.send(Event::Text(ev.text));
        }
        let _ = a.job.events.send(Event::Done(summary(&g, a.queued_s)));
    }

    /// A step failed (device lost, a bug): every running request gets the error; the slots
    /// are freed and the loop goes on with whatever arrives next.
    fn fail_all(&mut self, e: &GpuError) {
        for slot in &mut self.slots {
            if let Some(a) = slot.take() {
                let _ = a.job.events.send(Event::Failed(e.to_string()));
            }
        }
        // What the slots' rows hold is unknown after a failed step: no later prompt may
        // reuse it.
        self.model.forget_slots();
    }
}

fn summary(g: &tpsmeter_model::generate::Generation, queued_s: f64) -> Summary {
    let eog = usize::from(matches!(g.stop, StopReason::EndOfGeneration { .. }));
    Summary {
        prompt_tokens: g.prompt_tokens,
        reused_tokens: g.reused_tokens,
        completion_tokens: g.tokens.len().saturating_sub(eog),
        stop: g.stop,
        figures: RunFigures::from_generation(g),
        queued_s,
    }
}
