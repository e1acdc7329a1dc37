//! The generation loop against a scripted model: stop conditions, stop strings across token
//! boundaries, cancellation, the context limit, per-token timestamps and KV-cache reuse.
#![allow(clippy::unwrap_used)]

mod tokenizer_support;

use tokenizer_support::tiny_byte_level;
use tpsmeter_model::generate::{
    CancelToken, GenerateParams, Generation, Generator, ModelShape, StopReason, TokenEvent,
    TokenStep,
};
use tpsmeter_model::{ModelError, Result};

const EOS: u32 = 265;

/// Answers each step with the next id of a script, and records every call, checking the
/// positions are the ones its own cache would need.
struct Scripted {
    script: Vec<u32>,
    next: usize,
    context: usize,
    /// (tokens, start) per call.
    calls: Vec<(Vec<u32>, usize)>,
    /// What the fake cache holds, position by position.
    cache: Vec<u32>,
}

impl Scripted {
    fn new(script: &[u32], context: usize) -> Self {
        Self {
            script: script.to_vec(),
            next: 0,
            context,
            calls: Vec::new(),
            cache: Vec::new(),
        }
    }
}

impl TokenStep for Scripted {
    type Error = ModelError;

    async fn step(&mut self, tokens: &[u32], start: usize) -> Result<u32> {
        assert!(!tokens.is_empty());
        assert!(
            start <= self.cache.len(),
            "start {start} skips unfilled positions"
        );
        assert!(start + tokens.len() <= self.context);
        self.calls.push((tokens.to_vec(), start));
        self.cache.truncate(start);
        self.cache.extend_from_slice(tokens);
        let id = self.script[self.next % self.script.len()];
        self.next += 1;
        Ok(id)
    }
}

impl ModelShape for Scripted {
    fn max_context(&self) -> usize {
        self.context
    }

    fn vocab_size(&self) -> usize {
        256
    }
}

fn bytes(s: &str) -> Vec<u32> {
    s.bytes().map(u32::from).collect()
}

struct Run {
    generation: Generation,
    events: Vec<TokenEvent>,
}

fn run(
    generator: &mut Generator<Scripted>,
    prompt: &[u32],
    params: &GenerateParams,
    cancel_after: Option<usize>,
) -> Result<Run> {
    let tok = tiny_byte_level();
    let cancel = CancelToken::new();
    let mut now = 0.0;
    let mut clock = || {
        now += 10.0;
        now
    };
    let mut events = Vec::new();
    let mut on_event = |e: &TokenEvent| {
        events.push(e.clone());
        if cancel_after.is_some_and(|n| events.len() >= n) {
            cancel.cancel();
        }
    };
    let generation = pollster::block_on(generator.generate(
        &tok,
        prompt,
        params,
        &cancel,
        &mut clock,
        &mut on_event,
    ))?;
    Ok(Run { generation, events })
}

fn params(max_tokens: usize) -> GenerateParams {
    GenerateParams {
        max_tokens,
        ..GenerateParams::default()
    }
}

#[test]
fn stops_at_eos_without_showing_it_and_stamps_every_token() {
    let mut g = Generator::new(Scripted::new(
        &[b'h' as u32, b'i' as u32, EOS, b'x' as u32],
        64,
    ));
    let r = run(&mut g, &bytes("Q:"), &params(100), None).unwrap();
    assert_eq!(
        r.generation.stop,
        StopReason::EndOfGeneration { token: EOS }
    );
    assert_eq!(r.generation.text, "hi");
    assert_eq!(r.generation.tokens, vec![104, 105, EOS]);
    // Clock: 10 at start, then one reading per sampled token, one at the end.
    assert_eq!(r.generation.start, 10.0);
    assert_eq!(r.generation.token_times, vec![20.0, 30.0, 40.0]);
    assert_eq!(r.generation.end, 50.0);
    let texts: Vec<&str> = r.events.iter().map(|e| e.text.as_str()).collect();
    assert_eq!(texts, ["h", "i"]);
    // The prompt ran once in full, then one token per step at the next position.
    let calls = &g.model().calls;
    assert_eq!(calls[0], (bytes("Q:"), 0));
    assert_eq!(calls[1], (vec![104], 2));
    assert_eq!(calls[2], (vec![105], 3));
    assert_eq!(calls.len(), 3);
}

