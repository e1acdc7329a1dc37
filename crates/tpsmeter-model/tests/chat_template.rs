//! Chat templates rendered with minijinja: SmolLM2's own ChatML template from its GGUF, and
//! the helpers real Hugging Face templates call.
#![allow(clippy::unwrap_used)]

mod tokenizer_support;

use tokenizer_support::{model_path, tokenizer_from_gguf};
use tpsmeter_model::ModelError;
use tpsmeter_model::chat::{ChatMessage, ChatTemplate, RenderOptions};

fn opts(add_generation_prompt: bool) -> RenderOptions {
    RenderOptions {
        add_generation_prompt,
        ..RenderOptions::default()
    }
}

/// ChatML as SmolLM2 was trained on it, written out by hand from the model card's format.
#[test]
fn smollm2_template_renders_chatml() {
    let Some(model) = model_path() else { return };
    let tok = tokenizer_from_gguf(&model);
    let template = ChatTemplate::from_tokenizer(&tok).unwrap();
    let messages = [ChatMessage::new("user", "What is 2+2?")];
    let text = template.render(&messages, &opts(true)).unwrap();
    assert_eq!(
        text,
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n\
         <|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"
    );
    // A system message replaces the default one; no generation prompt when not asked.
    let messages = [
        ChatMessage::new("system", "Be brief."),
        ChatMessage::new("user", "Hi"),
        ChatMessage::new("assistant", "Hello."),
    ];
    let text = template.render(&messages, &opts(false)).unwrap();
    assert_eq!(
        text,
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n\
         <|im_start|>assistant\nHello.<|im_end|>\n"
    );
    // The rendered prompt tokenizes with the control tokens as single ids.
    let ids = tok.encode(&text, true).unwrap();
    let im_start = tok.encode("<|im_start|>", false).unwrap();
    assert_eq!(im_start.len(), 1);
    assert_eq!(ids.iter().filter(|&&t| t == im_start[0]).count(), 3);
}

#[test]
fn raise_exception_becomes_a_template_error_with_its_message() {
    let t = ChatTemplate::new(
        "{% if messages[0]['role'] != 'user' %}{{ raise_exception('first must be user') }}{% endif %}ok",
        "",
        "",
    )
    .unwrap();
    assert_eq!(
        t.render(&[ChatMessage::new("user", "x")], &opts(false))
            .unwrap(),
        "ok"
    );
    let err = t
        .render(&[ChatMessage::new("system", "x")], &opts(false))
        .unwrap_err();
    assert!(
        matches!(&err, ModelError::ChatTemplate { reason } if reason.contains("first must be user")),
        "{err}"
    );
}

#[test]
fn syntax_errors_are_reported_at_compile_time() {
    let err = ChatTemplate::new("{% for m in messages %}{{ m.content }", "", "").unwrap_err();
    assert!(matches!(err, ModelError::ChatTemplate { .. }), "{err}");
}

#[test]
fn tojson_writes_python_json_dumps_output() {
    let t = ChatTemplate::new(
        "{{ tools | tojson }}|{{ tools[0] | tojson(indent=2) }}",
        "",
        "",
    )
    .unwrap();
    let mut options = RenderOptions::default();
    options
        .set_json(
            "tools",
            r#"[{"name": "f<x>", "z": 1.0, "a": [1, true, null], "s": "é\"\n"}]"#,
        )
        .unwrap();
    let text = t.render(&[], &options).unwrap();
    // Key order kept, ", " and ": " separators, no HTML escaping, non-ASCII kept, 1.0 stays
    // a float: what `json.dumps(x, ensure_ascii=False)` prints.
    assert_eq!(
        text,
        "[{\"name\": \"f<x>\", \"z\": 1.0, \"a\": [1, true, null], \"s\": \"é\\\"\\n\"}]|{\n  \"name\": \"f<x>\",\n  \"z\": 1.0,\n  \"a\": [\n    1,\n    true,\n    null\n  ],\n  \"s\": \"é\\\"\\n\"\n}"
    );
}

