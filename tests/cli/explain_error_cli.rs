//! Runs the built `switchboard explain-error` on the phone-line spec's example (as one line and
//! as the spec prints it, over two lines), with the built-in manifests and with corpus
//! manifests, checking the words it prints.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Command, Stdio};

const SPEC_EXAMPLE: &str = "Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\" to inherit owner \"lumirealm\" permissions: push_notification";
/// The example exactly as `phone-line.md` ("Failure modes and the bridge banner") prints it:
/// broken over two lines.
const SPEC_EXAMPLE_TWO_LINES: &str = "Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\"\nto inherit owner \"lumirealm\" permissions: push_notification";
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
fn spec_example_prints_the_spec_banner_with_the_builtin_manifests() {
    let (out, _, ok) = run(&[SPEC_EXAMPLE], None);
    assert!(ok);
    assert!(out.contains("kind: permission (inherit form)"), "{out}");
    assert!(out.contains(&format!("banner: {SPEC_BANNER}")), "{out}");
    assert!(
        out.contains("In Lumiverse, open Extensions, then LumiAgent, and grant push_notification")
    );
    // Checked against the built-in LumiAgent manifest, which declares push_notification.
    assert!(!out.contains("not checked"), "{out}");
}

#[test]
fn spec_example_over_two_lines_prints_the_spec_banner() {
    for (how, text) in [
        ("LF", SPEC_EXAMPLE_TWO_LINES.to_string()),
        ("CR LF", SPEC_EXAMPLE_TWO_LINES.replace('\n', "\r\n")),
        ("indented", SPEC_EXAMPLE_TWO_LINES.replace('\n', "\n\t  ")),
    ] {
        // From standard input, as pasted from the spec or a terminal.
        let (out, err, ok) = run(&[], Some(&format!("{text}\n")));
        assert!(ok, "{how}: {err}");
        assert!(
            out.contains("kind: permission (inherit form)"),
            "{how}: {out}"
        );
        assert!(
            out.lines().any(|l| l == format!("banner: {SPEC_BANNER}")),
            "{how}: {out}"
        );
        // As an argument too.
        let (out, _, ok) = run(&[&text], None);
        assert!(ok);
        assert!(out.contains(SPEC_BANNER), "{how}: {out}");
    }
}

#[test]
fn builtin_manifests_never_ask_to_grant_what_the_extension_does_not_declare() {
    // LumiRealm declares neither mcp_servers nor mcp_servers.create.
    let text = "Shared RPC endpoint \"lumiagent.phoneline_probe\" requires requester \"lumirealm\" to inherit owner \"lumiagent\" permissions: characters, mcp_servers";
    let (out, _, ok) = run(&[text], None);
    assert!(ok);
    assert!(
        out.contains(
            "banner: LumiRealm is missing characters, required for LumiAgent communication."
        ),
        "{out}"
    );
    assert!(
        out.contains("fix: In Lumiverse, open Extensions, then LumiRealm, and grant characters\n"),
        "{out}"
    );
    assert!(
        out.contains("cannot be granted to LumiRealm (not declared in its manifest; do not ask for them): mcp_servers"),
        "{out}"
    );
    assert!(!out.contains("not checked"), "{out}");

    let text = "Shared RPC endpoint \"lumiagent.phoneline_probe\" requires requester \"lumirealm\" to inherit owner \"lumiagent\" permissions: mcp_servers.create";
    let (out, _, ok) = run(&[text], None);
    assert!(ok);
    assert!(!out.lines().any(|l| l.starts_with("banner: ")), "{out}");
    assert!(out.contains("no banner: LumiRealm declares none of mcp_servers.create"));

    let (out, _, ok) = run(&["--json", text], None);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["manifests"]["source"], "builtin");
    assert_eq!(v["manifests"]["loaded"][0], "lumiagent");
    assert_eq!(v["manifests"]["loaded"][1], "lumirealm");
    assert_eq!(v["no_banner"]["reason"], "nothing_grantable");
}

