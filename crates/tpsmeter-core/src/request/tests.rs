#![allow(clippy::unwrap_used)]

use serde_json::Value;

use super::*;

const KEY: &str = "sk-test-SECRET-0123456789";

fn spec(api: Api, base: &str) -> RequestSpec {
    RequestSpec {
        api,
        base_url: base.into(),
        model: "m-1".into(),
        messages: vec![Message::user("Hello")],
        system: Some("Be brief.".into()),
        max_tokens: 64,
        temperature: Some(0.7),
        api_key: Some(Secret::new(KEY)),
        ignore_eos: true,
    }
}

fn body(r: &HttpRequest) -> Value {
    serde_json::from_slice(&r.body).unwrap()
}

#[test]
fn every_api_streams_and_never_leaks_the_key_outside_its_header() {
    for api in Api::ALL {
        let r = build_request(&spec(api, "http://127.0.0.1:8080")).unwrap();
        assert_eq!(r.method, "POST");
        let debug = format!("{r:?} {:?}", spec(api, "http://x"));
        assert!(!debug.contains(KEY), "{api}: key in Debug: {debug}");
        assert!(!r.url.contains(KEY), "{api}: key in URL");
        assert!(
            !String::from_utf8_lossy(&r.body).contains(KEY),
            "{api}: key in body"
        );
        let carrying: Vec<_> = r
            .headers
            .iter()
            .filter(|(_, v)| v.as_str().contains(KEY))
            .collect();
        assert_eq!(
            carrying.len(),
            1,
            "{api}: exactly one header carries the key"
        );
        assert!(
            carrying[0].1.is_sensitive(),
            "{api}: key header not sensitive"
        );
        let b = body(&r);
        // Gemini streams by its URL, a Vercel UI route always streams: neither has `stream`.
        if !matches!(api, Api::Gemini | Api::VercelUi) {
            assert_eq!(b["stream"], true, "{api}");
        }
        if api != Api::Gemini {
            assert_eq!(b["model"], "m-1", "{api}");
        }
    }
}

#[test]
fn openai_chat_asks_for_usage_and_ignore_eos() {
    let r = build_request(&spec(Api::OpenaiChat, "http://h:1/v1/")).unwrap();
    assert_eq!(r.url, "http://h:1/v1/chat/completions");
    let b = body(&r);
    assert_eq!(b["stream_options"]["include_usage"], true);
    assert_eq!(b["max_tokens"], 64);
    assert_eq!(b["ignore_eos"], true);
    assert_eq!(b["temperature"].as_f64(), Some(0.7));
    assert_eq!(b["messages"][0]["role"], "system");
    assert_eq!(b["messages"][1]["content"], "Hello");
    assert_eq!(
        r.header("Authorization").unwrap().as_str(),
        format!("Bearer {KEY}")
    );
}

#[test]
fn ignore_eos_is_omitted_unless_asked() {
    let mut s = spec(Api::OpenaiCompletions, "http://h");
    s.ignore_eos = false;
    let r = build_request(&s).unwrap();
    assert_eq!(r.url, "http://h/v1/completions");
    let b = body(&r);
    assert!(b.get("ignore_eos").is_none());
    assert_eq!(b["prompt"], "Be brief.\n\nHello");
    assert_eq!(b["stream_options"]["include_usage"], true);
}

#[test]
fn responses_uses_instructions_and_max_output_tokens() {
    let r = build_request(&spec(Api::OpenaiResponses, "https://api.example.com/v1")).unwrap();
    assert_eq!(r.url, "https://api.example.com/v1/responses");
    let b = body(&r);
    assert_eq!(b["max_output_tokens"], 64);
    assert_eq!(b["instructions"], "Be brief.");
    assert_eq!(b["input"], "Hello");
}

#[test]
fn anthropic_sends_version_and_x_api_key() {
    let r = build_request(&spec(Api::Anthropic, "https://api.anthropic.com")).unwrap();
    assert_eq!(r.url, "https://api.anthropic.com/v1/messages");
    assert_eq!(
        r.header("anthropic-version").unwrap().as_str(),
        "2023-06-01"
    );
    assert_eq!(r.header("x-api-key").unwrap().as_str(), KEY);
    assert!(r.header("authorization").is_none());
    let b = body(&r);
    assert_eq!(b["system"], "Be brief.");
    assert_eq!(b["max_tokens"], 64);
}

