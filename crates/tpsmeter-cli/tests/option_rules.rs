//! The CLI refuses every option set of `tests/fixtures/option-rules.json` with the sentence
//! `bench()` and the benchmark page say (tests/unit/options.test.mjs), in its flag names: the
//! rules live once, in the core's run spec, and each surface only names the options.

#![allow(clippy::unwrap_used)]

use std::process::Command;

use tpsmeter_core::spec::Field;

/// `says` with each `{key}` written as the command line's flag.
fn with_flags(says: &str) -> String {
    let mut out = String::new();
    let mut rest = says;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = open + rest[open..].find('}').unwrap();
        let key = &rest[open + 1..close];
        let field = Field::from_key(key).unwrap_or_else(|| panic!("{key} is no option"));
        out.push_str(&field.flag_name());
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

#[test]
fn the_cli_refuses_each_rule_case_with_the_same_sentence() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/option-rules.json"
    );
    let fixture: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases = fixture["cases"].as_array().unwrap();
    assert!(cases.len() >= 15, "the fixture holds the rules");
    for case in cases {
        let argv: Vec<&str> = case["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let out = Command::new(env!("CARGO_BIN_EXE_tpsmeter"))
            .args([
                "bench",
                "--quiet",
                "--api",
                "openai-chat",
                "--url",
                "http://127.0.0.1:9",
            ])
            .args(["--model", "m"])
            .args(&argv)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let want = with_flags(case["says"].as_str().unwrap());
        assert_eq!(out.status.code(), Some(1), "{argv:?}: {stderr}");
        assert_eq!(stderr.trim_end(), format!("error: {want}"), "{argv:?}");
    }
}

#[test]
fn a_misspelt_flag_gets_the_spec_s_suggestion() {
    for (typed, says) in [
        (
            "--max_tokens",
            "unknown option `--max_tokens` (did you mean --max-tokens?)",
        ),
        (
            "--concurency",
            "unknown option `--concurency` (did you mean --concurrency?)",
        ),
        (
            "--duration-s",
            "unknown option `--duration-s` (did you mean --duration?)",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_tpsmeter"))
            .args([
                "bench",
                "--api",
                "openai-chat",
                "--url",
                "http://127.0.0.1:9",
            ])
            .args(["--model", "m", typed, "5"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{typed}: {stderr}");
        assert_eq!(stderr.trim_end(), format!("error: {says}"), "{typed}");
    }
}

/// Every wire format is named where a user looks for `--api`'s values: `bench --help` and
/// README.md's sentence on it (which once named six of the eight).
#[test]
fn every_api_is_named_in_the_help_and_the_readme() {
    let out = Command::new(env!("CARGO_BIN_EXE_tpsmeter"))
        .args(["bench", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let at = readme
        .find("`--api` is one of")
        .expect("README names --api's values");
    let sentence = &readme[at..at + readme[at..].find(". ").unwrap()];
    for api in tpsmeter_core::Api::ALL {
        assert!(help.contains(api.name()), "bench --help lacks {api}");
        assert!(
            sentence.contains(&format!("`{api}`")),
            "README's --api list lacks {api}"
        );
    }
}
