//! The host-error parser against every case of `shared/corpus/lumiverse/host-errors.json`, and
//! property tests: generated permission texts parse back to what generated them; every
//! template of `upstream-behaviour.md` ("The host's error texts", "LumiRealm's handler
//! errors"), with 0 to 3 wrappers, classifies the same whatever run of whitespace stands for
//! each of its spaces; random and hostile texts never panic and give output bounded by the
//! input's size.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use switchboard::host_error::{parse, HostError, HostErrorKind, PermissionForm};
use switchboard::phone_line::protocol::{OpOutcome, PhoneLineOp};

const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/corpus/lumiverse/host-errors.json"
);

#[test]
fn every_corpus_case_reads_out_what_it_expects() {
    let text = std::fs::read_to_string(CORPUS).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() >= 20, "corpus shrank: {} cases", cases.len());
    let mut kinds = std::collections::BTreeSet::new();
    for case in cases {
        let input = case["input"].as_str().unwrap();
        let expect = case["expect"].as_object().unwrap();
        let got = parse(input);
        let got_json = serde_json::to_value(&got).unwrap();
        for (key, want) in expect {
            assert_eq!(
                &got_json[key], want,
                "case {input:?}: field {key} (got {got_json})"
            );
        }
        assert_eq!(got.kind_name(), expect["kind"].as_str().unwrap());
        assert_eq!(got.text, input, "the text is kept");
        if !expect.contains_key("wrapped_by") {
            assert!(got.wrapped_by.is_empty(), "case {input:?}");
        }
        kinds.insert(got.kind_name());
    }
    // Every kind the corpus names is covered by some case.
    assert_eq!(kinds.len(), 11, "{kinds:?}");
}

/// The texts the real Lumiverse host gave on this machine (`tests/data/lumiverse-host-texts.json`:
/// the install scanner's refusal, a stopped worker, the 10 s timeout, ...): each reads out what
/// it expects, and the advice `explain-error` prints for it (CLI and window alike) says what to
/// do in the words the case names.
#[test]
fn the_real_hosts_texts_read_out_and_come_with_advice() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/lumiverse-host-texts.json"
    ))
    .unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() >= 9, "cases: {}", cases.len());
    for case in cases {
        let input = case["input"].as_str().unwrap();
        let got = parse(input);
        let got_json = serde_json::to_value(&got).unwrap();
        for (key, want) in case["expect"].as_object().unwrap() {
            assert_eq!(
                &got_json[key], want,
                "case {input:?}: field {key} (got {got_json})"
            );
        }
        let advice = switchboard::bridge::advice::what_to_do(&got)
            .unwrap_or_else(|| panic!("no advice for {input:?}"));
        let phrase = case["advice"].as_str().unwrap();
        assert!(
            advice.contains(phrase),
            "advice for {input:?} lacks {phrase:?}: {advice}"
        );
    }
}

fn ext_id() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_-]{0,12}"
}

fn endpoint() -> impl Strategy<Value = String> {
    (
        ext_id(),
        prop::collection::vec("[a-z][a-z0-9_-]{0,10}", 1..3),
    )
        .prop_map(|(ext, chans)| format!("{ext}.{}", chans.join(".")))
}

fn permission() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_]{0,10}(\\.[a-z][a-z0-9_]{0,8})?"
}

fn wrapper() -> impl Strategy<Value = String> {
    prop_oneof![
        ext_id().prop_map(|id| format!("could not read pending request from {id}")),
        "[a-z][a-z ]{0,20}[a-z]",
        "dial failed \\(attempt [0-9]{1,3}\\)",
    ]
}

/// Every run of whitespace as one space, ends trimmed (what the parser reads).
fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What may stand for one space of a template in a pasted text.
fn ws_run() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(" ".to_string()),
        Just("\n".to_string()),
        Just("\r\n".to_string()),
        Just("\t".to_string()),
        Just("  ".to_string()),
        Just("\r\n    ".to_string()),
        Just("\u{a0}".to_string()),
        "[ \t\r\n]{1,5}",
    ]
}

/// Words joined by single spaces.
fn words(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec("[a-z]{1,8}", 1..=max).prop_map(|w| w.join(" "))
}

