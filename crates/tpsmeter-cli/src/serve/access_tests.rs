//! The Host and Origin rules of `access.rs`, request by request (the wire is
//! `tests/serve_hostile.rs`'s).
#![allow(clippy::unwrap_used)]

use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::{StatusCode, Uri};

use super::{
    Access, Allowed, host_name, normalise_origin, parse_allowed_host, parse_allowed_origin,
};

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    pairs
        .iter()
        .map(|(k, v)| {
            (
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            )
        })
        .collect()
}

fn check(access: &Access, pairs: &[(&str, &str)]) -> Result<Allowed, (StatusCode, String)> {
    access
        .check(&Uri::from_static("/v1/models"), &headers(pairs), true)
        .map_err(|e| (e.status, e.code.unwrap_or("").to_owned()))
}

fn refused(code: &str) -> Result<Allowed, (StatusCode, String)> {
    Err((StatusCode::FORBIDDEN, code.to_owned()))
}

#[test]
fn loopback_names_and_addresses_are_answered_and_other_names_refused() {
    let access = Access::default();
    for host in [
        "localhost",
        "localhost:8080",
        "LocalHost.:8080",
        "app.localhost:3000",
        "127.0.0.1",
        "127.0.0.1:8080",
        "127.9.8.7:1",
        "[::1]",
        "[::1]:8080",
        // An address cannot be rebound: the machine's own LAN address (`--host 0.0.0.0`).
        "192.168.1.5:8080",
    ] {
        assert_eq!(
            check(&access, &[("host", host)]),
            Ok(Allowed { origin: None }),
            "{host}"
        );
    }
    for host in [
        "attacker.example",
        "attacker.example:8080",
        "localhost.attacker.example",
        "127.0.0.1.attacker.example",
        "2130706433",
        "[::1]x",
        "localhost:80x",
        "",
    ] {
        assert_eq!(
            check(&access, &[("host", host)]),
            refused("host_not_allowed"),
            "{host}"
        );
    }
    // No Host at all: refused on HTTP/1.1, where it is required; HTTP/1.0 never had it.
    let e = access
        .check(&Uri::from_static("/"), &HeaderMap::new(), true)
        .unwrap_err();
    assert_eq!(
        (e.status, e.code),
        (StatusCode::BAD_REQUEST, Some("host_missing"))
    );
    assert!(
        access
            .check(&Uri::from_static("/"), &HeaderMap::new(), false)
            .is_ok()
    );
    // Two Host headers are a 400 whichever comes first (RFC 9112 §3.2): the first used to
    // be taken, so `localhost` then `attacker.example` was answered.
    for pair in [
        [("host", "localhost"), ("host", "evil.example")],
        [("host", "evil.example"), ("host", "localhost")],
        [("host", "localhost"), ("host", "localhost")],
    ] {
        assert_eq!(
            check(&access, &pair),
            Err((StatusCode::BAD_REQUEST, "host_duplicated".to_owned())),
            "{pair:?}"
        );
    }
    // An absolute-form target names the host instead.
    let e = access
        .check(
            &Uri::from_static("http://attacker.example/models/m.gguf"),
            &headers(&[("host", "127.0.0.1")]),
            true,
        )
        .unwrap_err();
    assert_eq!(e.code, Some("host_not_allowed"));
    assert!(
        e.message.contains("--allowed-host attacker.example"),
        "{}",
        e.message
    );
}

#[test]
fn allowed_hosts_are_answered() {
    let access = Access::new(&["my-pc.lan".into()], &[]);
    assert!(check(&access, &[("host", "MY-PC.lan:8080")]).is_ok());
    assert_eq!(
        check(&access, &[("host", "other.lan")]),
        refused("host_not_allowed")
    );
    let any = Access::new(&["*".into()], &[]);
    assert!(check(&any, &[("host", "attacker.example")]).is_ok());
}

