//! The `switchboard runtime` subcommands, run as the built binary on the corpus and on altered
//! copies.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

fn corpus() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus"))
}

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(args)
        .output()
        .unwrap();
    let mut text = String::from_utf8(out.stdout).unwrap();
    text.push_str(&String::from_utf8(out.stderr).unwrap());
    (out.status.code().unwrap(), text)
}

#[test]
fn check_the_real_directory_passes_with_the_capabilities_warning() {
    let dir = corpus().join("openphone");
    let (code, out) = run(&["runtime", "check", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("37 commands"), "{out}");
    assert!(
        out.contains("warning: openphone-capabilities.json: not found"),
        "{out}"
    );
    assert!(out.contains("checked against its ifp/1 tool"), "{out}");
}

#[test]
fn check_a_version_2_file_fails_with_the_range() {
    let tmp = tempfile::tempdir().unwrap();
    let mut v: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(corpus().join("openphone/openphone-events.json")).unwrap(),
    )
    .unwrap();
    v["version"] = 2.into();
    let file = tmp.path().join("openphone-events.json");
    std::fs::write(&file, v.to_string()).unwrap();
    let (code, out) = run(&["runtime", "check", file.to_str().unwrap(), "--json"]);
    assert_eq!(code, 1, "{out}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["ok"], false);
    assert_eq!(
        report["problems"][0]["message"],
        "unsupported runtime protocol version: 2 (supported range: 1..1)"
    );
}

#[test]
fn autonomy_json_for_trusted_actions_asks_for_the_high_risk_tools() {
    let dir = corpus().join("openphone");
    let (code, out) = run(&[
        "runtime",
        "autonomy",
        "trusted_actions",
        "--dir",
        dir.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{out}");
    let table: serde_json::Value = serde_json::from_str(&out).unwrap();
    let asked: Vec<_> = table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["decision"] == "ask")
        .map(|r| r["risk"].as_str().unwrap())
        .collect();
    assert_eq!(asked, vec!["high"; 4]);
    let (code, out) = run(&["runtime", "autonomy", "sometimes"]);
    assert_eq!(code, 2);
    assert!(out.contains("unknown autonomy"), "{out}");
}
