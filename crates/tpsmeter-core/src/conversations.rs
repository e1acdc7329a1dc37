//! Multi-turn runs (`--turns N`): each virtual user holds one conversation, as a chat UI's
//! user does. Turn 1 sends the run's first user message (its mark makes the conversation
//! unique); each later turn sends the whole conversation so far, the model's real answers
//! included, and a new user message, with the first turn's system text and output cap (a
//! dataset entry's own, when it has them). After N turns (or a failed turn) the user starts
//! a new conversation. A server with a prompt cache reuses the conversation's prefix from
//! turn 2 on, which per-turn TTFT and cached input tokens show.
//!
//! A conversation is resent whole each turn, so what a server puts into it is bounded: an
//! answer goes on in it as its request kept it (its first bytes only, when the server
//! ignored `max_tokens`; see [`crate::answer`]), and a conversation whose text would pass
//! [`MAX_CONVERSATION_BYTES`] ends early, **cut**: the user starts a new one, as after its
//! last turn. The cut ones are counted ([`Conversations::cut`]) and the report says how
//! many.
//!
//! The load driver knows nothing of conversations: closed-loop slots are interchangeable,
//! so a request takes whichever conversation is waiting for its next turn (at concurrency c
//! at most c are in flight, and a finished turn frees its conversation for the next
//! request). Conversations do not cross phases: a new level (or its warm-up) starts fresh
//! ones, so each level's turns are its own.
//!
//! No I/O: the caller hands in each answer when its request completes.

use std::collections::HashMap;

use crate::answer::KeptAnswer;
use crate::message::Message;
use crate::prompts::RequestInput;
use crate::spec::Ticket;

pub use crate::spec::Turn;

pub use crate::spec::MAX_TURNS;

/// Most text a conversation holds before it is cut, in bytes as JSON writes it (a control
/// character takes 6): its system text and every message, answers included. 4 MiB is about
/// a million tokens, past every model's context window, so no conversation a server could
/// still answer is cut; and it bounds what each turn's body resends, per user, whatever the
/// server streams (the issue that set it: 4 MiB answers resent in every later turn made
/// bodies of 75 MB by turn 4).
pub const MAX_CONVERSATION_BYTES: usize = 4 << 20;

/// One conversation: its id (the ticket id of its first turn, which its mark carries), its
/// messages so far, and what every turn sends beside them.
#[derive(Debug, Clone, PartialEq)]
struct Conversation {
    id: u64,
    messages: Vec<Message>,
    /// The first turn's own output cap and system text (a dataset entry's), for every turn.
    max_tokens: Option<u32>,
    system: Option<String>,
    /// Its text's length as JSON writes it (see [`MAX_CONVERSATION_BYTES`]).
    bytes: usize,
    /// Turns sent so far.
    turns: u32,
}

impl Conversation {
    /// What its next request sends.
    fn input(&self) -> RequestInput {
        RequestInput {
            messages: self.messages.clone(),
            max_tokens: self.max_tokens,
            system: self.system.clone(),
        }
    }

    fn push(&mut self, message: Message) {
        self.bytes = self.bytes.saturating_add(json_len(&message.content));
        self.messages.push(message);
    }
}

/// The conversations of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversations {
    turns: u32,
    /// Waiting for their next turn.
    idle: Vec<Conversation>,
    /// Sent, waiting for the answer, by ticket id.
    running: HashMap<u64, Conversation>,
    /// The phase (level index, warm-up) the conversations belong to.
    phase: Option<(usize, bool)>,
    /// Conversations ended before their last turn by [`MAX_CONVERSATION_BYTES`].
    cut: u64,
}

impl Conversations {
    /// Conversations of `turns` turns each (at least 2; see [`MAX_TURNS`]).
    pub fn new(turns: u32) -> Conversations {
        Conversations {
            turns: turns.clamp(1, MAX_TURNS),
            idle: Vec::new(),
            running: HashMap::new(),
            phase: None,
            cut: 0,
        }
    }

