#![allow(clippy::unwrap_used)]
use super::*;
use crate::prompt_plan::{CacheBust, PromptPlan};
use crate::request::Role;

fn parse(text: &str) -> Result<Dataset> {
    Dataset::parse("d.jsonl", text.as_bytes())
}

/// The error of `text` as (line, entry, field, reason).
fn fault(text: &str) -> (Option<u64>, Option<u64>, Option<String>, String) {
    match parse(text).unwrap_err() {
        CoreError::InvalidDataset {
            line,
            entry,
            field,
            reason,
        } => (line, entry, field, reason),
        other => panic!("{other}"),
    }
}

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

#[test]
fn malformed_lines_are_named_by_line_and_field() {
    type Case = (&'static str, u64, Option<&'static str>, &'static str);
    let cases: [Case; 17] = [
        (
            "{\"prompt\": \"a\"}\n{\"prompt\": ",
            2,
            None,
            "not valid JSON",
        ),
        (
            "{\"prompt\": \"a\"}\n\n[1]",
            3,
            None,
            "must be a JSON object",
        ),
        ("\"text\"", 1, None, "must be a JSON object"),
        ("{\"id\": 1}", 1, None, "needs one of `prompt`, `messages`"),
        ("{\"prompt\": \"a\", \"messages\": []}", 1, None, "has both"),
        (
            "{\"prompt\": 5}",
            1,
            Some("prompt"),
            "must be a string, not the number 5",
        ),
        ("{\"prompt\": \" \"}", 1, Some("prompt"), "is empty"),
        (
            "{\"prompt\": \"a\", \"system\": 1}",
            1,
            Some("system"),
            "must be a string",
        ),
        (
            "{\"prompt\": \"a\", \"max_tokens\": 0}",
            1,
            Some("max_tokens"),
            "from 1 to",
        ),
        (
            "{\"prompt\": \"a\", \"output_tokens\": 1.5}",
            1,
            Some("output_tokens"),
            "whole number",
        ),
        (
            "{\"prompt\": \"a\", \"max_tokens\": 2, \"output_tokens\": 2}",
            1,
            Some("output_tokens"),
            "`max_tokens` too",
        ),
        (
            "{\"messages\": {}}",
            1,
            Some("messages"),
            "must be an array",
        ),
        (
            "{\"messages\": [{\"role\": \"bot\", \"content\": \"a\"}]}",
            1,
            Some("messages[0].role"),
            "\"bot\" is not a role",
        ),
        (
            "{\"messages\": [{\"role\": \"user\"}]}",
            1,
            Some("messages[0].content"),
            "is missing",
        ),
        (
            "{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"text\"}]}]}",
            1,
            Some("messages[0].content"),
            "content parts are not read",
        ),
        (
            "{\"messages\": [{\"role\": \"assistant\", \"content\": \"a\"}]}",
            1,
            Some("messages[0].role"),
            "must start with a user",
        ),
        (
            "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"system\", \"content\": \"b\"}]}",
            1,
            Some("messages[1].role"),
            "system message after",
        ),
    ];
    for (text, line, field, says) in cases {
        let (l, entry, f, reason) = fault(text);
        assert_eq!(l, Some(line), "{text}: {reason}");
        assert_eq!(entry, None);
        assert_eq!(f.as_deref(), field, "{text}: {reason}");
        assert!(
            reason.contains(says),
            "{text}: {reason:?} should say {says:?}"
        );
    }
    // The message a user reads names all three.
    let e = parse("{\"prompt\": \"a\"}\n{\"messages\": [{\"role\": 3, \"content\": \"a\"}]}")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "dataset line 2, field `messages[0].role`: must be a string, not the number 3"
    );
}

