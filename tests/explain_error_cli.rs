//! Runs the built `switchboard explain-error` on the phone-line spec's example and on corpus
//! manifests, checking the words it prints.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Command, Stdio};

const SPEC_EXAMPLE: &str = "Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\" to inherit owner \"lumirealm\" permissions: push_notification";
const SPEC_BANNER: &str =
    "LumiAgent is missing push_notification, required for LumiRealm communication.";
const MANIFESTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus/lumiverse");

fn run(args: &[&str], stdin: Option<&str>) -> (String, String, bool) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg("explain-error")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut input = child.stdin.take().unwrap();
        if let Some(s) = stdin {
            input.write_all(s.as_bytes()).unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.success(),
    )
}

#[test]
fn spec_example_prints_the_spec_banner_without_manifests() {
    let (out, _, ok) = run(&[SPEC_EXAMPLE], None);
    assert!(ok);
    assert!(out.contains("kind: permission (inherit form)"), "{out}");
    assert!(out.contains(&format!("banner: {SPEC_BANNER}")), "{out}");
    assert!(
        out.contains("In Lumiverse, open Extensions, then LumiAgent, and grant push_notification")
    );
    assert!(out.contains("not checked"), "{out}");
}

#[test]
fn spec_example_from_stdin_with_the_corpus_manifests() {
    let (out, err, ok) = run(
        &["--manifests", MANIFESTS],
        Some(&format!("{SPEC_EXAMPLE}\n")),
    );
    assert!(ok, "{err}");
    assert!(out.contains(&format!("banner: {SPEC_BANNER}")), "{out}");
    assert!(!out.contains("not checked"), "{out}");
    // The describe response and host-errors.json are not manifests: skipped, not fatal.
    assert!(err.contains("lumirealm.describe.json"), "{err}");
}

#[test]
fn json_output_holds_classification_banner_and_manifests() {
    let text = "could not read pending request from lumiagent: Shared RPC endpoint \"lumiagent.phoneline_probe\" requires requester \"lumirealm\" to inherit owner \"lumiagent\" permissions: characters, mcp_servers";
    let (out, _, ok) = run(&["--json", "--manifests", MANIFESTS, text], None);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["classification"]["kind"], "permission");
    assert_eq!(
        v["classification"]["wrapped_by"][0],
        "could not read pending request from lumiagent"
    );
    assert_eq!(
        v["banner"]["message"],
        "LumiRealm is missing characters, required for LumiAgent communication."
    );
    assert_eq!(v["banner"]["not_grantable"][0], "mcp_servers");
    assert_eq!(v["manifests"]["loaded"][0], "lumiagent");
    assert_eq!(v["manifests"]["loaded"][1], "lumirealm");
}

#[test]
fn nothing_grantable_and_non_permission_texts_print_no_banner() {
    let text = "Shared RPC endpoint \"lumiagent.phoneline_probe\" requires requester \"lumirealm\" to inherit owner \"lumiagent\" permissions: mcp_servers.create";
    let (out, _, ok) = run(&["--manifests", MANIFESTS, text], None);
    assert!(ok);
    assert!(!out.lines().any(|l| l.starts_with("banner: ")), "{out}");
    assert!(out.contains("no banner: LumiRealm declares none of mcp_servers.create"));

    let (out, _, ok) = run(
        &["phoneline dial to 'lumirealm' timed out after 15000ms"],
        None,
    );
    assert!(ok);
    assert!(out.contains("kind: dial_timed_out"));
    assert!(out.contains("timeout: 15000 ms"));
    assert!(out.contains("no banner: not a permission failure"));
}

#[test]
fn missing_manifest_folder_is_a_clear_error() {
    let (_, err, ok) = run(
        &["--manifests", "/nonexistent/manifests", SPEC_EXAMPLE],
        None,
    );
    assert!(!ok);
    assert!(err.contains("/nonexistent/manifests"), "{err}");
}