    /// What `ticket` sends and its place in its conversation. `first` makes a new
    /// conversation's first input (given the conversation id: a prompt, or a dataset
    /// entry's turns, system text and output cap), `follow_up` a later turn's user message
    /// (given the conversation id and the turn, from 2).
    pub fn begin(
        &mut self,
        ticket: &Ticket,
        first: impl FnOnce(u64) -> crate::Result<RequestInput>,
        follow_up: impl FnOnce(u64, u32) -> String,
    ) -> crate::Result<(RequestInput, Turn)> {
        let phase = (ticket.level_index, ticket.warmup);
        if self.phase != Some(phase) {
            self.phase = Some(phase);
            self.idle.clear();
        }
        let mut c = match self.idle.pop() {
            Some(mut c) => {
                c.push(Message::user(follow_up(c.id, c.turns + 1)));
                c
            }
            None => {
                let input = first(ticket.id)?;
                let mut c = Conversation {
                    id: ticket.id,
                    messages: Vec::with_capacity(input.messages.len()),
                    max_tokens: input.max_tokens,
                    bytes: input.system.as_deref().map_or(0, json_len),
                    system: input.system,
                    turns: 0,
                };
                for m in input.messages {
                    c.push(m);
                }
                c
            }
        };
        c.turns += 1;
        let turn = Turn {
            conversation: c.id,
            turn: c.turns,
        };
        let input = c.input();
        self.running.insert(ticket.id, c);
        Ok((input, turn))
    }

    /// `ticket`'s request ended with `answer` (`None`: it failed, and its conversation ends
    /// with it, as a user whose chat broke starts a new one). The answer goes on as kept
    /// (its first bytes, when it ran past its cap); one that would take the conversation
    /// past [`MAX_CONVERSATION_BYTES`] ends it, counted as cut.
    pub fn end(&mut self, ticket: u64, answer: Option<&KeptAnswer>) {
        let Some(mut c) = self.running.remove(&ticket) else {
            return;
        };
        let Some(answer) = answer else { return };
        if c.turns >= self.turns || self.phase.is_none() {
            return;
        }
        if c.bytes.saturating_add(json_len(answer.text())) > MAX_CONVERSATION_BYTES {
            self.cut += 1;
            return;
        }
        c.push(Message::assistant(answer.text()));
        self.idle.push(c);
    }

    /// The turn of a request in flight.
    pub fn turn_of(&self, ticket: u64) -> Option<Turn> {
        self.running.get(&ticket).map(|c| Turn {
            conversation: c.id,
            turn: c.turns,
        })
    }

    /// The conversations cut so far.
    pub fn cut(&self) -> u64 {
        self.cut
    }
}