#[test]
fn strftime_now_uses_the_callers_time_and_fails_clearly_without_it() {
    let t = ChatTemplate::new("Today Date: {{ strftime_now('%d %b %Y') }}", "", "").unwrap();
    let with_time = RenderOptions {
        now_unix_seconds: Some(1_721_747_045),
        ..RenderOptions::default()
    };
    assert_eq!(
        t.render(&[], &with_time).unwrap(),
        "Today Date: 23 Jul 2024"
    );
    let err = t.render(&[], &opts(false)).unwrap_err();
    assert!(err.to_string().contains("now_unix_seconds"), "{err}");
}

#[test]
fn python_string_methods_and_trim_blocks_work_like_transformers() {
    let source = "{% for m in messages %}\n  {% if m.content.startswith('  ') %}\n{{ m.content.strip() | upper }}\n  {% else %}\n{{ m['content'].split(',') | join('|') }}\n  {% endif %}\n{% endfor %}{{ bos_token ~ eos_token }}";
    let t = ChatTemplate::new(source, "<s>", "</s>").unwrap();
    let messages = [
        ChatMessage::new("user", "  padded "),
        ChatMessage::new("user", "a,b"),
    ];
    // trim_blocks eats the newline after each block tag, lstrip_blocks the indentation
    // before one; the newline after an expression stays.
    assert_eq!(
        t.render(&messages, &opts(false)).unwrap(),
        "PADDED\na|b\n<s></s>"
    );
}

#[test]
fn endless_templates_are_stopped() {
    let t = ChatTemplate::new(
        "{% for i in range(10000) %}{% for j in range(10000) %}x{% endfor %}{% endfor %}",
        "",
        "",
    )
    .unwrap();
    assert!(matches!(
        t.render(&[], &opts(false)),
        Err(ModelError::ChatTemplate { .. })
    ));
}

/// A lower budget stops what the default one lets finish.
#[test]
fn set_fuel_changes_the_instruction_budget() {
    let source = "{% for i in range(2000) %}{{ i }}{% endfor %}";
    let mut t = ChatTemplate::new(source, "", "").unwrap();
    assert!(t.render(&[], &opts(false)).is_ok());
    t.set_fuel(1_000);
    let err = t.render(&[], &opts(false)).unwrap_err().to_string();
    assert!(err.contains("fuel"), "{err}");
}

/// Few instructions, each writing 100 kB (minijinja's own cap on one string repetition is
/// 100 MB): fuel alone would let this write 1 GB before stopping it. The render cap stops
/// it at `MAX_RENDER_BYTES`.
#[test]
fn templates_writing_past_the_render_cap_are_stopped() {
    let t = ChatTemplate::new(
        "{% for i in range(10000) %}{{ 'x' * 100000 }}{% endfor %}",
        "",
        "",
    )
    .unwrap();
    match t.render(&[], &opts(false)) {
        Err(ModelError::LimitExceeded { limit, .. }) => {
            assert_eq!(limit, tpsmeter_model::chat::MAX_RENDER_BYTES as u64);
        }
        other => panic!("expected the render cap, got {other:?}"),
    }
}

/// Found by the `chat_template` fuzz target (crash-c8640f23…, minimized): a namespace assigned
/// into itself, then printed, overflowed the stack inside minijinja 3.0.5 (it prints, compares
/// and drops values by recursion with no depth guard) and aborted the process. A namespace
/// now stores a snapshot of what is assigned to it, so the cycle cannot form.
#[test]
fn self_referential_namespace_does_not_overflow_the_stack() {
    let t = ChatTemplate::new(
        "{% set ns = namespace(n=0) %}{% set ns.n = ns %}{{ ns }}",
        "",
        "",
    )
    .unwrap();
    let text = t.render(&[], &opts(false)).unwrap();
    assert_eq!(text, "{'n': {'n': 0}}");
}

