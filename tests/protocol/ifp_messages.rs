//! ifp/1 single-message conformance: the 26 cases of `corpus/ifp1/fixtures/messages.json`, plus
//! frame limits and a never-panics property.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use serde_json::Value;
use switchboard::ifp::{validate, validate_frame, ErrorClass, MAX_FRAME_BYTES};

const MESSAGES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/corpus/ifp1/fixtures/messages.json"
);

fn cases() -> Vec<Value> {
    let text = std::fs::read_to_string(MESSAGES).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    doc["cases"].as_array().unwrap().clone()
}

#[test]
fn all_26_message_cases_give_the_corpus_verdict_and_class() {
    let cases = cases();
    assert_eq!(cases.len(), 26);
    let mut accepted = 0;
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let result = validate(&case["message"]);
        // Also through the frame path, from the message's own bytes.
        let frame = serde_json::to_vec(&case["message"]).unwrap();
        assert_eq!(
            validate_frame(&frame).map_err(|r| r.class),
            result.clone().map_err(|r| r.class),
            "{name}: frame path differs"
        );
        match case["expect"].as_str().unwrap() {
            "accept" => {
                let env = result.unwrap_or_else(|r| panic!("{name}: expected accept, got {r}"));
                assert_eq!(env.id, case["message"]["id"].as_str().unwrap(), "{name}");
                assert_eq!(env.r#type, case["message"]["type"].as_str().unwrap());
                accepted += 1;
            }
            "reject" => {
                let want: ErrorClass = serde_json::from_value(case["error_class"].clone()).unwrap();
                let r = result
                    .err()
                    .unwrap_or_else(|| panic!("{name}: expected reject"));
                assert_eq!(r.class, want, "{name}: {}", r.reason);
                assert!(!r.reason.is_empty());
            }
            other => panic!("{name}: unknown expect {other}"),
        }
    }
    assert_eq!(accepted, 11);
}

/// The reasons name the field the case breaks (so the CLI output is useful).
#[test]
fn reasons_name_the_offending_field() {
    let want = [
        ("reject_wrong_major_version", "ifp:"),
        ("reject_event_missing_provenance", "provenance:"),
        ("reject_event_missing_labels", "labels:"),
        ("reject_event_missing_generation", "generation:"),
        ("reject_event_missing_dedup", "payload.dedup:"),
        ("reject_ext_key_without_x_prefix", "ext.vendor:"),
        ("reject_bad_id_format", "id:"),
        (
            "reject_action_propose_missing_params_hash",
            "payload.params_hash:",
        ),
        ("reject_action_approve_missing_generation", "generation:"),
        (
            "reject_action_reject_bad_reason_class",
            "payload.reason_class:",
        ),
        ("reject_pair_request_bad_public_key", "payload.public_key:"),
        ("reject_event_null_entity", "entity:"),
        ("reject_error_message_unknown_class", "payload.class:"),
        ("reject_bad_consent_label", "labels.consent:"),
        ("reject_ts_with_numeric_offset", "ts:"),
    ];
    let cases = cases();
    for (name, prefix) in want {
        let case = cases.iter().find(|c| c["name"] == name).unwrap();
        let r = validate(&case["message"]).unwrap_err();
        assert!(r.reason.starts_with(prefix), "{name}: {}", r.reason);
    }
}

#[test]
fn oversized_and_non_json_frames_are_invalid_envelope() {
    let big = vec![b' '; MAX_FRAME_BYTES + 1];
    let r = validate_frame(&big).unwrap_err();
    assert_eq!(r.class, ErrorClass::InvalidEnvelope);
    assert!(r.reason.contains("limit"));
    for bad in [&b"not json"[..], b"", b"{\"ifp\":\"1\"", &[0xff, 0xfe]] {
        let r = validate_frame(bad).unwrap_err();
        assert_eq!(r.class, ErrorClass::InvalidEnvelope);
        assert!(r.reason.contains("invalid JSON"), "{}", r.reason);
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "[a-z_.:0-9-]{0,12}".prop_map(Value::String),
        Just(Value::String("1".into())),
        Just(Value::String("2026-07-21T00:00:00Z".into())),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        let keys = prop_oneof![
            Just("ifp".to_string()),
            Just("id".to_string()),
            Just("ts".to_string()),
            Just("type".to_string()),
            Just("entity".to_string()),
            Just("session".to_string()),
            Just("generation".to_string()),
            Just("provenance".to_string()),
            Just("labels".to_string()),
            Just("payload".to_string()),
            Just("ext".to_string()),
            Just("seq".to_string()),
            Just("dedup".to_string()),
            Just("protocol".to_string()),
            Just("capabilities".to_string()),
            "[a-z_]{1,8}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((keys, inner), 0..8)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn validate_never_panics_on_random_json(v in arb_json()) {
        let _ = validate(&v);
    }

    #[test]
    fn validate_frame_never_panics_on_random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = validate_frame(&bytes);
    }

    /// Mutating one field of each corpus message never panics and never flips the version rule.
    #[test]
    fn mutated_corpus_messages_never_panic(idx in 0usize..26, key in "[a-z]{2,10}", val in arb_json()) {
        let cases = cases();
        let mut msg = cases[idx % cases.len()]["message"].clone();
        let obj = msg.as_object_mut().unwrap();
        if let Some(k) = obj.keys().nth(key.len() % obj.len().max(1)).cloned() {
            obj.insert(k, val);
        } else {
            obj.insert(key, val);
        }
        if let Err(r) = validate(&msg) {
            prop_assert!(!r.reason.is_empty());
            if msg["ifp"] == "1" {
                prop_assert_ne!(r.class, ErrorClass::UnsupportedVersion);
            }
        }
    }
}
