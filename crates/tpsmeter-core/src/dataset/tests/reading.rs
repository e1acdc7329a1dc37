//! Entries read from JSONL, ShareGPT and arrays: prompts, messages, lengths, the file's hash.
#![allow(clippy::unwrap_used)]
use super::*;

#[test]
fn jsonl_reads_prompts_messages_and_output_lengths() {
    let d = parse(concat!(
        "{\"prompt\": \"Hi\", \"max_tokens\": 7}\n",
        "\r\n",
        "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"},",
        " {\"role\": \"user\", \"content\": \"A\"}, {\"role\": \"assistant\", \"content\": \"B\"},",
        " {\"role\": \"user\", \"content\": \"C\"}, {\"role\": \"assistant\", \"content\": \"0123456789\"}],",
        " \"id\": 3}\r\n",
        "{\"prompt\": \"Yo\", \"system\": \"S\", \"output_tokens\": 9}",
    ))
    .unwrap();
    assert_eq!(d.format(), DatasetFormat::Jsonl);
    let e = d.entries();
    assert_eq!(e.len(), 3);
    assert_eq!(e[0].messages, vec![Message::user("Hi")]);
    assert_eq!(e[0].output_tokens, Some(7));
    assert_eq!(e[1].system.as_deref(), Some("Be brief."));
    assert_eq!(
        e[1].messages,
        vec![
            Message::user("A"),
            Message::assistant("B"),
            Message::user("C")
        ],
        "sent up to the last user message"
    );
    assert_eq!(
        e[1].output_tokens,
        Some(3),
        "the reference answer's 10 characters"
    );
    assert_eq!(e[2].system.as_deref(), Some("S"));
    assert_eq!(e[2].output_tokens, Some(9));
}

/// A ShareGPT file as vLLM's benchmark reads it.
const SHAREGPT: &str = r#"[
  {"id": "a", "conversations": [
    {"from": "human", "value": "What is a lighthouse?"},
    {"from": "gpt", "value": "A tower with a light at the top."},
    {"from": "human", "value": "And a keeper?"}]},
  {"id": "b", "conversations": []},
  {"id": "c", "conversations": [
    {"from": "system", "value": "You are terse."},
    {"from": "gpt", "value": "Hello."},
    {"from": "human", "value": "Hi"}]},
  {"id": "d", "conversations": [{"from": "gpt", "value": "Only me."}]}
]
"#;

#[test]
fn sharegpt_sends_the_first_human_turn_and_skips_entries_without_one() {
    let d = Dataset::parse("sharegpt.json", SHAREGPT.as_bytes()).unwrap();
    assert_eq!(d.format(), DatasetFormat::Json);
    assert_eq!(d.skipped(), 2, "b and d have no human turn");
    let e = d.entries();
    assert_eq!(e.len(), 2);
    assert_eq!(e[0].messages, vec![Message::user("What is a lighthouse?")]);
    // "A tower with a light at the top." is 32 characters: 8 tokens.
    assert_eq!(e[0].output_tokens, Some(8));
    assert_eq!(e[0].system, None);
    assert_eq!(e[1].system.as_deref(), Some("You are terse."));
    assert_eq!(e[1].messages, vec![Message::user("Hi")]);
    assert_eq!(e[1].output_tokens, None, "no gpt turn after the human one");
    assert_eq!(
        e[0].answer.as_deref(),
        Some("A tower with a light at the top."),
        "kept for a tokenizer to count"
    );
    match d.prompt_source(None) {
        PromptSource::Dataset {
            name,
            format,
            entries,
            skipped,
            bytes,
            sha256,
            tokenizer,
        } => {
            assert_eq!(tokenizer, None, "the answers' lengths are estimates");
            assert_eq!(name, "sharegpt.json");
            assert_eq!(format, DatasetFormat::Json);
            assert_eq!((entries, skipped), (2, 2));
            assert_eq!(bytes, SHAREGPT.len() as u64);
            assert_eq!(sha256.len(), 64);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn sha256_is_the_files_and_urls_lose_their_credentials() {
    // The SHA-256 of "abc" (FIPS 180-2's example), as bytes of a one-entry file would not
    // be: the digest is of the bytes exactly as given.
    let d = Dataset::parse(
        "https://user:pw@host/d.jsonl?token=s3cret&v=2",
        br#"{"prompt":"x"}"#,
    )
    .unwrap();
    assert_eq!(d.name(), "https://host/d.jsonl?v=2");
    assert_eq!(d.sha256(), hex(&Sha256::digest(br#"{"prompt":"x"}"#)));
    assert_eq!(
        hex(&Sha256::digest(b"abc")),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn a_bom_and_blank_lines_are_not_entries() {
    let d = Dataset::parse("d", b"\xEF\xBB\xBF\n  \n{\"prompt\":\"a\"}\n\n").unwrap();
    assert_eq!(d.entries().len(), 1);
    let d = Dataset::parse("d", b"\xEF\xBB\xBF [{\"prompt\":\"a\"}]").unwrap();
    assert_eq!(d.format(), DatasetFormat::Json);
    assert_eq!(DatasetFormat::detect(b"  \n[1]"), DatasetFormat::Json);
    assert_eq!(DatasetFormat::detect(b"{}"), DatasetFormat::Jsonl);
}
