//! The dataset parser (`--dataset`, `bench({ dataset })`) on any bytes: entries or an error,
//! never a panic; every entry within the caps and sendable (it starts and ends with a user
//! message); and the draw of any request lands on an entry.
//!
//! Input: the file's bytes, whole (JSON Lines or a JSON array, as the first byte decides).

use tpsmeter_core::Role;
use tpsmeter_core::dataset::{Dataset, MAX_MESSAGES, MAX_OUTPUT_TOKENS, Order};

/// One input: see the module's docs.
pub fn run(data: &[u8]) {
    let Ok(d) = Dataset::parse("fuzz.jsonl", data) else {
        return;
    };
    assert_eq!(d.sha256().len(), 64);
    let entries = d.entries();
    assert!(!entries.is_empty(), "a parsed dataset has entries");
    for e in entries {
        assert!(!e.messages.is_empty() && e.messages.len() <= MAX_MESSAGES);
        assert_eq!(e.messages.first().map(|m| m.role), Some(Role::User));
        assert_eq!(e.messages.last().map(|m| m.role), Some(Role::User));
        if let Some(t) = e.output_tokens {
            assert!((1..=MAX_OUTPUT_TOKENS).contains(&t));
        }
    }
    let order = Order::new(Some(data.len() as u64), 0, entries.len(), None);
    for i in [0, 1, entries.len() as u64, u64::MAX / 2] {
        assert!(order.entry(i) < entries.len());
    }
}