/// Found by the `chat_template` fuzz target (crash-6e2d83a1…): a printf width of 6.4e17 in
/// the `format` filter made minijinja allocate that many bytes of padding at once, which
/// aborts the process. Widths and precisions over `MAX_PAD`, in `format`, `str.format()` and
/// `indent`, and counts of `slice` and `batch` over it, are template errors now; the small
/// ones real templates use still work.
#[test]
fn huge_widths_and_counts_are_errors_not_allocations() {
    for source in [
        "{{ '%0645970003280702122d' | format(3) }}",
        "{{ '%.99999999f' | format(1.5) }}",
        "{{ '%*d' | format(4000000000, 1) }}",
        "{{ '{:>99999999999}'.format('x') }}",
        "{{ '{:>{}}'.format('x', 9999999) }}",
        "{{ 'a\nb' | indent(1000000000) }}",
        "{{ 'a\nb' | indent(width=1000000000, first=true) }}",
        "{{ [1] | slice(10000000000) | length }}",
        "{{ [1, 2] | batch(10000000000, 0) | length }}",
    ] {
        let t = ChatTemplate::new(source, "", "").unwrap();
        let err = t.render(&[], &opts(false)).unwrap_err();
        assert!(
            matches!(&err, ModelError::ChatTemplate { reason } if reason.contains("limit of 1024")),
            "{source}: {err}"
        );
    }
    let t = ChatTemplate::new(
        "{{ '%05d|%-4s|%.2f' | format(42, 'ab', 2.5) }}|{{ '{:>6}'.format('x') }}|{{ 'a\nb' | indent(4, first=true) }}|{{ [1, 2, 3] | slice(2) | list }}|{{ [1, 2, 3] | batch(2, 0) | list }}",
        "",
        "",
    )
    .unwrap();
    assert_eq!(
        t.render(&[], &opts(false)).unwrap(),
        "00042|ab  |2.50|     x|    a\n    b|[[1, 2], [3]]|[[1, 2], [3, 0]]"
    );
}

/// The chat_template fuzzer's crash of session 11: minijinja 3.0.5's format parser reads a
/// printf key or a `str.format()` index one byte at a time and slices the string there, so
/// a multi-byte character in one panicked (natively the render thread's panic, an error; in
/// the browser, an abort of the engine's Worker). Each is now a template error that says
/// why, and ASCII keys still format.
#[test]
fn non_ascii_format_keys_are_errors_not_panics() {
    for source in [
        // The fuzzer's input, reduced: a replacement character in a printf key.
        "{{ '%(\u{fffd})s' | format(2) }}",
        "{{ '%(é)s' | format({'é': 1}) }}",
        "{{ 'a %(日本' | format(1) }}",
        "{{ '{0[é]}'.format({'é': 1}) }}",
        "{{ '{0[a][日本]}'.format({'a': {}}) }}",
        "{{ '{x[\u{fffd}'.format(x=1) }}",
    ] {
        let t = ChatTemplate::new(source, "", "").unwrap();
        let err = t.render(&[], &opts(false)).unwrap_err();
        assert!(
            matches!(&err, ModelError::ChatTemplate { reason } if reason.contains("must be ASCII")),
            "{source}: {err}"
        );
    }
    let t = ChatTemplate::new(
        "{{ '%(a)s|é' | format({'a': 1}) }}|{{ '{0[b]}é'.format({'b': 2}) }}",
        "",
        "",
    )
    .unwrap();
    assert_eq!(t.render(&[], &opts(false)).unwrap(), "1|é|2é");
}

/// Other ways to close a cycle through a namespace: a lazy view of it, a second namespace
/// created around it, a list holding it, a macro printing it. Each renders a finite text.
#[test]
fn namespace_cycles_through_views_lists_and_other_namespaces_cannot_form() {
    for source in [
        "{% set ns = namespace(a=1) %}{% set ns.x = ns|items %}{{ ns }}|{{ ns == ns }}",
        "{% set ns = namespace(a=1) %}{% set ns.x = ns|list %}{% set ns.y = [ns, ns] %}{{ ns }}",
        "{% set a = namespace() %}{% set b = namespace(a=a) %}{% set a.b = b %}{{ a }}{{ b }}{{ a ~ b }}",
        "{% set ns = namespace(a=1) %}{% set ns.x = ns|chain(ns) %}{{ ns }}{{ ns|tojson }}",
        "{% set ns = namespace() %}{% macro m() %}{{ ns }}{% endmacro %}{% set ns.m = m %}{{ ns }}{{ m() }}",
        "{% set ns = namespace(a=1) %}{% set ns.x, ns.y = ns, [ns] %}{{ ns }}",
        "{% set ns = namespace(a=1) %}{% set ns.x | chain(ns) %}text{% endset %}{{ ns }}",
    ] {
        let t = ChatTemplate::new(source, "", "").unwrap();
        let text = t
            .render(&[], &opts(false))
            .unwrap_or_else(|e| panic!("{source}: {e}"));
        assert!(!text.is_empty() && text.len() < 4096, "{source}: {text}");
    }
}