#[test]
fn gemini_puts_the_key_in_a_header_and_streams_sse() {
    for base in [
        "https://generativelanguage.googleapis.com",
        "https://generativelanguage.googleapis.com/",
        "https://generativelanguage.googleapis.com/v1beta/",
    ] {
        let mut s = spec(Api::Gemini, base);
        s.model = "models/gemini-2.5-flash".into();
        let r = build_request(&s).unwrap();
        assert_eq!(
            r.url,
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(r.header("x-goog-api-key").unwrap().as_str(), KEY);
        let b = body(&r);
        assert_eq!(b["generationConfig"]["maxOutputTokens"], 64);
        assert_eq!(b["contents"][0]["parts"][0]["text"], "Hello");
        assert_eq!(b["systemInstruction"]["parts"][0]["text"], "Be brief.");
    }
}

#[test]
fn gemini_rejects_model_names_that_would_change_the_path() {
    for model in ["../x", "a/b", "m?key=1", ""] {
        let mut s = spec(Api::Gemini, "https://g");
        s.model = model.into();
        assert!(build_request(&s).is_err(), "{model}");
    }
}

#[test]
fn ollama_uses_api_paths_and_num_predict() {
    for base in [
        "http://localhost:11434",
        "http://localhost:11434/",
        "http://localhost:11434/v1",
        "http://localhost:11434/api/",
    ] {
        let r = build_request(&spec(Api::OllamaChat, base)).unwrap();
        assert_eq!(r.url, "http://localhost:11434/api/chat", "{base}");
        let r = build_request(&spec(Api::OllamaGenerate, base)).unwrap();
        assert_eq!(r.url, "http://localhost:11434/api/generate", "{base}");
        let b = body(&r);
        assert_eq!(b["options"]["num_predict"], 64);
        assert_eq!(b["system"], "Be brief.");
    }
}

#[test]
fn vercel_ui_posts_a_use_chat_body_to_the_url_as_given() {
    for (base, want) in [
        (
            "https://app.example/api/chat",
            "https://app.example/api/chat",
        ),
        (
            "https://app.example/api/chat/",
            "https://app.example/api/chat",
        ),
        ("http://127.0.0.1:3000", "http://127.0.0.1:3000"),
    ] {
        let r = build_request(&spec(Api::VercelUi, base)).unwrap();
        assert_eq!(r.url, want, "{base}");
        assert_eq!(r.header("accept").unwrap().as_str(), "text/event-stream");
        assert_eq!(
            r.header("authorization").unwrap().as_str(),
            format!("Bearer {KEY}")
        );
        let b = body(&r);
        assert_eq!(b["trigger"], "submit-message");
        assert!(b["id"].as_str().is_some_and(|id| !id.is_empty()));
        assert_eq!(b["messages"][0]["role"], "system");
        assert_eq!(b["messages"][0]["parts"][0]["text"], "Be brief.");
        let user = &b["messages"][1];
        assert_eq!(user["id"], "m1");
        assert_eq!(user["role"], "user");
        assert_eq!(
            user["parts"],
            serde_json::json!([{"type": "text", "text": "Hello"}])
        );
        assert_eq!(b["maxOutputTokens"], 64);
        assert_eq!(b["temperature"].as_f64(), Some(0.7));
        assert_eq!(b["model"], "m-1");
    }
    let mut s = spec(Api::VercelUi, "http://h/api/chat");
    s.system = None;
    s.temperature = None;
    let b = body(&build_request(&s).unwrap());
    assert_eq!(b["messages"].as_array().unwrap().len(), 1);
    assert_eq!(b["messages"][0]["role"], "user");
    assert!(b.get("temperature").is_none());
    for bad in ["app.example/api/chat", "http://h/api/chat?key=1"] {
        assert!(build_request(&spec(Api::VercelUi, bad)).is_err(), "{bad}");
    }
}

#[test]
fn no_key_means_no_auth_header() {
    for api in Api::ALL {
        let mut s = spec(api, "http://h");
        s.api_key = None;
        let r = build_request(&s).unwrap();
        assert!(r.headers.iter().all(|(_, v)| !v.is_sensitive()), "{api}");
    }
}

#[test]
fn only_the_browser_variant_opts_anthropic_in_to_browser_access() {
    let s = spec(Api::Anthropic, "https://api.anthropic.com");
    let header = "anthropic-dangerous-direct-browser-access";
    assert!(build_request(&s).unwrap().header(header).is_none());
    let r = build_browser_request(&s).unwrap();
    assert_eq!(r.header(header).unwrap().as_str(), "true");
    let other = build_browser_request(&spec(Api::OpenaiChat, "http://h")).unwrap();
    assert_eq!(
        other,
        build_request(&spec(Api::OpenaiChat, "http://h")).unwrap()
    );
}

#[test]
fn the_local_engine_gets_the_chat_body_without_url_or_key() {
    let r = build_request(&spec(Api::Local, "")).unwrap();
    assert_eq!(r.url, LOCAL_URL);
    assert!(
        r.headers.iter().all(|(_, v)| !v.as_str().contains(KEY)),
        "a key has nowhere to go locally: {r:?}"
    );
    let chat = build_request(&spec(Api::OpenaiChat, "http://h")).unwrap();
    assert_eq!(body(&r), body(&chat), "the engine is OpenAI-shaped");
    assert_eq!(body(&r)["ignore_eos"], true);
    assert_eq!(Api::from_name("local"), Some(Api::Local));
    assert!(!Api::Local.is_remote() && Api::ALL.iter().all(|a| a.is_remote()));
}
