//! The host-error parser against every case of `shared/corpus/lumiverse/host-errors.json`, and
//! property tests: generated permission texts parse back to what generated them; random and
//! hostile texts never panic and give output bounded by the input's size.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use switchboard::host_error::{parse, HostError, HostErrorKind, PermissionForm};

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
        | HostErrorKind::EndpointTimedOut { endpoint }
        | HostErrorKind::InvalidEndpoint { endpoint } => endpoint.len(),
        HostErrorKind::DialTimedOut { extension, .. } => extension.len(),
        HostErrorKind::UnknownOp { op } => op.len(),
        HostErrorKind::UnknownSurface { surface } => surface.len(),
        _ => 0,
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
        prop_assert_eq!(&got.wrapped_by, &wrappers);
        prop_assert_eq!(&got.text, &text);
        assert_bounded(&text, &got);
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