#[test]
fn ignore_eos_runs_to_max_tokens() {
    let mut g = Generator::new(Scripted::new(&[EOS], 64));
    let p = GenerateParams {
        ignore_eos: true,
        ..params(5)
    };
    let r = run(&mut g, &bytes("a"), &p, None).unwrap();
    assert_eq!(r.generation.stop, StopReason::MaxTokens);
    assert_eq!(r.generation.tokens.len(), 5);
}

#[test]
fn max_tokens_ends_generation() {
    let mut g = Generator::new(Scripted::new(&[b'a' as u32], 64));
    let r = run(&mut g, &bytes("x"), &params(3), None).unwrap();
    assert_eq!(r.generation.stop, StopReason::MaxTokens);
    assert_eq!(r.generation.text, "aaa");
    // The third token was sampled but never fed back: two decode steps after the prefill.
    assert_eq!(g.model().calls.len(), 3);
}

#[test]
fn a_stop_string_split_across_tokens_is_never_shown() {
    // "ok S" "T" "O" "P" where "STOP" is the stop string; "S", "ST", "STO" are held back.
    let script = [
        b'o' as u32,
        b'k' as u32,
        b' ' as u32,
        b'S' as u32,
        b'T' as u32,
        b'O' as u32,
        b'P' as u32,
        b'!' as u32,
    ];
    let mut g = Generator::new(Scripted::new(&script, 64));
    let p = GenerateParams {
        stop_strings: vec!["never".to_owned(), "STOP".to_owned()],
        ..params(100)
    };
    let r = run(&mut g, &bytes("go"), &p, None).unwrap();
    assert_eq!(r.generation.stop, StopReason::StopString { index: 1 });
    assert_eq!(r.generation.text, "ok ");
    let shown: String = r.events.iter().map(|e| e.text.as_str()).collect();
    assert_eq!(shown, "ok ");
    assert!(
        r.events.iter().all(|e| !e.text.contains('S')),
        "{:?}",
        r.events
    );
    // The stop string's characters were sampled (and counted), just not shown.
    assert_eq!(r.generation.tokens.len(), 7);
}

#[test]
fn a_stop_string_inside_one_token_cuts_that_token() {
    // Token 263 is "STOP" whole, preceded by "he".
    let mut g = Generator::new(Scripted::new(&[256, 263, b'x' as u32], 64));
    let p = GenerateParams {
        stop_strings: vec!["eST".to_owned()],
        ..params(100)
    };
    let r = run(&mut g, &bytes("go"), &p, None).unwrap();
    assert_eq!(r.generation.stop, StopReason::StopString { index: 0 });
    assert_eq!(r.generation.text, "h");
}

#[test]
fn held_back_text_that_never_completes_is_released_at_the_end() {
    let mut g = Generator::new(Scripted::new(&[b'a' as u32, b'S' as u32, b'T' as u32], 64));
    let p = GenerateParams {
        stop_strings: vec!["STOP".to_owned()],
        ..params(3)
    };
    let r = run(&mut g, &bytes("go"), &p, None).unwrap();
    assert_eq!(r.generation.stop, StopReason::MaxTokens);
    assert_eq!(r.generation.text, "aST");
    let last = r.events.last().unwrap();
    assert_eq!((last.token, last.text.as_str()), (None, "ST"));
}

#[test]
fn cancel_takes_effect_before_the_next_step() {
    let mut g = Generator::new(Scripted::new(&[b'a' as u32], 64));
    let r = run(&mut g, &bytes("x"), &params(100), Some(2)).unwrap();
    assert_eq!(r.generation.stop, StopReason::Cancelled);
    assert_eq!(r.generation.tokens.len(), 2);
    assert_eq!(g.model().calls.len(), 2, "no step after the cancel");
}

#[test]
fn a_prompt_longer_than_the_context_is_a_typed_error() {
    let mut g = Generator::new(Scripted::new(&[b'a' as u32], 4));
    let err = run(&mut g, &bytes("hello"), &params(10), None)
        .err()
        .unwrap();
    assert!(
        matches!(
            err,
            ModelError::ContextFull {
                position: 5,
                limit: 4
            }
        ),
        "{err}"
    );
    assert!(g.model().calls.is_empty());
    let err = run(&mut g, &[], &params(10), None).err().unwrap();
    assert!(matches!(err, ModelError::EmptyPrompt), "{err}");
}