/// A wrapper as people and LumiRealm write them, with single spaces, that is itself no known
/// error.
fn canonical_wrapper() -> impl Strategy<Value = String> {
    prop_oneof![
        ext_id().prop_map(|id| format!("could not read pending request from {id}")),
        words(5),
        "dial failed \\(attempt [0-9]{1,3}\\)",
    ]
    .prop_filter("a wrapper that is no known error", |w| {
        parse(w).kind_name() == "unknown"
    })
}

/// One of every template in `upstream-behaviour.md` ("The host's error texts", "LumiRealm's
/// handler errors") filled with generated values and single spaces, with the kind it is.
fn template() -> impl Strategy<Value = (String, &'static str)> {
    let perms = || prop::collection::vec(permission(), 1..6).prop_map(|p| p.join(", "));
    let op = prop_oneof![
        prop::sample::select(PhoneLineOp::ALL.to_vec()).prop_map(|o| o.as_str().to_string()),
        "[a-z][a-z_]{0,14}",
    ];
    prop_oneof![
        (endpoint(), ext_id(), ext_id(), perms()).prop_map(|(e, r, o, p)| (
            format!("Shared RPC endpoint \"{e}\" requires requester \"{r}\" to inherit owner \"{o}\" permissions: {p}"),
            "permission"
        )),
        (endpoint(), ext_id(), perms()).prop_map(|(e, r, p)| (
            format!("Shared RPC endpoint \"{e}\" requires requester \"{r}\" permissions: {p}"),
            "permission"
        )),
        (endpoint(), ext_id(), perms()).prop_map(|(e, o, p)| (
            format!("Shared RPC endpoint \"{e}\" requires owner \"{o}\" permissions: {p}"),
            "permission"
        )),
        endpoint().prop_map(|e| (
            format!("Shared RPC endpoint \"{e}\" is not registered"),
            "not_registered"
        )),
        endpoint().prop_map(|e| (
            format!("Shared RPC endpoint \"{e}\" is not registered for on-request reads"),
            "not_registered_for_reads"
        )),
        endpoint().prop_map(|e| (
            format!("Shared RPC endpoint \"{e}\" timed out"),
            "endpoint_timed_out"
        )),
        "[A-Za-z0-9._-]{1,20}".prop_map(|e| (
            format!("Invalid shared RPC endpoint \"{e}\". Expected \"<extension_id>.<channel>\" using lowercase letters, numbers, \"_\", and \"-\"."),
            "invalid_endpoint"
        )),
        "[A-Za-z0-9._-]{1,20}".prop_map(|o| (
            format!("Invalid shared RPC owner identifier \"{o}\""),
            "invalid_owner"
        )),
        Just(("Shared RPC endpoint cannot be empty".to_string(), "invalid_endpoint")),
        (ext_id(), 0u64..100_000).prop_map(|(x, ms)| (
            format!("phoneline dial to '{x}' timed out after {ms}ms"),
            "dial_timed_out"
        )),
        Just(("requester extension id missing".to_string(), "not_authorised")),
        Just(("not authorised".to_string(), "not_authorised")),
        Just(("malformed request".to_string(), "malformed_request")),
        "[a-zA-Z]{1,10}".prop_map(|f| (format!("request missing {f}"), "malformed_request")),
        op.prop_map(|o| (format!("unknown op: {o}"), "unknown_op")),
        "[a-z][a-z0-9_]{0,16}".prop_map(|id| (format!("unknown surface: {id}"), "unknown_surface")),
        words(6).prop_map(|d| (format!("invalid pattern: {d}"), "invalid_pattern")),
        Just((
            "invalid pattern: Invalid regular expression: /(/: Unterminated group".to_string(),
            "invalid_pattern"
        )),
        "[a-z][a-z0-9_-]{0,16}".prop_map(|id| (format!("module {id} not found"), "module_not_found")),
        words(8).prop_map(|r| (format!("[REFUSED_BY_EXTENSION] {r}"), "refused_by_extension")),
        Just(("Connection closed".to_string(), "connection_closed")),
    ]
}

/// A template behind 0 to 3 wrappers (and sometimes a JavaScript `Error: `), with the
/// wrappers the parser must read out.
fn template_with_wrappers() -> impl Strategy<Value = (String, &'static str, Vec<String>)> {
    (
        template(),
        prop::collection::vec(canonical_wrapper(), 0..=3),
        any::<bool>(),
    )
        .prop_map(|((core, kind), wrappers, js)| {
            let mut text = String::new();
            if js {
                text.push_str("Error: ");
            }
            for w in &wrappers {
                text.push_str(w);
                text.push_str(": ");
            }
            text.push_str(&core);
            (text, kind, wrappers)
        })
}

