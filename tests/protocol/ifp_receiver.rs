//! Receiver choices beyond the corpus (documented in `crates/wire/src/ifp/receiver.rs`): lifecycle edges,
//! the fence on action messages, typing of every accepted corpus message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{json, Value};
use switchboard::ifp::payload::{IncomingAction, IncomingMessage};
use switchboard::ifp::{validate, ActionState, ErrorClass, Receiver, Timestamp, Verdict};

const HASH: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

fn msg(ty: &str, ts: &str, generation: Option<u64>, payload: Value) -> Value {
    let mut m = json!({"ifp":"1","id":"msg_x0000001","ts":ts,"type":ty,"entity":"ent_abc123",
        "session":"ses_a10000","device":"dev_d100","payload":payload});
    if let Some(g) = generation {
        m["generation"] = json!(g);
    }
    m
}

fn propose(id: &str) -> Value {
    msg(
        "action.propose",
        "2026-07-21T01:00:00Z",
        None,
        json!({"action_id":id,"tool":"messages.send","params":{"to":"+1"},"params_hash":HASH,
            "risk":"medium","idempotency_key":id,"expires_at":"2026-07-21T01:05:00Z"}),
    )
}

fn approve(id: &str, ts: &str, generation: u64) -> Value {
    msg(
        "action.approve",
        ts,
        Some(generation),
        json!({"action_id":id,"params_hash":HASH,"confirmation":{"mode":"user_confirmed","ref":"aud_1"}}),
    )
}

fn result(id: &str, status: &str) -> Value {
    msg(
        "action.result",
        "2026-07-21T01:02:00Z",
        Some(3),
        json!({"action_id":id,"status":status,"error_class":null}),
    )
}

fn cancel(id: &str) -> Value {
    msg(
        "action.cancel",
        "2026-07-21T01:02:00Z",
        None,
        json!({"action_id":id}),
    )
}

fn reject(id: &str) -> Value {
    msg(
        "action.reject",
        "2026-07-21T01:02:00Z",
        None,
        json!({"action_id":id,"reason_class":"user_denied"}),
    )
}

fn step(rx: &mut Receiver, m: &Value) -> (Verdict, Option<ErrorClass>, Option<ActionState>) {
    let o = rx.receive_value_at_ts(m);
    (o.verdict, o.error_class, o.action_state)
}

use ActionState as S;
use ErrorClass as E;
use Verdict as V;

#[test]
fn failed_result_and_cancel_after_approval() {
    let mut rx = Receiver::new(3);
    step(&mut rx, &propose("act_one001"));
    step(&mut rx, &approve("act_one001", "2026-07-21T01:01:00Z", 3));
    assert_eq!(
        step(&mut rx, &result("act_one001", "failed")),
        (V::Accepted, None, Some(S::Failed))
    );

    let mut rx = Receiver::new(3);
    step(&mut rx, &propose("act_two001"));
    step(&mut rx, &approve("act_two001", "2026-07-21T01:01:00Z", 3));
    assert_eq!(
        step(&mut rx, &cancel("act_two001")),
        (V::Accepted, None, Some(S::Cancelled))
    );
    // A different result on a finished action is refused; state unchanged.
    assert_eq!(
        step(&mut rx, &result("act_two001", "executed")),
        (V::Rejected, Some(E::InvalidEnvelope), Some(S::Cancelled))
    );
}

#[test]
fn out_of_order_lifecycle_messages_are_invalid_envelope() {
    let mut rx = Receiver::new(3);
    // Unknown action.
    assert_eq!(
        step(&mut rx, &cancel("act_nothere")).1,
        Some(E::InvalidEnvelope)
    );
    step(&mut rx, &propose("act_abc001"));
    // Result before approval.
    assert_eq!(
        step(&mut rx, &result("act_abc001", "executed")),
        (V::Rejected, Some(E::InvalidEnvelope), Some(S::Requested))
    );
    assert_eq!(
        step(&mut rx, &approve("act_abc001", "2026-07-21T01:01:00Z", 3)).2,
        Some(S::Approved)
    );
    // Identical approve repeated: duplicate; reject after approval: refused.
    assert_eq!(
        step(&mut rx, &approve("act_abc001", "2026-07-21T01:01:05Z", 3)),
        (V::AcknowledgedDuplicate, None, Some(S::Approved))
    );
    assert_eq!(
        step(&mut rx, &reject("act_abc001")),
        (V::Rejected, Some(E::InvalidEnvelope), Some(S::Approved))
    );
    // Identical propose while live: duplicate; a different one: refused.
    assert_eq!(
        step(&mut rx, &propose("act_abc001")).0,
        V::AcknowledgedDuplicate
    );
    let mut other = propose("act_abc001");
    other["payload"]["tool"] = json!("calls.place");
    assert_eq!(step(&mut rx, &other).1, Some(E::InvalidEnvelope));
}

#[test]
fn stale_approve_is_fenced_and_state_stays_requested() {
    let mut rx = Receiver::new(3);
    step(&mut rx, &propose("act_gen001"));
    let o = rx.receive_value_at_ts(&approve("act_gen001", "2026-07-21T01:01:00Z", 2));
    assert_eq!(o.error_class, Some(E::StaleGeneration));
    assert_eq!(o.current_generation, Some(3));
    assert_eq!(rx.action_state("act_gen001"), Some(S::Requested));
}

