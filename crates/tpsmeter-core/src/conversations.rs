//! Multi-turn runs (`--turns N`): each virtual user holds one conversation, as a chat UI's
//! user does. Turn 1 sends the run's first user message (its mark makes the conversation
//! unique); each later turn sends the whole conversation so far, the model's real answers
//! included, and a new user message. After N turns (or a failed turn) the user starts a
//! new conversation. A server with a prompt cache reuses the conversation's prefix from
//! turn 2 on, which per-turn TTFT and cached input tokens show.
//!
//! The load driver knows nothing of conversations: closed-loop slots are interchangeable,
//! so a request takes whichever conversation is waiting for its next turn (at concurrency c
//! at most c are in flight, and a finished turn frees its conversation for the next
//! request). Conversations do not cross phases: a new level (or its warm-up) starts fresh
//! ones, so each level's turns are its own.
//!
//! No I/O: the caller hands in each answer when its request completes.

use std::collections::HashMap;

use crate::drive::Ticket;
use crate::request::Message;

/// Most turns a conversation may have: each one resends all before it.
pub const MAX_TURNS: u32 = 64;

/// One conversation: its id (the ticket id of its first turn, which its mark carries) and
/// its messages so far.
#[derive(Debug, Clone, PartialEq)]
struct Conversation {
    id: u64,
    messages: Vec<Message>,
    /// Turns sent so far.
    turns: u32,
}

/// Where a request stands in its conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Turn {
    /// The conversation's id (the ticket id of its first turn).
    pub conversation: u64,
    /// From 1.
    pub turn: u32,
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
}

impl Conversations {
    /// Conversations of `turns` turns each (at least 2; see [`MAX_TURNS`]).
    pub fn new(turns: u32) -> Conversations {
        Conversations {
            turns: turns.clamp(1, MAX_TURNS),
            idle: Vec::new(),
            running: HashMap::new(),
            phase: None,
        }
    }

    /// The messages `ticket` sends and its place in its conversation. `first` makes a new
    /// conversation's first messages (given the conversation id: a prompt, or a dataset
    /// entry's turns), `follow_up` a later turn's user message (given the conversation id
    /// and the turn, from 2).
    pub fn begin(
        &mut self,
        ticket: &Ticket,
        first: impl FnOnce(u64) -> crate::Result<Vec<Message>>,
        follow_up: impl FnOnce(u64, u32) -> String,
    ) -> crate::Result<(Vec<Message>, Turn)> {
        let phase = (ticket.level_index, ticket.warmup);
        if self.phase != Some(phase) {
            self.phase = Some(phase);
            self.idle.clear();
        }
        let mut c = match self.idle.pop() {
            Some(mut c) => {
                c.messages.push(Message::user(follow_up(c.id, c.turns + 1)));
                c
            }
            None => Conversation {
                id: ticket.id,
                messages: first(ticket.id)?,
                turns: 0,
            },
        };
        c.turns += 1;
        let turn = Turn {
            conversation: c.id,
            turn: c.turns,
        };
        let messages = c.messages.clone();
        self.running.insert(ticket.id, c);
        Ok((messages, turn))
    }

    /// `ticket`'s request ended with `answer` (`None`: it failed, and its conversation ends
    /// with it, as a user whose chat broke starts a new one).
    pub fn end(&mut self, ticket: u64, answer: Option<&str>) {
        let Some(mut c) = self.running.remove(&ticket) else {
            return;
        };
        let Some(answer) = answer else { return };
        if c.turns >= self.turns || self.phase.is_none() {
            return;
        }
        c.messages.push(Message::assistant(answer));
        self.idle.push(c);
    }

    /// The turn of a request in flight.
    pub fn turn_of(&self, ticket: u64) -> Option<Turn> {
        self.running.get(&ticket).map(|c| Turn {
            conversation: c.id,
            turn: c.turns,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::plan::LoadLevel;
    use crate::request::Role;

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
        c.begin(
            t,
            |id| Ok(vec![Message::user(format!("first of {id}"))]),
            |id, n| format!("turn {n} of {id}"),
        )
        .unwrap()
    }

    #[test]
    fn turns_carry_the_real_answers_then_a_new_conversation_starts() {
        let mut c = Conversations::new(3);
        let (m, t) = begin(&mut c, &ticket(0, 0));
        assert_eq!((t.conversation, t.turn), (0, 1));
        assert_eq!(m, vec![Message::user("first of 0")]);
        c.end(0, Some("answer one"));
        let (m, t) = begin(&mut c, &ticket(1, 0));
        assert_eq!((t.conversation, t.turn), (0, 2));
        assert_eq!(m.len(), 3);
        assert_eq!(m[1], Message::assistant("answer one"));
        assert_eq!(m[2].content, "turn 2 of 0");
        assert_eq!(c.turn_of(1), Some(t));
        c.end(1, Some("answer two"));
        let (m, t) = begin(&mut c, &ticket(2, 0));
        assert_eq!((t.turn, m.len()), (3, 5));
        assert_eq!(m.iter().filter(|m| m.role == Role::Assistant).count(), 2);
        c.end(2, Some("answer three"));
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
        c.end(1, Some("ok"));
        let (_, t) = begin(&mut c, &ticket(2, 0));
        assert_eq!(
            (t.conversation, t.turn),
            (1, 2),
            "only the one that answered goes on"
        );
        c.end(2, Some("ok"));
        let (_, t) = begin(&mut c, &ticket(3, 1));
        assert_eq!(
            (t.conversation, t.turn),
            (3, 1),
            "a new level starts new conversations"
        );
    }
}
