//! `switchboard manifest check` on OpenPhone runtime manifests, and `switchboard info`, run as
//! the built binary on the real corpus and altered copies.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;

fn corpus(rel: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus")).join(rel)
}

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn manifest_check_accepts_the_real_runtime_manifests() {
    for f in [
        "openphone/openphone-commands.json",
        "openphone/openphone-events.json",
    ] {
        let (code, text) = run(&["manifest", "check", corpus(f).to_str().unwrap()]);
        assert_eq!(code, 0, "{f}: {text}");
        assert!(
            text.contains("OpenPhone runtime-protocol manifest: no problems"),
            "{text}"
        );
    }
}

#[test]
fn manifest_check_reports_a_version_outside_the_range_and_every_rule_violation() {
    let dir = tempfile::tempdir().unwrap();
    let mut v: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(corpus("openphone/openphone-commands.json")).unwrap(),
    )
    .unwrap();
    v["version"] = serde_json::json!(2);
    let p = dir.path().join("commands-v2.json");
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
    let (code, text) = run(&["manifest", "check", p.to_str().unwrap()]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("unsupported runtime protocol version: 2 (supported range: 1..1)"),
        "{text}"
    );

    // Two rule violations on two commands: both reported.
    let mut v: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(corpus("openphone/openphone-commands.json")).unwrap(),
    )
    .unwrap();
    let cmds = v["commands"].as_array_mut().unwrap();
    cmds[0]["superseded_by"] = serde_json::json!("openphone.no_such_command");
    cmds[0]["deprecated"] = serde_json::json!(true);
    let other = cmds[1]["name"].clone();
    cmds[2]["superseded_by"] = other;
    cmds[2].as_object_mut().unwrap().remove("deprecated");
    let p = dir.path().join("commands-bad.json");
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
    let (code, text) = run(&["manifest", "check", p.to_str().unwrap()]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("commands[0].superseded_by"), "{text}");
    assert!(text.contains("commands[2].superseded_by"), "{text}");
}

#[test]
fn info_json_has_the_spec_shape() {
    let (code, text) = run(&["info", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["name"], "Switchboard");
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        v["runtime_protocol"],
        serde_json::json!({"name": "openphone-runtime", "min_version": 1, "max_version": 1})
    );
    assert_eq!(v["ifp"]["min_version"], 1);
    let (code, words) = run(&["info"]);
    assert_eq!(code, 0);
    assert!(words.contains("OpenPhone runtime protocol"), "{words}");
    assert!(words.contains("versions 1 to 1"), "{words}");
}
