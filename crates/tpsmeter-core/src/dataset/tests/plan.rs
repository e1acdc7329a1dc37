//! The prompt plan a dataset makes: estimates, seeds, caps, and the options it refuses.
#![allow(clippy::unwrap_used)]
use super::*;

#[test]
fn estimates_are_a_quarter_of_the_characters() {
    assert_eq!(estimate_tokens(""), None);
    assert_eq!(estimate_tokens("a"), Some(1));
    assert_eq!(estimate_tokens("abcd"), Some(1));
    assert_eq!(estimate_tokens("abcde"), Some(2));
    assert_eq!(estimate_tokens("éééé"), Some(1), "characters, not bytes");
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