#[test]
fn only_the_servers_own_origin_and_allowed_ones_may_call() {
    let access = Access::new(&[], &["https://bench.example".into()]);
    let host = ("host", "127.0.0.1:8080");
    let echoed = |o: &str| {
        Ok(Allowed {
            origin: Some(HeaderValue::from_str(o).unwrap()),
        })
    };
    // No Origin: not a browser's cross-origin request.
    assert_eq!(check(&access, &[host]), Ok(Allowed { origin: None }));
    // Its own origin (the site `--www` serves).
    assert_eq!(
        check(&access, &[host, ("origin", "http://127.0.0.1:8080")]),
        echoed("http://127.0.0.1:8080")
    );
    assert_eq!(
        check(
            &access,
            &[("host", "localhost"), ("origin", "http://localhost:80")]
        ),
        echoed("http://localhost:80")
    );
    // A same-origin POST from a `no-referrer` page may say `Origin: null`; the browser's
    // Sec-Fetch-Site tells it from a sandboxed frame elsewhere.
    assert_eq!(
        check(
            &access,
            &[host, ("origin", "null"), ("sec-fetch-site", "same-origin")]
        ),
        Ok(Allowed { origin: None })
    );
    assert_eq!(
        check(
            &access,
            &[host, ("origin", "null"), ("sec-fetch-site", "cross-site")]
        ),
        refused("origin_not_allowed")
    );
    assert_eq!(
        check(&access, &[host, ("origin", "null")]),
        refused("origin_not_allowed")
    );
    // An allowed one, however the browser spells it.
    assert_eq!(
        check(&access, &[host, ("origin", "https://bench.example")]),
        echoed("https://bench.example")
    );
    assert_eq!(
        check(&access, &[host, ("origin", "HTTPS://Bench.example:443")]),
        echoed("HTTPS://Bench.example:443")
    );
    // Others, near misses included.
    for origin in [
        "https://evil.example",
        "http://bench.example",
        "https://bench.example:8443",
        "https://bench.example.evil.example",
        "http://127.0.0.1:8081",
        "https://127.0.0.1:8080",
        "http://127.0.0.1:8080/path",
    ] {
        let e = access
            .check(
                &Uri::from_static("/v1/chat/completions"),
                &headers(&[host, ("origin", origin)]),
                true,
            )
            .unwrap_err();
        assert_eq!(e.code, Some("origin_not_allowed"), "{origin}");
        assert!(e.message.contains("--allowed-origin"), "{}", e.message);
    }
    // `*` and `null` when asked for.
    let any = Access::new(&[], &["*".into()]);
    assert!(check(&any, &[host, ("origin", "https://evil.example")]).is_ok());
    let null = Access::new(&[], &["null".into()]);
    assert!(check(&null, &[host, ("origin", "null")]).is_ok());
}

#[test]
fn host_values_and_origins_are_normalised() {
    assert_eq!(host_name("Example.COM.:80").as_deref(), Some("example.com"));
    assert_eq!(host_name("[::1]:9").as_deref(), Some("[::1]"));
    assert_eq!(host_name("a:b"), None);
    assert_eq!(
        normalise_origin("HTTP://Example.com:80/").as_deref(),
        Some("http://example.com")
    );
    assert_eq!(
        normalise_origin("https://[::1]:443").as_deref(),
        Some("https://[::1]")
    );
    assert_eq!(
        normalise_origin("http://[::1]:8080").as_deref(),
        Some("http://[::1]:8080")
    );
    for bad in [
        "example.com",
        "https://",
        "https://a/b",
        "https://u@a",
        "://a",
    ] {
        assert_eq!(normalise_origin(bad), None, "{bad}");
    }
}

#[test]
fn the_flags_take_names_and_origins_only() {
    assert_eq!(parse_allowed_host("My-PC.lan").unwrap(), "my-pc.lan");
    assert_eq!(parse_allowed_host("[::1]").unwrap(), "[::1]");
    assert_eq!(parse_allowed_host("*").unwrap(), "*");
    for bad in ["my-pc.lan:8080", "http://my-pc.lan", "a b", ""] {
        let e = parse_allowed_host(bad).unwrap_err();
        assert!(e.contains("not a host name"), "{bad}: {e}");
    }
    assert_eq!(
        parse_allowed_origin("https://Bench.example:443").unwrap(),
        "https://bench.example"
    );
    assert_eq!(parse_allowed_origin("null").unwrap(), "null");
    assert_eq!(parse_allowed_origin("*").unwrap(), "*");
    for bad in ["bench.example", "https://bench.example/page", "https://"] {
        let e = parse_allowed_origin(bad).unwrap_err();
        assert!(e.contains("not an origin"), "{bad}: {e}");
    }
}