/// A namespace grown one level per loop turn would print and drop by deeper recursion than
/// any stack holds; it is stopped at `MAX_STORED_DEPTH` with an error saying so.
#[test]
fn values_grown_through_a_namespace_stop_at_the_depth_cap() {
    let t = ChatTemplate::new(
        "{% set ns = namespace(x=[]) %}{% for j in range(30) %}{% for i in range(10000) %}\
         {% set ns.x = [ns.x] %}{% endfor %}{% endfor %}{{ ns.x }}",
        "",
        "",
    )
    .unwrap();
    let err = t.render(&[], &opts(false)).unwrap_err().to_string();
    assert!(
        err.contains(&format!(
            "nest at most {}",
            tpsmeter_model::chat::MAX_STORED_DEPTH
        )),
        "{err}"
    );
}

/// Copying a large list into a namespace over and over would run for a long time outside the
/// instruction fuel; the copies have a per-render budget.
#[test]
fn copies_into_namespaces_have_a_budget() {
    let t = ChatTemplate::new(
        "{% set ns = namespace(x=range(50000)|list) %}{% for i in range(1000) %}\
         {% set ns.y = ns.x %}{% endfor %}done",
        "",
        "",
    )
    .unwrap();
    let err = t.render(&[], &opts(false)).unwrap_err().to_string();
    assert!(err.contains("elements into namespaces"), "{err}");
}

/// The fuzzer's out-of-memory input (`chat_template`, session 11), in its shape: over 16
/// messages a namespace string is concatenated with the namespace's own repr, which escapes
/// the string again, so it more than doubles per turn, then is repeated. It asked for one
/// 512 MiB allocation; now the `set` that would store more than `MAX_STORED_STRING_BYTES`
/// fails, long before. Unfixed, this renders and allocates hundreds of MiB.
#[test]
fn strings_grown_through_a_namespace_stop_at_the_string_cap() {
    let t = ChatTemplate::new(
        "{% set ns = namespace(s='\"\\\\') %}{% for m in messages %}\
         {% set ns.s = ns.s ~ m.content ~ ns %}{% endfor %}{{ (ns.s * 4)|length }}",
        "",
        "",
    )
    .unwrap();
    let messages: Vec<ChatMessage> = (0..16)
        .map(|i| ChatMessage::new("user", format!("\"{i}")))
        .collect();
    let err = t.render(&messages, &opts(false)).unwrap_err().to_string();
    let cap = tpsmeter_model::chat::MAX_STORED_STRING_BYTES;
    assert!(
        err.contains(&format!("longer than the {cap} a `set` may store")),
        "{err}"
    );
    // The same template over 3 messages stays small and renders.
    let text = t.render(&messages[..3], &opts(false)).unwrap();
    assert!(text.parse::<usize>().unwrap() < 4096, "{text}");
}

/// Doubling a string with plain `set`s needs no loop and no namespace: 25 lines reach
/// 256 MiB. Each `set` checks what it stores.
#[test]
fn strings_doubled_by_plain_sets_stop_at_the_string_cap() {
    let source = format!(
        "{{% set a = 'xxxxxxxx' %}}{}{{{{ a|length }}}}",
        "{% set a = a ~ a %}".repeat(25)
    );
    let t = ChatTemplate::new(&source, "", "").unwrap();
    let err = t.render(&[], &opts(false)).unwrap_err().to_string();
    assert!(err.contains("a `set` may store"), "{err}");
    // Block sets, tuple unpacking and namespaces made by plain sets still work.
    let t = ChatTemplate::new(
        "{% set a, b = 'x', 2 %}{% set c | upper %}{{ a * b }}{% endset %}\
         {% set ns = namespace(n=c) %}{% set ns.n = ns.n ~ '!' %}{{ ns.n }}",
        "",
        "",
    )
    .unwrap();
    assert_eq!(t.render(&[], &opts(false)).unwrap(), "XX!");
}