fn dedup(perms: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in perms {
        if !out.contains(p) {
            out.push(p.clone());
        }
    }
    out
}

/// Sum of the bytes of every string the parse result holds.
fn held_bytes(e: &HostError) -> usize {
    let kind = match &e.kind {
        HostErrorKind::Permission(p) => {
            p.endpoint.len()
                + p.missing_extension.len()
                + p.owner.len()
                + p.permissions.iter().map(String::len).sum::<usize>()
        }
        HostErrorKind::NotRegistered { endpoint }
        | HostErrorKind::NotRegisteredForReads { endpoint }
        | HostErrorKind::EndpointTimedOut { endpoint }
        | HostErrorKind::InvalidEndpoint { endpoint } => endpoint.len(),
        HostErrorKind::InvalidOwner { owner } => owner.len(),
        HostErrorKind::DialTimedOut { extension, .. } => extension.len(),
        HostErrorKind::UnknownOp { op, .. } => op.len(),
        HostErrorKind::UnknownSurface { surface } => surface.len(),
        HostErrorKind::InvalidPattern { detail } => detail.len(),
        HostErrorKind::ModuleNotFound { module } => module.len(),
        HostErrorKind::RefusedByExtension { reason } => reason.len(),
        HostErrorKind::BlockedCapabilities {
            extension,
            capabilities,
        } => extension.len() + capabilities.iter().map(String::len).sum::<usize>(),
        HostErrorKind::NotAuthorised
        | HostErrorKind::MalformedRequest
        | HostErrorKind::ConnectionClosed
        | HostErrorKind::WorkerStopped
        | HostErrorKind::Unknown => 0,
    };
    kind + e.text.len() + e.wrapped_by.iter().map(String::len).sum::<usize>()
}

fn assert_bounded(input: &str, e: &HostError) {
    assert!(
        held_bytes(e) <= 3 * input.len(),
        "{} bytes held for {} bytes of input",
        held_bytes(e),
        input.len()
    );
    assert!(e.wrapped_by.len() <= input.len() / 2 + 1);
    if let Some(p) = e.permission() {
        assert!(p.permissions.len() <= input.len() / 2 + 1);
    }
}