#[test]
fn an_extension_without_any_manifest_is_unchecked_and_says_so() {
    let text = "Shared RPC endpoint \"weather_ext.status\" requires requester \"reader_ext\" to inherit owner \"weather_ext\" permissions: images";
    let (out, _, ok) = run(&[text], None);
    assert!(ok);
    assert!(
        out.contains("banner: reader_ext is missing images"),
        "{out}"
    );
    assert!(
        out.contains(
            "note: permissions not checked against reader_ext's manifest (pass --manifests DIR"
        ),
        "{out}"
    );
}

#[test]
fn unsupported_ops_and_unregistered_endpoints_are_explained() {
    for (op, follows) in [
        ("system_prompt", "contributes nothing"),
        ("check_read", "allows the read or write"),
        ("check_write", "allows the read or write"),
        ("grep_items", "tool error"),
        ("write_field", "tool error"),
        ("describe", "cannot be paired"),
        ("set_weather", "not an op of the core protocol"),
    ] {
        let (out, _, ok) = run(&[&format!("Error: unknown op: {op}")], None);
        assert!(ok);
        assert!(out.contains("kind: unknown_op"), "{op}: {out}");
        let meaning = out
            .lines()
            .find(|l| l.starts_with("meaning: "))
            .unwrap_or_default();
        assert!(
            meaning.starts_with(&format!("meaning: this line does not support {op}; ")),
            "{op}: {out}"
        );
        assert!(meaning.contains(follows), "{op}: {out}");
    }
    let (out, _, _) = run(
        &["Shared RPC endpoint \"lumirealm.phoneline\" is not registered"],
        None,
    );
    assert!(out.contains("kind: not_registered\n"), "{out}");
    assert!(out.contains("not installed or not running"), "{out}");
    let (out, _, _) = run(
        &["Shared RPC endpoint \"lumirealm.phoneline\"\r\n  is not registered for on-request reads"],
        None,
    );
    assert!(out.contains("kind: not_registered_for_reads\n"), "{out}");
    assert!(
        out.contains("running but has no on-request handler"),
        "{out}"
    );
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
    assert_eq!(v["manifests"]["source"], "dir");
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

/// The host's own refusals an extension author meets in Lumiverse: the install scanner's, a
/// stopped worker, the 10 s timeout. The CLI names what it read and says what to do.
#[test]
fn the_hosts_install_refusal_stopped_worker_and_timeout_say_what_to_do() {
    let (out, _, ok) = run(
        &["Extension \"tapcheck\" uses blocked backend capabilities: filesystem module access, direct socket module access"],
        None,
    );
    assert!(ok);
    assert!(out.contains("kind: blocked_capabilities\n"), "{out}");
    assert!(out.contains("extension: tapcheck\n"), "{out}");
    assert!(
        out.contains("blocked: filesystem module access, direct socket module access\n"),
        "{out}"
    );
    assert!(
        out.contains("what to do: Lumiverse refused to install or start tapcheck"),
        "{out}"
    );
    let (out, _, _) = run(&["Extension worker stopped"], None);
    assert!(out.contains("kind: worker_stopped\n"), "{out}");
    assert!(out.contains("restart it"), "{out}");
    let (out, _, _) = run(
        &[
            "--json",
            "Shared RPC endpoint \"tapline.phoneline\" timed out",
        ],
        None,
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["classification"]["kind"], "endpoint_timed_out");
    assert!(
        v["what_to_do"]
            .as_str()
            .is_some_and(|a| a.contains("10 seconds")),
        "{out}"
    );
}

/// No text at all (nothing on standard input, or only blanks as an argument) is refused in
/// words, not classified as an unknown error.
#[test]
fn no_text_is_refused_not_classified() {
    for (args, stdin) in [(&[][..], Some("")), (&["  "][..], None)] {
        let (out, err, ok) = run(args, stdin);
        assert!(!ok, "exit 2 for {args:?}: {out}");
        assert!(
            err.contains("no error text given"),
            "says what is missing for {args:?}: {err}"
        );
        assert!(!out.contains("unknown"), "nothing classified: {out}");
    }
}