#[test]
fn expiry_uses_the_given_now_strictly_after_expires_at() {
    let mut rx = Receiver::new(3);
    step(&mut rx, &propose("act_exp001"));
    let env = validate(&approve("act_exp001", "2026-07-21T01:01:00Z", 3)).unwrap();
    // Exactly at expires_at: still in time.
    let at = Timestamp::parse("2026-07-21T01:05:00Z").unwrap();
    assert_eq!(rx.receive(&env, &at).action_state, Some(S::Approved));

    let mut rx = Receiver::new(3);
    step(&mut rx, &propose("act_exp001"));
    // The message's ts is early, but "now" says late: now decides.
    let late = Timestamp::parse("2026-07-21T01:05:00.001Z").unwrap();
    let o = rx.receive(&env, &late);
    assert_eq!(o.error_class, Some(E::ActionExpired));
    assert_eq!(rx.action_state("act_exp001"), Some(S::Expired));
}

#[test]
fn every_accepted_corpus_message_types_cleanly() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/corpus/ifp1/fixtures/messages.json"
    ))
    .unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    for c in doc["cases"].as_array().unwrap() {
        let Ok(env) = validate(&c["message"]) else {
            continue;
        };
        let typed = IncomingMessage::from_envelope(&env).unwrap();
        let kind = match typed {
            IncomingMessage::Event(e) => {
                assert_eq!(json!(e.seq), env.payload["seq"]);
                "event"
            }
            IncomingMessage::PairRequest(p) => {
                assert_eq!(p.pairing_code, "483-921");
                "pair.request"
            }
            IncomingMessage::Hello(h) => {
                assert_eq!((h.protocol.min, h.protocol.max), (1, 1));
                "control.hello"
            }
            IncomingMessage::Ping => "control.ping",
            IncomingMessage::Action(IncomingAction::Propose(p)) => {
                assert_eq!(p.params["body"], "on my way");
                "action.propose"
            }
            IncomingMessage::Action(IncomingAction::Reject(_)) => "action.reject",
            IncomingMessage::Error(e) => {
                assert_eq!(json!(e.class), env.payload["class"]);
                "error"
            }
            IncomingMessage::Other => "other",
            other => panic!("unexpected {other:?}"),
        };
        if kind == "other" {
            assert_eq!(env.r#type, "control.future_thing");
        } else if kind != "event" {
            assert_eq!(env.r#type, kind);
        }
    }
}

/// Actions put back from an earlier run of the desktop (`Receiver::restore_action`): what
/// follows them is judged as without the restart, and a message the phone resends because its
/// acknowledgement did not arrive before the restart is a duplicate when it says what the state
/// already records, refused when it contradicts it.
#[test]
fn restored_actions_judge_what_follows_and_what_is_resent() {
    let exp: Timestamp = "2026-07-21T01:05:00Z".parse().unwrap();
    let other = "sha256:2222222222222222222222222222222222222222222222222222222222222222";
    let mut rx = Receiver::new(3);
    for (id, state) in [
        ("act_req00001", S::Requested),
        ("act_apr00001", S::Approved),
        ("act_exe00001", S::Executed),
        ("act_rej00001", S::Rejected),
        ("act_can00001", S::Cancelled),
    ] {
        assert!(rx.restore_action(id, state, HASH, exp.clone()));
    }
    assert!(
        !rx.restore_action("act_req00001", S::Executed, HASH, exp.clone()),
        "an action already tracked is left alone"
    );
    assert_eq!(rx.action_state("act_req00001"), Some(S::Requested));

    // The proposal resent, whatever its state since: a duplicate; another hash: refused.
    for id in ["act_req00001", "act_exe00001"] {
        assert_eq!(
            step(&mut rx, &propose(id)).0,
            V::AcknowledgedDuplicate,
            "{id}"
        );
    }
    let mut changed = propose("act_req00001");
    changed["payload"]["params_hash"] = json!(other);
    assert_eq!(
        step(&mut rx, &changed),
        (V::Rejected, Some(E::InvalidEnvelope), Some(S::Requested))
    );

    // Approved (or ended after approval): the same approval again is a duplicate.
    for (id, state) in [("act_apr00001", S::Approved), ("act_exe00001", S::Executed)] {
        assert_eq!(
            step(&mut rx, &approve(id, "2026-07-21T01:01:00Z", 3)),
            (V::AcknowledgedDuplicate, None, Some(state)),
            "{id}"
        );
    }
    // The end it records again: a duplicate; another end: refused, state unchanged.
    assert_eq!(
        step(&mut rx, &result("act_exe00001", "executed")).0,
        V::AcknowledgedDuplicate
    );
    assert_eq!(
        step(&mut rx, &result("act_exe00001", "failed")),
        (V::Rejected, Some(E::InvalidEnvelope), Some(S::Executed))
    );
    assert_eq!(
        step(&mut rx, &reject("act_rej00001")).0,
        V::AcknowledgedDuplicate
    );
    assert_eq!(
        step(&mut rx, &cancel("act_can00001")).0,
        V::AcknowledgedDuplicate
    );
    assert_eq!(
        step(&mut rx, &reject("act_can00001")),
        (V::Rejected, Some(E::InvalidEnvelope), Some(S::Cancelled))
    );

    // What comes after the restart is judged as usual: approved, then its result.
    assert_eq!(
        step(&mut rx, &approve("act_req00001", "2026-07-21T01:01:00Z", 3)),
        (V::Accepted, None, Some(S::Approved))
    );
    assert_eq!(
        step(&mut rx, &result("act_apr00001", "failed")),
        (V::Accepted, None, Some(S::Failed))
    );
    // A restored proposal still expires: an approval after `expires_at` is action_expired.
    assert!(rx.restore_action("act_late0001", S::Requested, HASH, exp));
    assert_eq!(
        step(&mut rx, &approve("act_late0001", "2026-07-21T01:06:00Z", 3)),
        (V::Rejected, Some(E::ActionExpired), Some(S::Expired))
    );
}
