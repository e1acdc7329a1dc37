//! Continuous batching for `tpsmeter serve`: the GPU thread's loop.
//!
//! Each request gets a slot of the model's KV cache when one is free (arrival order; beyond
//! the slots it queues, and the wait is reported apart as `queue_ms`). Every turn of the loop
//! runs one chunk (at most [`PREFILL_CHUNK`] tokens) of the oldest unfinished prompt, then one
//! decode step carrying the next token of every running request, so a long prompt never stalls
//! the streams already flowing and a new request starts at the next step. A prompt with only
//! its last token left to run (the slot held the rest: a repeated prompt, a chat's next turn)
//! runs that token in the decode step itself, so several such arrivals share one step. A request leaves
//! its slot the step it ends; a client that went away ends its request at the next step it
//! reaches (its channel is closed), freeing the slot at once.
//!
//! A request runs through the same [`Sequence`] rules and the same prompt chunks as
//! `Engine::generate`, so its tokens equal the same request run alone.

use std::collections::VecDeque;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tpsmeter_gpu::GpuError;
use tpsmeter_gpu::engine::{GpuModel, PREFILL_CHUNK, Prompts};
use tpsmeter_gpu::generate::{Sequence, StopReason, reusable_prefix};

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
pub struct Scheduler<'e> {
    prompts: &'e Prompts,
    model: &'e mut GpuModel,
    jobs: mpsc::Receiver<Job>,
    waiting: VecDeque<Job>,
    slots: Vec<Option<Active<'e>>>,
    epoch: Instant,
    admitted: u64,
    /// How long the loop waits for a new request after one ended, before the next step.
    join_window: Duration,
    /// Whether a request ended since the loop last waited for arrivals.
    ended: bool,
}

impl<'e> Scheduler<'e> {
    pub fn new(
        prompts: &'e Prompts,
        model: &'e mut GpuModel,
        jobs: mpsc::Receiver<Job>,
        join_window: Duration,
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
            if let Err(e) = self.prefill_one().and_then(|()| self.decode_step()) {
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
            // Encoded and checked against the context by the server (`Prompt::encode`); the
            // model's own limits are checked again here, where one bad request can fail
            // alone, not inside a step, where an error fails every request in it.
            let prompt = std::mem::take(&mut job.prompt);
            let vocab = self
                .prompts
                .tokenizer()
                .vocab_size()
                .min(self.model.config().vocab_size);
            let bad = if prompt.is_empty() {
                Some(GpuError::EmptyPrompt)
            } else if prompt.len() >= self.model.max_context() {
                Some(GpuError::ContextFull {
                    position: prompt.len(),
                    limit: self.model.max_context(),
                })
            } else {
                prompt
                    .iter()
                    .find(|&&t| t as usize >= vocab)
                    .map(|&token| GpuError::TokenOutOfRange { token, vocab })
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
            (a.filled, rest.min(PREFILL_CHUNK))
        })
    }

    /// Whether `slot`'s prompt has only its last token left to run, behind at least one held:
    /// that token joins the next decode step (one step for every new arrival of a repeated
    /// prompt or a chat's next turn, not a step each).
    fn joins_decode(&self, slot: usize) -> bool {
        match (self.prompt_left(slot), self.slots[slot].as_ref()) {
            (Some((from, 1)), Some(a)) => from >= 1 && from + 1 == a.prompt.len(),
            _ => false,
        }
    }

    /// Runs the next chunk of the oldest admitted prompt that has more than its last token
    /// left.
    fn prefill_one(&mut self) -> tpsmeter_gpu::Result<()> {
        let Some(slot) = (0..self.slots.len())
            .filter(|&s| self.prompt_left(s).is_some() && !self.joins_decode(s))
            .filter_map(|s| Some((self.slots[s].as_ref()?.order, s)))
            .min()
            .map(|(_, s)| s)
        else {
            return Ok(());
        };
        let Some((from, n)) = self.prompt_left(slot) else {
            return Ok(());
        };
        let Some(a) = self.slots[slot].as_mut() else {
            return Ok(());
        };
        if a.job.events.is_closed() {
            a.seq.cancel();
            self.finish(slot);
            return Ok(());
        }
        // Whole prompt chunks in order, as `submit_step` splits a prompt: a remainder under
        // PREFILL_CHUNK runs last, in its power-of-two pieces.
        let last = from + n == a.prompt.len();
        let chunk = a.prompt[from..from + n].to_vec();
        let sampling = a.job.sampling;
        self.model
            .submit_slot_prompt(slot, &chunk, from, &sampling, last)?;
        if let Some(a) = self.slots[slot].as_mut() {
            a.filled = from + n;
        }
        if last {
            let ids = self.model.read_slots_blocking()?;
            if let Some(&id) = ids.first() {
                self.take(slot, id)?;
            }
        }
        Ok(())
    }

    /// One decode step for every request with a sampled id waiting, and for every prompt with
    /// only its last token left.
    fn decode_step(&mut self) -> tpsmeter_gpu::Result<()> {
        let mut steps = Vec::new();
        for s in 0..self.slots.len() {
            if let Some(t) = self.slots[s].as_ref().and_then(|a| a.next) {
                steps.push((s, t));
            } else if self.joins_decode(s) {
                let Some(a) = self.slots[s].as_mut() else {
                    continue;
                };
                if a.job.events.is_closed() {
                    a.seq.cancel();
                    self.finish(s);
                    continue;
                }
                let from = a.prompt.len() - 1;
                let token = a.prompt[from];
                let sampling = a.job.sampling;
                a.filled = a.prompt.len();
                self.model.rewind_slot(s, from, &sampling)?;
                steps.push((s, token));
            }
        }
        if steps.is_empty() {
            return Ok(());
        }
        self.model.submit_slots(&steps)?;
        let ids = self.model.read_slots_blocking()?;
        for (&(slot, _), &id) in steps.iter().zip(&ids) {
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

fn summary(g: &tpsmeter_gpu::generate::Generation, queued_s: f64) -> Summary {
    let eog = usize::from(matches!(g.stop, StopReason::EndOfGeneration { .. }));
    Summary {
        prompt_tokens: g.prompt_tokens,
        completion_tokens: g.tokens.len().saturating_sub(eog),
        stop: g.stop,
        figures: RunFigures::from_generation(g),
        queued_s,
    }
}
