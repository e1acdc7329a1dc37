//! The conversation a request sends: user and assistant turns, in order.
//!
//! One user message is the common case (a prompt); datasets and multi-turn runs send
//! whole conversations. A system text is not a message here: it rides in
//! `RequestSpec::system` (in `request`), because half the APIs take it apart
//! from the turns (Anthropic's `system`, Gemini's `systemInstruction`, Responses'
//! `instructions`).

use serde::{Deserialize, Serialize};

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

impl Role {
    /// The OpenAI, Anthropic and Ollama spelling.
    pub fn name(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One turn of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Message {
    pub role: Role,
    pub content: String,
}

impl Message {
    pub fn user(content: impl Into<String>) -> Message {
        Message {
            role: Role::User,
            content: content.into(),
        }
    }

    pub fn assistant(content: impl Into<String>) -> Message {
        Message {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// The conversation as one text, for the APIs that take a single prompt string (legacy
/// completions, Ollama's generate): one user message is sent as it is; a longer
/// conversation becomes a transcript, each turn as `User: …` or `Assistant: …` separated by
/// blank lines and ending with `Assistant:`, the plain-text chat form base models follow.
pub fn transcript(messages: &[Message]) -> String {
    if let [only] = messages {
        if only.role == Role::User {
            return only.content.clone();
        }
    }
    let mut out = String::new();
    for m in messages {
        let who = match m.role {
            Role::User => "User",
            Role::Assistant => "Assistant",
        };
        out.push_str(who);
        out.push_str(": ");
        out.push_str(&m.content);
        out.push_str("\n\n");
    }
    out.push_str("Assistant:");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_user_message_is_its_text_and_more_become_a_transcript() {
        assert_eq!(transcript(&[Message::user("Hi")]), "Hi");
        let t = transcript(&[
            Message::user("Hi"),
            Message::assistant("Hello!"),
            Message::user("Tell me more"),
        ]);
        assert_eq!(
            t,
            "User: Hi\n\nAssistant: Hello!\n\nUser: Tell me more\n\nAssistant:"
        );
    }
}
