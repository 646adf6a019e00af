//! The phone-line CLI subcommands and their exit codes: `pairings show`, `manifest check`,
//! `manifest excluded`, run as the built `switchboard` binary on the corpus.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output};

const DESCRIBE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/corpus/lumiverse/lumirealm.describe.json"
);
const SPINDLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/corpus/lumiverse/lumirealm.spindle.json"
);
const SAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/phoneline-pairings.sample.json"
);

fn run(args: &[&str]) -> (i32, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(args)
        .output()
        .unwrap();
    (
        status.code().unwrap(),
        String::from_utf8(stdout).unwrap(),
        String::from_utf8(stderr).unwrap(),
    )
}

#[test]
fn manifest_check_clean_corpus_manifest() {
    let (code, out, _) = run(&["manifest", "check", DESCRIBE]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.trim_end()
            .ends_with("phone-line describe manifest: no problems"),
        "{out}"
    );
}

#[test]
fn manifest_check_lists_problems_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    let text = std::fs::read_to_string(DESCRIBE)
        .unwrap()
        .replace("\"per_character\"", "\"per_chat\"")
        .replace(
            "\"lumirealm.user_overrides\"",
            "\"lumiagent.user_overrides\"",
        );
    std::fs::write(&bad, text).unwrap();
    let (code, out, _) = run(&["manifest", "check", bad.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("2 problems"), "{out}");
    assert!(out.contains("surfaces[0].scope: expected \"global\" or \"per_character\", found \"per_chat\" (line 32, column 16)"), "{out}");
    assert!(out.contains("excludeFromSearch[17]: \"lumiagent.user_overrides\" is not under the extension's own id \"lumirealm\""), "{out}");
}

#[test]
fn manifest_check_refuses_what_it_cannot_check() {
    let (code, _, err) = run(&["manifest", "check", SPINDLE]);
    assert_eq!(code, 2);
    assert!(err.contains("spindle.json"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.json");
    std::fs::write(&p, "{\"extension\": ").unwrap();
    let (code, _, err) = run(&["manifest", "check", p.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("not JSON"), "{err}");
    let (code, _, err) = run(&["manifest", "check", "/nonexistent/describe.json"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read"), "{err}");
}

#[test]
fn manifest_excluded_prints_the_matching_prefix() {
    let (code, out, _) = run(&[
        "manifest",
        "excluded",
        DESCRIBE,
        "lumirealm.payload.asset_index[3].name",
    ]);
    assert_eq!((code, out.as_str()), (0, "lumirealm.payload.asset_index\n"));
    let (code, out, _) = run(&[
        "manifest",
        "excluded",
        DESCRIBE,
        "character.extensions.lumirealm.source",
    ]);
    assert_eq!((code, out.as_str()), (0, "lumirealm.source\n"));
    let (code, out, _) = run(&["manifest", "excluded", DESCRIBE, "lumirealm.sources"]);
    assert_eq!(code, 1);
    assert_eq!(
        out,
        "no excludeFromSearch prefix matches lumirealm.sources\n"
    );
    let (code, _, err) = run(&["manifest", "excluded", SPINDLE, "lumirealm.source"]);
    assert_eq!(code, 2);
    assert!(err.contains("not a phone-line describe manifest"), "{err}");
}

#[test]
fn pairings_show_text_and_json() {
    let (code, out, _) = run(&["pairings", "show", SAMPLE]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("lumirealm (LumiRealm): paired\n  allowed: true\n  decided at: 2024-09-10 20:26:40.000 UTC (1726000000000 ms)\n"), "{out}");
    assert!(
        out.contains("other record fields (kept): reviewedBy"),
        "{out}"
    );
    assert!(
        out.contains("risu-notes (Risu \"Notes\"\n\u{2028}): unknown"),
        "{out}"
    );

    let describe = format!("lumirealm={DESCRIBE}");
    let (code, out, _) = run(&[
        "pairings",
        "show",
        SAMPLE,
        "--json",
        "--describe",
        &describe,
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v[0]["identifier"], "lumirealm");
    assert_eq!(v[0]["state"], "paired");
    assert_eq!(v[0]["hash_matches_current"], true);
    assert_eq!(v[0]["self_declared_version"], "0.1.0");
    assert_eq!(v[0]["exclusions"].as_array().unwrap().len(), 19);
    assert_eq!(v[1]["state"], "unknown");
    assert_eq!(v[1]["allowed"], false);
    let (_, text, _) = run(&["pairings", "show", SAMPLE, "--describe", &describe]);
    assert!(
        text.contains("current describe: same manifest as decided on"),
        "{text}"
    );
}

#[test]
fn pairings_show_registry_and_bad_files() {
    let dir = tempfile::tempdir().unwrap();
    let reg = dir.path().join("phone-lines.json");
    std::fs::write(
        &reg,
        r#"{"version":1,"phoneLines":[{"identifier":"lumirealm","name":"LumiRealm"},{"identifier":"risu-notes","name":"Risu Notes"}]}"#,
    )
    .unwrap();
    let (code, out, _) = run(&[
        "pairings",
        "show",
        SAMPLE,
        "--json",
        "--registry",
        reg.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v[1]["state"], "revoked");
    assert_eq!(v[1]["display_name"], "Risu Notes");

    let bad = dir.path().join("phoneline-pairings.json");
    std::fs::write(
        &bad,
        std::fs::read_to_string(SAMPLE)
            .unwrap()
            .replace("\"allowed\": true", "\"allowed\": \"yes\""),
    )
    .unwrap();
    // Read as LumiAgent reads it (upstream-behaviour.md): not refused; the record is not a
    // decision LumiAgent keeps, and the field is named with its line and column.
    let (code, out, err) = run(&["pairings", "show", bad.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(
            "pairings.lumirealm.allowed: expected a boolean, found a string (line 8, column 18)"
        ),
        "{out}"
    );
    assert!(out.contains("rewrites it with allowed: true"), "{out}");
}

#[test]
fn pairings_show_says_when_lumiagent_treats_the_file_as_empty() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("phoneline-pairings.json");
    let text =
        std::fs::read_to_string(SAMPLE)
            .unwrap()
            .replacen("\"version\": 1", "\"version\": 3", 1);
    std::fs::write(&file, &text).unwrap();
    let describe = format!("lumirealm={DESCRIBE}");
    let (code, out, err) = run(&[
        "pairings",
        "show",
        file.to_str().unwrap(),
        "--describe",
        &describe,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("LumiAgent treats this file as empty because its version is 3, not 1; no line is paired by it (the --describe answers"),
        "{err}"
    );
    assert!(
        out.starts_with("lumirealm (LumiRealm): not_dialed\n  no pairing record\n"),
        "{out}"
    );
    assert!(!out.contains("risu-notes"), "{out}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
}