#[test]
fn reaching_the_context_limit_stops_with_what_was_generated() {
    let mut g = Generator::new(Scripted::new(&[b'a' as u32], 6));
    let r = run(&mut g, &bytes("abcd"), &params(100), None).unwrap();
    assert_eq!(r.generation.stop, StopReason::ContextFull);
    // Positions 4 and 5 take the first two generated tokens; the third has no slot.
    assert_eq!(r.generation.tokens.len(), 3);
    assert_eq!(r.generation.text, "aaa");
    assert_eq!(g.cached_tokens().len(), 6);
}

#[test]
fn the_next_turn_reuses_the_shared_prefix_of_the_cache() {
    let mut g = Generator::new(Scripted::new(&[b'y' as u32, b'o' as u32, EOS], 64));
    let first = bytes("<u>hi</u>");
    let r = run(&mut g, &first, &params(100), None).unwrap();
    assert_eq!(r.generation.text, "yo");
    assert_eq!(r.generation.reused_tokens, 0);
    // The cache holds the prompt and the generated tokens that were fed back ("yo"; EOS was
    // sampled but never run).
    let mut expect_cache = first.clone();
    expect_cache.extend(bytes("yo"));
    assert_eq!(g.cached_tokens(), expect_cache.as_slice());

    // Turn two: history + reply + new message, as a template renders it.
    let mut second = expect_cache.clone();
    second.extend(bytes("<u>more</u>"));
    let calls_before = g.model().calls.len();
    let r = run(&mut g, &second, &params(100), None).unwrap();
    assert_eq!(r.generation.reused_tokens, expect_cache.len());
    let (fed, start) = &g.model().calls[calls_before];
    assert_eq!(*start, expect_cache.len());
    assert_eq!(fed, &bytes("<u>more</u>"));
    // The fake checks each start against its own cache: it held exactly the kept prefix.
    assert_eq!(&g.model().cache[..*start], &second[..*start]);

    // A diverging prompt keeps only the common part; an identical one re-runs its last token.
    let third = bytes("<u>other</u>");
    let r = run(&mut g, &third, &params(1), None).unwrap();
    assert_eq!(r.generation.reused_tokens, 3);
    let again = run(&mut g, &third[..5], &params(1), None).unwrap();
    assert_eq!(again.generation.reused_tokens, 4);
    g.forget_cache();
    let fresh = run(&mut g, &third, &params(1), None).unwrap();
    assert_eq!(fresh.generation.reused_tokens, 0);
}

/// A model that runs prompts in chunks and is cancelled while the first runs (as the UI's
/// abort arrives from another task): it stops there and samples nothing.
struct CancelledMidPrompt(Scripted);

impl TokenStep for CancelledMidPrompt {
    type Error = ModelError;

    async fn step(&mut self, tokens: &[u32], start: usize) -> Result<u32> {
        self.0.step(tokens, start).await
    }

    async fn step_cancellable(
        &mut self,
        tokens: &[u32],
        start: usize,
        cancel: &CancelToken,
    ) -> Result<Option<u32>> {
        self.0.calls.push((tokens[..1].to_vec(), start));
        cancel.cancel();
        Ok(None)
    }
}

impl ModelShape for CancelledMidPrompt {
    fn max_context(&self) -> usize {
        self.0.context
    }

    fn vocab_size(&self) -> usize {
        256
    }
}

/// Before: the loop checked the cancel token only after the prompt's whole step returned.
/// A prompt stopped between its chunks ends the generation as cancelled, with no token,
/// and none of the prompt counts as cached (the next turn runs it again from its start).
#[test]
fn a_prompt_cancelled_between_chunks_ends_cancelled_and_caches_nothing() {
    let mut g = Generator::new(CancelledMidPrompt(Scripted::new(&[b'x' as u32], 64)));
    let tok = tiny_byte_level();
    let cancel = CancelToken::new();
    let mut now = 0.0;
    let mut events = 0;
    let out = pollster::block_on(g.generate(
        &tok,
        &bytes("a long prompt"),
        &params(8),
        &cancel,
        &mut || {
            now += 1.0;
            now
        },
        &mut |_| events += 1,
    ))
    .unwrap();
    assert_eq!(out.stop, StopReason::Cancelled);
    assert!(out.tokens.is_empty(), "{:?}", out.tokens);
    assert_eq!(events, 0);
    assert!(g.cached_tokens().is_empty(), "{:?}", g.cached_tokens());
    assert_eq!(g.model().0.calls.len(), 1, "stepped after the cancel");
}