#[test]
fn malformed_array_entries_are_named_by_entry_and_line() {
    type Case = (
        &'static str,
        u64,
        Option<u64>,
        Option<&'static str>,
        &'static str,
    );
    let cases: [Case; 8] = [
        (
            "[\n{\"prompt\": \"a\"},\n{\"prompt\": }\n]",
            3,
            Some(2),
            None,
            "not valid JSON",
        ),
        (
            "[{\"prompt\": \"a\"},\n\n{\"conversations\": [{\"from\": \"human\", \"value\": 1}]}]",
            3,
            Some(2),
            Some("conversations[0].value"),
            "must be a string",
        ),
        (
            "[{\"conversations\": [{\"from\": \"narrator\", \"value\": \"x\"}]}]",
            1,
            Some(1),
            Some("conversations[0].from"),
            "is not a role",
        ),
        (
            "[{\"conversations\": [\"hi\"]}]",
            1,
            Some(1),
            Some("conversations[0]"),
            "must be an object",
        ),
        (
            "[{\"conversations\": \"hi\"}]",
            1,
            Some(1),
            Some("conversations"),
            "must be an array",
        ),
        (
            "[{\"prompt\": \"a\"},\n]",
            2,
            Some(2),
            None,
            "trailing commas",
        ),
        ("[{\"prompt\": \"a\"}\n\n", 3, Some(1), None, "not closed"),
        (
            "[{\"prompt\": \"a\"}] x",
            1,
            None,
            None,
            "text after the array",
        ),
    ];
    for (text, line, entry, field, says) in cases {
        let (l, e, f, reason) = fault(text);
        assert_eq!((l, e), (Some(line), entry), "{text}: {reason}");
        assert_eq!(f.as_deref(), field, "{text}: {reason}");
        assert!(
            reason.contains(says),
            "{text}: {reason:?} should say {says:?}"
        );
    }
    let e = parse("[{\"prompt\": \"a\"},\n{\"prompt\": null}]")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "dataset line 2, entry 2, field `prompt`: must be a string, not null"
    );
}