/// The length of `s` as a JSON string's contents: what it adds to a request body once
/// escaped (a quote, a backslash and the short escapes take 2 bytes, other control
/// characters 6).
fn json_len(s: &str) -> usize {
    s.bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::answer::MAX_KEPT_ANSWER_BYTES;
    use crate::load::LoadLevel;
    use crate::message::Role;

    fn ticket(id: u64, level_index: usize) -> Ticket {
        Ticket {
            id,
            level_index,
            level: LoadLevel::Concurrency(1),
            warmup: false,
            scheduled_ms: None,
        }
    }

    fn begin(c: &mut Conversations, t: &Ticket) -> (Vec<Message>, Turn) {
        let (input, turn) = c
            .begin(
                t,
                |id| {
                    Ok(RequestInput {
                        messages: vec![Message::user(format!("first of {id}"))],
                        max_tokens: None,
                        system: None,
                    })
                },
                |id, n| format!("turn {n} of {id}"),
            )
            .unwrap();
        (input.messages, turn)
    }

    /// An answer kept whole.
    fn kept(text: &str) -> KeptAnswer {
        let mut a = KeptAnswer::new(usize::MAX);
        a.push(text);
        a
    }

    #[test]
    fn turns_carry_the_real_answers_then_a_new_conversation_starts() {
        let mut c = Conversations::new(3);
        let (m, t) = begin(&mut c, &ticket(0, 0));
        assert_eq!((t.conversation, t.turn), (0, 1));
        assert_eq!(m, vec![Message::user("first of 0")]);
        c.end(0, Some(&kept("answer one")));
        let (m, t) = begin(&mut c, &ticket(1, 0));
        assert_eq!((t.conversation, t.turn), (0, 2));
        assert_eq!(m.len(), 3);
        assert_eq!(m[1], Message::assistant("answer one"));
        assert_eq!(m[2].content, "turn 2 of 0");
        assert_eq!(c.turn_of(1), Some(t));
        c.end(1, Some(&kept("answer two")));
        let (m, t) = begin(&mut c, &ticket(2, 0));
        assert_eq!((t.turn, m.len()), (3, 5));
        assert_eq!(m.iter().filter(|m| m.role == Role::Assistant).count(), 2);
        c.end(2, Some(&kept("answer three")));
        // Three turns done: a new conversation, named by its first ticket.
        let (m, t) = begin(&mut c, &ticket(3, 0));
        assert_eq!((t.conversation, t.turn, m.len()), (3, 1, 1));
    }

    #[test]
    fn a_failed_turn_ends_its_conversation_and_levels_start_fresh() {
        let mut c = Conversations::new(4);
        begin(&mut c, &ticket(0, 0));
        begin(&mut c, &ticket(1, 0));
        c.end(0, None);
        c.end(1, Some(&kept("ok")));
        let (_, t) = begin(&mut c, &ticket(2, 0));
        assert_eq!(
            (t.conversation, t.turn),
            (1, 2),
            "only the one that answered goes on"
        );
        c.end(2, Some(&kept("ok")));
        let (_, t) = begin(&mut c, &ticket(3, 1));
        assert_eq!(
            (t.conversation, t.turn),
            (3, 1),
            "a new level starts new conversations"
        );
    }

    /// Issue 35: with `--turns`, a dataset entry's system text and output cap were dropped
    /// (every turn, the first included, fell back to the run's).
    #[test]
    fn every_turn_sends_the_first_turns_system_text_and_output_cap() {
        let mut c = Conversations::new(3);
        let first = |_| {
            Ok(RequestInput {
                messages: vec![Message::user("Q1")],
                max_tokens: Some(7),
                system: Some("Be brief.".into()),
            })
        };
        let (one, _) = c.begin(&ticket(0, 0), first, |_, _| "Q2".into()).unwrap();
        c.end(0, Some(&kept("A1")));
        let (two, t) = c
            .begin(&ticket(1, 0), |_| unreachable!(), |_, _| "Q2".into())
            .unwrap();
        assert_eq!(t.turn, 2);
        assert_eq!(
            (one.max_tokens, one.system.as_deref()),
            (Some(7), Some("Be brief."))
        );
        assert_eq!(
            (two.max_tokens, two.system.as_deref()),
            (Some(7), Some("Be brief."))
        );
        assert_eq!(two.messages.len(), 3);
    }

    #[test]
    fn a_long_answer_goes_on_as_kept_and_a_conversation_too_large_is_cut() {
        let mut c = Conversations::new(8);
        begin(&mut c, &ticket(0, 0));
        let mut long = KeptAnswer::new(4);
        long.push("more than four bytes");
        c.end(0, Some(&long));
        let (m, t) = begin(&mut c, &ticket(1, 0));
        assert_eq!((t.conversation, t.turn), (0, 2));
        assert_eq!(m[1], Message::assistant("more"), "the part kept");

        // Control characters count as JSON writes them: 6 bytes each. An answer kept whole
        // (512 KiB) takes the conversation to 3 MiB; a second one would pass 4 MiB.
        let control = "\u{1}".repeat(MAX_KEPT_ANSWER_BYTES);
        assert_eq!(json_len(&control), 6 * MAX_KEPT_ANSWER_BYTES);
        c.end(1, Some(&kept(&control)));
        assert_eq!(begin(&mut c, &ticket(2, 0)).1.turn, 3);
        c.end(2, Some(&kept(&control)));
        assert_eq!(c.cut(), 1);
        let (m, t) = begin(&mut c, &ticket(3, 0));
        assert_eq!((t.conversation, t.turn, m.len()), (3, 1, 1), "a new one");
        // Plain text, under the cap, goes on.
        c.end(3, Some(&kept(&"x".repeat(MAX_KEPT_ANSWER_BYTES))));
        assert_eq!(begin(&mut c, &ticket(4, 0)).1.turn, 2);
        assert_eq!(c.cut(), 1);
    }
}