/// Pieces of the host's texts, to splice into hostile inputs.
fn hostile_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("Shared RPC endpoint ".to_string()),
        Just("\"".to_string()),
        Just(": ".to_string()),
        Just(" requires requester ".to_string()),
        Just(" requires owner ".to_string()),
        Just(" to inherit owner ".to_string()),
        Just(" permissions: ".to_string()),
        Just(", ".to_string()),
        Just("Error: ".to_string()),
        Just("phoneline dial to '".to_string()),
        Just("' timed out after 99999999999999999999".to_string()),
        Just("unknown op: ".to_string()),
        Just("Invalid shared RPC endpoint \"".to_string()),
        Just(" is not registered".to_string()),
        Just("é😀\u{0}\n".to_string()),
        "[a-z._]{0,8}",
        any::<String>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn generated_permission_texts_parse_back(
        form in 0u8..3,
        endpoint in endpoint(),
        requester in ext_id(),
        owner in ext_id(),
        perms in prop::collection::vec(permission(), 1..8),
        wrappers in prop::collection::vec(wrapper(), 0..=3),
        js_prefix in any::<bool>(),
        sep in prop_oneof![Just(", "), Just(","), Just(" , ")],
    ) {
        let head = match form {
            0 => format!("requires requester \"{requester}\" to inherit owner \"{owner}\""),
            1 => format!("requires requester \"{requester}\""),
            _ => format!("requires owner \"{owner}\""),
        };
        let core = format!(
            "Shared RPC endpoint \"{endpoint}\" {head} permissions: {}",
            perms.join(sep)
        );
        let mut text = String::new();
        if js_prefix {
            text.push_str("Error: ");
        }
        for w in &wrappers {
            text.push_str(w);
            text.push_str(": ");
        }
        text.push_str(&core);

        let got = parse(&text);
        let p = got.permission().expect("a permission form");
        let endpoint_ext = endpoint.split('.').next().unwrap().to_string();
        let (want_form, want_missing, want_owner) = match form {
            0 => (PermissionForm::Inherit, &requester, &owner),
            1 => (PermissionForm::Requester, &requester, &endpoint_ext),
            _ => (PermissionForm::Owner, &owner, &owner),
        };
        prop_assert_eq!(p.form, want_form);
        prop_assert_eq!(&p.endpoint, &endpoint);
        prop_assert_eq!(&p.missing_extension, want_missing);
        prop_assert_eq!(&p.owner, want_owner);
        prop_assert_eq!(&p.permissions, &dedup(&perms));
        // Wrappers are read out of the text with its whitespace runs collapsed to one space.
        let want_wrappers: Vec<String> = wrappers.iter().map(|w| collapse(w)).collect();
        prop_assert_eq!(&got.wrapped_by, &want_wrappers);
        prop_assert_eq!(&got.text, &text);
        assert_bounded(&text, &got);
    }

    #[test]
    fn every_template_classifies_the_same_whatever_whitespace_stands_for_its_spaces(
        (canonical, want_kind, wrappers, runs, lead, trail) in template_with_wrappers().prop_flat_map(
            |(canonical, kind, wrappers)| {
                let spaces = canonical.matches(' ').count();
                (
                    Just(canonical),
                    Just(kind),
                    Just(wrappers),
                    prop::collection::vec(ws_run(), spaces),
                    "[ \t\r\n]{0,3}",
                    "[ \t\r\n]{0,3}",
                )
            },
        ),
    ) {
        let want = parse(&canonical);
        prop_assert_eq!(want.kind_name(), want_kind, "canonical {:?}", canonical);
        prop_assert_eq!(&want.wrapped_by, &wrappers, "canonical {:?}", canonical);

        let mut variant = lead.clone();
        let mut runs = runs.iter();
        for c in canonical.chars() {
            match c {
                ' ' => variant.push_str(runs.next().map_or(" ", String::as_str)),
                c => variant.push(c),
            }
        }
        variant.push_str(&trail);

        let got = parse(&variant);
        prop_assert_eq!(&got.kind, &want.kind, "variant {:?}", variant);
        prop_assert_eq!(&got.wrapped_by, &want.wrapped_by, "variant {:?}", variant);
        prop_assert_eq!(&got.text, &variant, "the text is kept as given");
        assert_bounded(&variant, &got);
    }

    #[test]
    fn random_bytes_never_panic_and_stay_bounded(bytes in prop::collection::vec(any::<u8>(), 0..4096)) {
        let text = String::from_utf8_lossy(&bytes);
        let got = parse(&text);
        assert_bounded(&text, &got);
    }

    #[test]
    fn hostile_splices_never_panic_and_stay_bounded(pieces in prop::collection::vec(hostile_piece(), 0..64)) {
        let text: String = pieces.concat();
        let got = parse(&text);
        assert_bounded(&text, &got);
        prop_assert_eq!(&got.text, &text);
    }
}

#[test]
fn the_spec_example_as_the_spec_prints_it_over_two_lines_is_the_inherit_form() {
    let one_line = parse("Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\" to inherit owner \"lumirealm\" permissions: push_notification");
    for text in [
        "Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\"\nto inherit owner \"lumirealm\" permissions: push_notification",
        "Shared RPC endpoint \"lumirealm.phoneline\" requires requester \"lumiagent\"\r\nto inherit owner \"lumirealm\" permissions: push_notification\r\n",
        "  Shared RPC endpoint \"lumirealm.phoneline\"\trequires requester \"lumiagent\"\n    to  inherit owner \"lumirealm\" permissions:\n  push_notification",
    ] {
        let got = parse(text);
        assert_eq!(got.kind, one_line.kind, "{text:?}");
        let p = got.permission().unwrap();
        assert_eq!(p.form, PermissionForm::Inherit);
        assert_eq!(p.missing_extension, "lumiagent");
        assert_eq!(p.permissions, ["push_notification"]);
        assert_eq!(got.text, text, "kept as given");
    }
    // A wrapper broken over lines is read out on one line.
    let got = parse("could not read pending request\r\n  from lumiagent:\nShared RPC endpoint \"lumiagent.phoneline_request\" requires requester \"lumirealm\" permissions: characters");
    assert_eq!(
        got.wrapped_by,
        ["could not read pending request from lumiagent"]
    );
    assert_eq!(got.permission().unwrap().form, PermissionForm::Requester);
}