#[test]
fn an_empty_file_or_one_without_prompts_is_an_error() {
    for text in ["", " \n\n", "[]", " [ ] "] {
        let (l, _, _, reason) = fault(text);
        assert_eq!(l, None);
        assert!(reason.contains("no entries"), "{text:?}: {reason}");
    }
    let (_, _, _, reason) = fault(r#"[{"conversations": []}, {"conversations": []}]"#);
    assert!(reason.contains("none of its 2 entries"), "{reason}");
}

#[test]
fn caps_are_errors_that_name_the_cap() {
    // A line past the cap: refused before it is parsed.
    let long = format!("{{\"prompt\": \"{}\"}}", "a".repeat(MAX_ENTRY_BYTES));
    let (l, _, _, reason) = fault(&format!("{{\"prompt\":\"a\"}}\n{long}"));
    assert_eq!(l, Some(2));
    assert!(reason.contains("16777216 bytes"), "{reason}");
    let (l, e, _, reason) = fault(&format!("[{{\"prompt\":\"a\"}},\n{long}]"));
    assert_eq!((l, e), (Some(2), Some(2)));
    assert!(reason.contains("16777216 bytes"), "{reason}");
    // Messages per entry.
    let turn = r#"{"role": "user", "content": "a"}"#;
    let many = vec![turn; MAX_MESSAGES + 1].join(",");
    let (_, _, f, reason) = fault(&format!("{{\"messages\": [{many}]}}"));
    assert_eq!(f.as_deref(), Some("messages"));
    assert!(reason.contains(&MAX_MESSAGES.to_string()), "{reason}");
    let ok = vec![turn; MAX_MESSAGES].join(",");
    parse(&format!("{{\"messages\": [{ok}]}}")).unwrap();
    // Output length.
    let (_, _, f, _) = fault(&format!(
        "{{\"prompt\": \"a\", \"max_tokens\": {}}}",
        u64::from(MAX_OUTPUT_TOKENS) + 1
    ));
    assert_eq!(f.as_deref(), Some("max_tokens"));
    // Nesting: serde_json's recursion limit, an error rather than a stack overflow.
    let deep = format!(
        "{{\"prompt\": \"a\", \"x\": {}{}}}",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let (_, _, _, reason) = fault(&deep);
    assert!(reason.contains("recursion limit"), "{reason}");
    // Entries per file, counted before each is parsed (at a cap of 3: the real one takes a
    // file of four million lines to reach).
    let caps = Caps {
        bytes: MAX_DATASET_BYTES,
        entries: 3,
        entry_bytes: MAX_ENTRY_BYTES,
    };
    let four = "{\"prompt\":\"a\"}\n\n".repeat(4);
    assert!(Dataset::parse_capped("d", &four.as_bytes()[..four.len() / 4 * 3], caps).is_ok());
    for (text, line) in [
        (four.clone(), 7),
        (format!("[{}]", ["{\"prompt\":\"a\"}"; 4].join(",\n")), 4),
    ] {
        match Dataset::parse_capped("d", text.as_bytes(), caps).unwrap_err() {
            CoreError::InvalidDataset {
                line: l, reason, ..
            } => {
                assert_eq!(l, Some(line), "{text}");
                assert!(reason.contains("more than 3 entries"), "{reason}");
            }
            other => panic!("{other}"),
        }
    }
}

#[test]
fn the_file_size_cap_is_checked_first() {
    // At a cap of 20 bytes (the real one, 1 GiB, would take a 1 GiB test file).
    let caps = Caps {
        bytes: 20,
        ..Caps::DEFAULT
    };
    let ok = br#"{"prompt": "abcdef"}"#;
    assert_eq!(ok.len(), 20);
    Dataset::parse_capped("d", ok, caps).unwrap();
    // One byte more, and not even valid: the size is refused before anything is parsed.
    let e = Dataset::parse_capped("d", br#"{"prompt": "abcdefghi"#, caps)
        .unwrap_err()
        .to_string();
    assert_eq!(e, "dataset: the file is 21 bytes, over the cap of 20 bytes");
}

#[test]
fn estimates_are_a_quarter_of_the_characters() {
    assert_eq!(estimate_tokens(""), None);
    assert_eq!(estimate_tokens("a"), Some(1));
    assert_eq!(estimate_tokens("abcd"), Some(1));
    assert_eq!(estimate_tokens("abcde"), Some(2));
    assert_eq!(estimate_tokens("éééé"), Some(1), "characters, not bytes");
}

fn options(seed: Option<u64>) -> BenchOptions {
    BenchOptions {
        seed,
        ..crate::options::tests::options()
    }
}

#[test]
fn a_plan_marks_the_first_user_message_and_sends_the_entrys_system_and_cap() {
    let d = parse(concat!(
        "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"Q1\"},",
        " {\"role\": \"assistant\", \"content\": \"A1\"}, {\"role\": \"user\", \"content\": \"Q2\"}], \"max_tokens\": 5}",
    ))
    .unwrap();
    let o = options(Some(1));
    let plan = PromptPlan::new(&o, None, 0, None)
        .unwrap()
        .with_dataset(d.clone(), &o, None)
        .unwrap();
    assert!(!plan.is_constant());
    let input = plan.input(4, None).unwrap();
    assert_eq!(input.system.as_deref(), Some("S"));
    assert_eq!(input.max_tokens, Some(5));
    assert_eq!(input.messages[0].content, format!("{} Q1", plan.mark(4)));
    assert_eq!(input.messages[1], Message::assistant("A1"));
    assert_eq!(input.messages[2].role, Role::User);
    assert_eq!(
        input.messages[2].content, "Q2",
        "only the first user message is marked"
    );
    assert_eq!(plan.dataset().unwrap().entries().len(), 1);
    // Unmarked: the entry as it is, and still one body per request.
    let off = BenchOptions {
        cache_bust: CacheBust::Off,
        ..o.clone()
    };
    let plan = PromptPlan::new(&off, None, 0, None)
        .unwrap()
        .with_dataset(d, &off, None)
        .unwrap();
    assert_eq!(plan.input(0, None).unwrap().messages[0].content, "Q1");
    assert!(!plan.is_constant(), "entries differ");
}

#[test]
fn a_dataset_refuses_options_that_make_prompts() {
    let d = || parse("{\"prompt\": \"a\"}").unwrap();
    for (o, says) in [
        (
            BenchOptions {
                prompt: Some("p".into()),
                ..options(None)
            },
            "prompt",
        ),
        (
            BenchOptions {
                input_tokens: Some(10),
                ..options(None)
            },
            "input tokens",
        ),
        (
            BenchOptions {
                shared_prefix: Some(2),
                ..options(None)
            },
            "shared prefix",
        ),
        (
            BenchOptions {
                workload: Some(crate::workload::Workload::Chat),
                input_tokens: Some(128),
                ..options(None)
            },
            "workload",
        ),
    ] {
        let plan = PromptPlan::new(&o, None, 0, None).unwrap();
        let e = plan.with_dataset(d(), &o, None).unwrap_err().to_string();
        assert!(e.contains(says) && e.contains("dataset"), "{e}");
    }
}

#[test]
fn the_same_seed_draws_the_same_entries() {
    let text: String = (0..100)
        .map(|i| format!("{{\"prompt\": \"p{i}\"}}\n"))
        .collect();
    let prompts = |seed: Option<u64>, entropy: u64| -> Vec<String> {
        let o = options(seed);
        let plan = PromptPlan::new(&o, None, entropy, None)
            .unwrap()
            .with_dataset(parse(&text).unwrap(), &o, None)
            .unwrap();
        (0..20)
            .map(|i| plan.input(i, None).unwrap().messages[0].content.clone())
            .collect()
    };
    assert_eq!(prompts(Some(3), 1), prompts(Some(3), 2));
    assert_ne!(prompts(Some(3), 1), prompts(Some(4), 1));
    assert_ne!(prompts(None, 1), prompts(None, 2));
}

/// Counts a text as its number of characters: a stand-in tokenizer whose counts differ
/// from the ⌈characters / 4⌉ estimate.
struct CharCounter;

impl crate::tokens::TokenCounter for CharCounter {
    fn count(&self, text: &str) -> crate::error::Result<u32> {
        Ok(text.chars().count() as u32)
    }

    fn name(&self) -> &str {
        "chars"
    }
}

#[test]
fn with_a_tokenizer_a_reference_answer_is_counted_not_estimated() {
    let d = parse(concat!(
        "[{\"conversations\": [{\"from\": \"human\", \"value\": \"Q\"}, {\"from\": \"gpt\", \"value\": \"twelve chars\"}]},\n",
        " {\"prompt\": \"P\", \"max_tokens\": 5}]",
    ))
    .unwrap();
    let o = options(Some(2));
    let plan = PromptPlan::new(&o, None, 0, None)
        .unwrap()
        .with_dataset(d.clone(), &o, None)
        .unwrap();
    let caps = |counter: Option<&dyn crate::tokens::TokenCounter>| {
        let mut caps: Vec<Option<u32>> = (0..2)
            .map(|i| plan.input(i, counter).unwrap().max_tokens)
            .collect();
        caps.sort();
        caps
    };
    // "twelve chars": estimated ⌈12 / 4⌉ = 3, counted 12; an entry's own cap stays.
    assert_eq!(caps(None), [Some(3), Some(5)]);
    assert_eq!(caps(Some(&CharCounter)), [Some(5), Some(12)]);
    assert_eq!(
        d.entries()[1].answer,
        None,
        "an entry's own cap is not an answer"
    );
    assert!(matches!(
        d.prompt_source(Some("chars".into())),
        PromptSource::Dataset { tokenizer: Some(t), .. } if t == "chars"
    ));
}

#[test]
fn an_answer_too_long_to_count_keeps_its_estimate() {
    let long = "x".repeat(super::MAX_COUNTED_ANSWER_BYTES + 1);
    let d = parse(&format!(
        "{{\"messages\": [{{\"role\": \"user\", \"content\": \"Q\"}}, {{\"role\": \"assistant\", \"content\": \"{long}\"}}]}}"
    ))
    .unwrap();
    let e = &d.entries()[0];
    assert_eq!(e.answer, None);
    assert_eq!(
        e.output_tokens,
        Some((super::MAX_COUNTED_ANSWER_BYTES as u32 + 1).div_ceil(4))
    );
    let o = options(Some(1));
    let plan = PromptPlan::new(&o, None, 0, None)
        .unwrap()
        .with_dataset(d.clone(), &o, None)
        .unwrap();
    assert_eq!(
        plan.input(0, Some(&CharCounter)).unwrap().max_tokens,
        e.output_tokens
    );
}

/// Issue 35: a prefilled page link could name a dataset whose entries ask for up to
/// 1,048,576 output tokens, past the form's limit of 32,768. With `max_tokens_limit` (the
/// page passes its form's) an entry's cap, given or taken from its reference answer, is
/// lowered to the limit; the run's own `max_tokens` above it is refused.
#[test]
fn the_max_tokens_limit_lowers_every_entrys_output_cap() {
    let answer = "x".repeat(200_000);
    let text = format!(
        "{{\"prompt\": \"a\", \"max_tokens\": 1048576}}\n\
         {{\"prompt\": \"b\", \"max_tokens\": 12}}\n\
         {{\"messages\": [{{\"role\": \"user\", \"content\": \"c\"}}, \
         {{\"role\": \"assistant\", \"content\": \"{answer}\"}}]}}\n"
    );
    let d = parse(&text).unwrap();
    let caps = |limit: Option<u32>| {
        let o = BenchOptions {
            max_tokens_limit: limit,
            ..options(Some(3))
        };
        o.validate().unwrap();
        let plan = PromptPlan::new(&o, None, 0, None)
            .unwrap()
            .with_dataset(d.clone(), &o, None)
            .unwrap();
        let mut caps: Vec<Option<u32>> = (0..3)
            .map(|i| plan.input(i, None).unwrap().max_tokens)
            .collect();
        caps.sort();
        caps
    };
    assert_eq!(caps(None), vec![Some(12), Some(50_000), Some(1_048_576)]);
    assert_eq!(
        caps(Some(32_768)),
        vec![Some(12), Some(32_768), Some(32_768)]
    );
    let over = BenchOptions {
        max_tokens: 40_000,
        max_tokens_limit: Some(32_768),
        ..options(None)
    };
    let e = over.validate().unwrap_err().to_string();
    assert!(e.contains("32768"), "{e}");
}
