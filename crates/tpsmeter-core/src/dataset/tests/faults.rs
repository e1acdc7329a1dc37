//! What a bad file gets: the line, entry and field named, and every cap an error.
#![allow(clippy::unwrap_used)]
use super::*;

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