/// A macro that calls itself with its argument doubled grows it 2^k-fold in k levels (10
/// levels from 100 kB: 100 MB, unfixed; 2^k times the template's largest string, k about
/// 30 under the recursion limit); each call checks its parameters as its body starts. Whitespace control
/// on the macro tag and defaults with commas still work.
#[test]
fn strings_doubled_through_macro_recursion_stop_at_the_string_cap() {
    let t = ChatTemplate::new(
        "{% macro f(s, n) %}{% if n > 0 %}{{ f(s ~ s, n - 1) }}{% else %}{{ s|length }}\
         {% endif %}{% endmacro %}{{ f('x' * 100000, 10) }}",
        "",
        "",
    )
    .unwrap();
    let err = t.render(&[], &opts(false)).unwrap_err().to_string();
    assert!(err.contains("a `set` may store"), "{err}");
    let t = ChatTemplate::new(
        "{% macro g(a, b=[1, (2, 3)], c='x') -%}\n  {{ a }}{{ b|length }}{{ c }}{% endmacro %}\
         {{ g('y') }}|{{ g('z', c='w') }}",
        "",
        "",
    )
    .unwrap();
    assert_eq!(t.render(&[], &opts(false)).unwrap(), "y2x|z2w");
}

/// A string kept within the cap but stored again and again (a quadratic accumulation taken
/// too far) is stopped by the per-render byte budget.
#[test]
fn stored_string_bytes_have_a_budget() {
    let t = ChatTemplate::new(
        "{% set ns = namespace(s='x' * 8000000) %}{% for i in range(1000) %}\
         {% set ns.t = ns.s %}{% endfor %}done",
        "",
        "",
    )
    .unwrap();
    let err = t.render(&[], &opts(false)).unwrap_err().to_string();
    assert!(err.contains("bytes of strings with `set`"), "{err}");
}

/// The deepest values a template's own text can build, at the largest template accepted:
/// nested list literals up to the parser's limit, repeated; a long filter chain that nests
/// one level per filter; recursion to the limit, nesting at each call. Printed, compared and
/// dropped, each renders or fails with an error; none may abort the process.
#[test]
fn the_deepest_values_a_template_can_spell_do_not_overflow_the_stack() {
    let cap = tpsmeter_model::chat::MAX_TEMPLATE_BYTES;
    let tail = "{{ x|length }}{{ x == x }}{{ x }}";
    let fill = |head: &str, step: &str| {
        let mut s = head.to_owned();
        while s.len() + step.len() + tail.len() <= cap {
            s.push_str(step);
        }
        s.push_str(tail);
        s
    };
    let nested = format!("{{% set x = {}x{} %}}", "[".repeat(140), "]".repeat(140));
    let sources = [
        fill("{% set x = 1 %}", &nested),
        fill("{% set x = 1 %}{% set x = x", "|batch(1)").replace(tail, &format!(" %}}{tail}")),
        fill("{{ 1", "+1").replace(tail, " }}"),
        fill("{{ x", ".a").replace(tail, " }}"),
        fill("{{ (", "1,(").replace(tail, " }}"),
        format!(
            "{{% macro m(x, n) %}}{{% if n > 0 %}}{{{{ m({}x{}, n - 1) }}}}{{% else %}}\
             {{{{ x|length }}}}{{{{ x }}}}{{% endif %}}{{% endmacro %}}{{{{ m(1, 98) }}}}",
            "[".repeat(140),
            "]".repeat(140)
        ),
    ];
    for source in sources {
        assert!(source.len() <= cap);
        if let Ok(t) = ChatTemplate::new(&source, "", "") {
            let _ = t.render(&[], &opts(false));
        }
    }
}