#[test]
fn not_registered_for_on_request_reads_is_apart_from_not_registered() {
    let e = parse(
        "Shared RPC endpoint \"lumiagent.phoneline_probe\" is not registered for on-request reads",
    );
    assert_eq!(
        e.kind,
        HostErrorKind::NotRegisteredForReads {
            endpoint: "lumiagent.phoneline_probe".into()
        }
    );
    assert_eq!(e.kind_name(), "not_registered_for_reads");
    let json = serde_json::to_value(&e).unwrap();
    assert_eq!(json["kind"], "not_registered_for_reads");
    let e = parse("Shared RPC endpoint \"lumiagent.phoneline_probe\" is not registered");
    assert_eq!(e.kind_name(), "not_registered");
}

#[test]
fn the_other_templates_read_out_their_values() {
    let e = parse("Invalid shared RPC owner identifier \"Lumi_Realm\"");
    assert_eq!(
        e.kind,
        HostErrorKind::InvalidOwner {
            owner: "Lumi_Realm".into()
        }
    );
    let e = parse("could not read: module risu_pack_7 not found");
    assert_eq!(
        e.kind,
        HostErrorKind::ModuleNotFound {
            module: "risu_pack_7".into()
        }
    );
    assert_eq!(e.wrapped_by, ["could not read"]);
    let e = parse("invalid pattern: Invalid regular expression: /(/: Unterminated group");
    assert_eq!(
        e.kind,
        HostErrorKind::InvalidPattern {
            detail: "Invalid regular expression: /(/: Unterminated group".into()
        }
    );
    let e = parse(
        "[REFUSED_BY_EXTENSION] lumirealm.source is a frozen snapshot; edit lumirealm.payload",
    );
    assert_eq!(
        e.kind,
        HostErrorKind::RefusedByExtension {
            reason: "lumirealm.source is a frozen snapshot; edit lumirealm.payload".into()
        }
    );
}

#[test]
fn unknown_op_says_what_the_spec_says_follows() {
    let want = [
        (PhoneLineOp::Describe, OpOutcome::PairingFails),
        (PhoneLineOp::SystemPrompt, OpOutcome::ContributesNothing),
        (PhoneLineOp::CheckWrite, OpOutcome::Allow),
        (PhoneLineOp::CheckRead, OpOutcome::Allow),
        (PhoneLineOp::ListItems, OpOutcome::ToolError),
        (PhoneLineOp::ReadItem, OpOutcome::ToolError),
        (PhoneLineOp::WriteField, OpOutcome::ToolError),
        (PhoneLineOp::GrepItems, OpOutcome::ToolError),
    ];
    assert_eq!(want.len(), PhoneLineOp::ALL.len());
    for (op, follows) in want {
        let e = parse(&format!("Error: unknown op: {}", op.as_str()));
        assert_eq!(
            e.kind,
            HostErrorKind::UnknownOp {
                op: op.as_str().into(),
                protocol_op: Some(op),
                follows
            }
        );
    }
    // Trailing words after the op name do not hide the op.
    match parse("rpc failed: unknown op: check_read (lumirealm)").kind {
        HostErrorKind::UnknownOp {
            protocol_op,
            follows,
            ..
        } => {
            assert_eq!(protocol_op, Some(PhoneLineOp::CheckRead));
            assert_eq!(follows, OpOutcome::Allow);
        }
        other => panic!("{other:?}"),
    }
    // An op outside the core protocol (LumiRealm's own mutation ops) is a tool error.
    let e = parse("unknown op: asset_mutate");
    assert_eq!(
        e.kind,
        HostErrorKind::UnknownOp {
            op: "asset_mutate".into(),
            protocol_op: None,
            follows: OpOutcome::ToolError
        }
    );
    let json = serde_json::to_value(&e).unwrap();
    assert_eq!(json["follows"], "tool_error");
    assert_eq!(json["protocol_op"], serde_json::Value::Null);
}

#[test]
fn megabyte_of_layers_and_unclosed_quotes_is_parsed_once_through() {
    // Quadratic scanning would not finish on this; the parser is linear.
    let mut text = String::new();
    for _ in 0..20_000 {
        text.push_str("Shared RPC endpoint \"x: wrapper: ");
    }
    text.push_str("Shared RPC endpoint \"a.b\" requires owner \"a\" permissions: ");
    for i in 0..20_000 {
        text.push_str(&format!("p{}, ", i % 100));
    }
    let got = parse(&text);
    let p = got.permission().unwrap();
    assert_eq!(p.permissions.len(), 100);
    assert_eq!(got.wrapped_by.len(), 40_000);
    assert_bounded(&text, &got);
}
