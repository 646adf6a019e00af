//! ifp/1 stateful conformance: the 10 scenarios of `corpus/ifp1/fixtures/sequences.json` step by
//! step (verdict, error class, action state, stored, error payload), the 5 params_hash vectors,
//! and the receiver's memory bounds.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{json, Value};
use switchboard::ifp::conformance::run_document;
use switchboard::ifp::payload::{IncomingAction, IncomingMessage};
use switchboard::ifp::receiver::ReceiverLimits;
use switchboard::ifp::{
    canonical_params, params_hash, params_hash_matches, validate, ActionState, ErrorClass,
    Receiver, Verdict,
};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/corpus/ifp1/fixtures/"
);

fn load(name: &str) -> Value {
    let text = std::fs::read_to_string(format!("{FIXTURES}{name}")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Each step is checked directly against the corpus's own expectation fields (not through the
/// shared runner's comparison), so a runner bug cannot hide a receiver bug.
#[test]
fn all_10_scenarios_match_step_by_step() {
    let doc = load("sequences.json");
    assert_eq!(doc["initial_state"]["home_generation"], 3);
    let scenarios = doc["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 10);
    let mut steps_checked = 0;
    for sc in scenarios {
        let name = sc["name"].as_str().unwrap();
        let mut rx = Receiver::new(3);
        for (i, step) in sc["steps"].as_array().unwrap().iter().enumerate() {
            let env = validate(&step["give"])
                .unwrap_or_else(|r| panic!("{name} step {}: corpus message invalid: {r}", i + 1));
            let got = rx.receive_at_ts(&env);
            let e = &step["expect"];
            let at = format!("{name} step {}: {got:?}", i + 1);
            assert_eq!(
                serde_json::to_value(got.verdict).unwrap(),
                e["verdict"],
                "{at}"
            );
            if let Some(class) = e.get("error_class") {
                assert_eq!(
                    serde_json::to_value(got.error_class).unwrap(),
                    *class,
                    "{at}"
                );
            } else {
                assert_eq!(got.error_class.is_some(), got.verdict == Verdict::Rejected);
            }
            if let Some(state) = e.get("action_state") {
                assert_eq!(
                    serde_json::to_value(got.action_state).unwrap(),
                    *state,
                    "{at}"
                );
                // The receiver's own view agrees with the outcome.
                let id = step["give"]["payload"]["action_id"].as_str().unwrap();
                assert_eq!(rx.action_state(id), got.action_state, "{at}");
            }
            if let Some(stored) = e.get("stored") {
                assert_eq!(Value::Bool(got.stored), *stored, "{at}");
            }
            if let Some(inc) = e.get("error_payload_includes") {
                let err = got.error_message().unwrap();
                let frame = err
                    .to_frame(&switchboard::ifp::OutgoingHeader::new(
                        "msg_errout0001",
                        env.ts.clone(),
                    ))
                    .unwrap();
                let sent: Value = serde_json::from_str(frame.as_str()).unwrap();
                for (k, v) in inc.as_object().unwrap() {
                    assert_eq!(sent["payload"][k], *v, "{at}");
                }
            }
            steps_checked += 1;
        }
    }
    assert_eq!(steps_checked, 25);
}

#[test]
fn shared_runner_reports_every_corpus_step_ok() {
    let reports = run_document(&load("sequences.json")).unwrap();
    assert_eq!(reports.len(), 25);
    for r in &reports {
        assert!(r.ok(), "{r}");
    }
}

#[test]
fn shared_runner_flags_an_altered_expectation() {
    let mut doc = load("sequences.json");
    doc["scenarios"][6]["steps"][1]["expect"]["action_state"] = json!("approved");
    let reports = run_document(&doc).unwrap();
    let bad: Vec<_> = reports.iter().filter(|r| !r.ok()).collect();
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].scenario, "action_expiry");
    assert!(bad[0]
        .to_string()
        .starts_with("MISMATCH action_expiry step 2"));
    assert!(bad[0].mismatches[0].contains("expected approved, got expired"));
}

#[test]
fn all_5_params_hash_vectors() {
    let doc = load("params-hash-vectors.json");
    let vectors = doc["vectors"].as_array().unwrap();
    assert_eq!(vectors.len(), 5);
    for v in vectors {
        let name = v["name"].as_str().unwrap();
        assert_eq!(canonical_params(&v["params"]), v["canonical"], "{name}");
        assert_eq!(params_hash(&v["params"]), v["params_hash"], "{name}");
    }
}

#[test]
fn params_hash_check_flags_the_corpus_placeholder_hashes_as_anomalies_only() {
    // The corpus proposals carry placeholder hashes (sha256:1111...): an anomaly, still accepted.
    let doc = load("sequences.json");
    let give = &doc["scenarios"][3]["steps"][0]["give"];
    let env = validate(give).unwrap();
    let IncomingMessage::Action(IncomingAction::Propose(p)) =
        IncomingMessage::from_envelope(&env).unwrap()
    else {
        panic!("not a propose")
    };
    assert!(!params_hash_matches(&p));
    let out = Receiver::new(3).receive_at_ts(&env);
    assert_eq!(out.verdict, Verdict::Accepted);
    assert_eq!(out.params_hash_matches, Some(false));
    // With the right hash it matches.
    let mut fixed = give.clone();
    fixed["payload"]["params_hash"] = json!(params_hash(&give["payload"]["params"]));
    let env = validate(&fixed).unwrap();
    let out = Receiver::new(3).receive_at_ts(&env);
    assert_eq!(out.params_hash_matches, Some(true));
}

fn event(session: &str, seq: u64, dedup: &str, generation: u64) -> Value {
    json!({"ifp":"1","id":"msg_e0000001","ts":"2026-07-21T01:00:00Z","type":"event.text.message",
        "entity":"ent_abc123","session":session,"device":"dev_d100","generation":generation,
        "provenance":{"sensor":"dev_d100:kb","captured_at":"2026-07-21T01:00:00Z"},
        "labels":{"consent":"product_operation","retention":"standard"},
        "payload":{"seq":seq,"dedup":dedup}})
}

#[test]
fn receiver_memory_is_bounded_by_its_limits() {
    let limits = ReceiverLimits {
        max_sessions: 4,
        max_dedup_keys: 8,
        max_actions: 3,
    };
    let mut rx = Receiver::with_limits(1, limits);
    for s in 0..10u64 {
        for seq in 0..20u64 {
            let out = rx.receive_value_at_ts(&event(
                &format!("ses_sess{s:04}"),
                seq,
                &format!("k{s}-{seq}"),
                1,
            ));
            assert_eq!(out.verdict, Verdict::Accepted);
        }
    }
    assert_eq!(rx.session_count(), 4);
    assert_eq!(rx.dedup_key_count("ses_sess0009"), 8);
    // A recent key is still a duplicate; an evicted old key falls to the ordering rule.
    let dup = rx.receive_value_at_ts(&event("ses_sess0009", 19, "k9-19", 1));
    assert_eq!(dup.verdict, Verdict::AcknowledgedDuplicate);
    let old = rx.receive_value_at_ts(&event("ses_sess0009", 0, "k9-0", 1));
    assert_eq!(old.error_class, Some(ErrorClass::OrderingViolation));

    for n in 0..6 {
        let p = json!({"ifp":"1","id":"msg_p0000001","ts":"2026-07-21T01:00:00Z","type":"action.propose",
            "entity":"ent_abc123","session":"ses_sess0001","payload":{"action_id":format!("act_{n}"),
            "tool":"t","params":{},"params_hash":params_hash(&json!({})),"risk":"low",
            "idempotency_key":"k","expires_at":"2026-07-21T02:00:00Z"}});
        assert_eq!(rx.receive_value_at_ts(&p).verdict, Verdict::Accepted);
    }
    assert_eq!(rx.action_count(), 3);
    assert_eq!(rx.action_state("act_5"), Some(ActionState::Requested));
    assert_eq!(rx.action_state("act_0"), None);
}

#[test]
fn equal_seq_with_new_dedup_is_accepted_and_higher_generation_does_not_move_home() {
    let mut rx = Receiver::new(3);
    assert!(
        rx.receive_value_at_ts(&event("ses_abcdef", 5, "a", 3))
            .stored
    );
    assert!(
        rx.receive_value_at_ts(&event("ses_abcdef", 5, "b", 4))
            .stored
    );
    assert_eq!(rx.home_generation(), 3);
    // Sessions are independent: seq 0 in another session is fine.
    assert!(
        rx.receive_value_at_ts(&event("ses_zzzzzz", 0, "c", 3))
            .stored
    );
    rx.set_home_generation(5);
    let out = rx.receive_value_at_ts(&event("ses_abcdef", 6, "d", 4));
    assert_eq!(out.error_class, Some(ErrorClass::StaleGeneration));
    assert_eq!(out.current_generation, Some(5));
}

mod never_panics {
    use super::*;
    use proptest::prelude::*;

    fn corpus_steps() -> Vec<Value> {
        let doc = load("sequences.json");
        doc["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s["steps"].as_array().unwrap().clone())
            .map(|st| st["give"].clone())
            .collect()
    }

    proptest! {
        /// Any interleaving of corpus messages (with shuffled generations and seqs) leaves the
        /// receiver consistent: no panic, every rejection has a class, states only for actions.
        #[test]
        fn receiver_never_panics_on_interleaved_corpus_messages(
            picks in prop::collection::vec((0usize..25, 0u64..6, 0u64..8), 1..40)
        ) {
            let steps = corpus_steps();
            let mut rx = Receiver::with_limits(3, ReceiverLimits { max_sessions: 3, max_dedup_keys: 2, max_actions: 2 });
            for (i, generation, seq) in picks {
                let mut m = steps[i % steps.len()].clone();
                if m.get("generation").is_some() {
                    m["generation"] = json!(generation);
                }
                if m["payload"].get("seq").is_some() {
                    m["payload"]["seq"] = json!(seq);
                }
                let out = rx.receive_value_at_ts(&m);
                prop_assert_eq!(out.error_class.is_some(), out.verdict == Verdict::Rejected);
                if out.action_state.is_some() {
                    prop_assert!(m["type"].as_str().unwrap().starts_with("action."));
                }
                prop_assert!(rx.session_count() <= 3 && rx.action_count() <= 2);
            }
        }
    }
}
