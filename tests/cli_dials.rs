//! `switchboard dials FILE.jsonl`: reads an export, prints stats, and refuses bad files by line.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::sync::Arc;

use serde_json::json;
use switchboard::dials::{jsonl::write_jsonl, Dial, DialOutcome, JsonText, Retention};

fn dial(id: &str, op: &str, duration_ms: u64, outcome: DialOutcome) -> Arc<Dial> {
    let mut d = Dial {
        id: id.into(),
        phone: "dev_alpha1".into(),
        call_id: "".into(),
        caller: "lumiagent".into(),
        callee: "lumirealm".into(),
        endpoint: "lumirealm.phoneline".into(),
        op: op.into(),
        request: JsonText::from_value(&json!({"op": op})),
        start_ms: 1_760_000_000_000,
        duration_ms,
        outcome,
        response: None,
        error: None,
        retention: Retention::Standard,
        slow: false,
        spec: Default::default(),
    };
    d.normalise();
    Arc::new(d)
}

#[test]
fn stats_of_an_export_and_bad_lines_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dials.jsonl");
    let dials = vec![
        dial("a", "read_item", 10, DialOutcome::Ok),
        dial("b", "read_item", 30, DialOutcome::Error),
        dial("c", "read_item", 20, DialOutcome::Ok),
        dial("d", "describe", 5, DialOutcome::Ok),
    ];
    write_jsonl(&dials, std::fs::File::create(&path).unwrap()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["dials", "--stats", "--json", "--op", "read_item"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats.as_array().unwrap().len(), 1);
    assert_eq!(stats[0]["op"], "read_item");
    assert_eq!(stats[0]["count"], 3);
    assert_eq!(stats[0]["errors"], 1);
    assert_eq!(stats[0]["p50_ms"], 20);

    let bad = dir.path().join("bad.jsonl");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{\"id\": \"e\"}\n");
    std::fs::write(&bad, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["dials"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 5 field phone"), "{err}");
    assert!(out.stdout.is_empty());
}
