//! Every JSON example in `docs/protocol.md` is a valid ifp/1 message of the shape the text says,
//! and every message type of "Every message at a glance" after hello has an example.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use serde_json::Value;
use switchboard::ifp::outgoing::{ControlAck, DesktopRequest};
use switchboard::ifp::payload::{ErrorPayload, IncomingMessage};
use switchboard::phone_events::{PhoneEvent, PHONE_EVENT_TYPES};

fn examples() -> Vec<Value> {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/protocol.md")).unwrap();
    let mut out = Vec::new();
    let mut block: Option<String> = None;
    for line in doc.lines() {
        match (&mut block, line.trim_start()) {
            (None, "```json") => block = Some(String::new()),
            (Some(b), "```") => {
                // Sketches with elisions (`msg_…`) are shapes, not messages.
                if !b.contains('…') {
                    let v = serde_json::from_str::<Value>(b).unwrap_or_else(|e| {
                        panic!("a JSON example that does not parse ({e}):\n{b}")
                    });
                    out.push(v);
                }
                block = None;
            }
            (Some(b), _) => {
                b.push_str(line);
                b.push('\n');
            }
            _ => {}
        }
    }
    out
}

#[test]
fn protocol_examples_are_valid_and_complete() {
    let mut seen = BTreeSet::new();
    for v in examples() {
        let env = switchboard::ifp::validate(&v).unwrap_or_else(|r| panic!("{r}: {v}"));
        let t = env.r#type.clone();
        if PHONE_EVENT_TYPES.contains(&t.as_str()) {
            PhoneEvent::from_envelope(&env).unwrap_or_else(|e| panic!("{e}: {v}"));
        } else if t.starts_with("action.") {
            assert!(matches!(
                IncomingMessage::from_envelope(&env).unwrap(),
                IncomingMessage::Action(_)
            ));
        } else {
            let p = Value::Object(env.payload.clone());
            match t.as_str() {
                "control.ack" => drop(serde_json::from_value::<ControlAck>(p).unwrap()),
                "desktop.request" => drop(serde_json::from_value::<DesktopRequest>(p).unwrap()),
                "error" => drop(serde_json::from_value::<ErrorPayload>(p).unwrap()),
                _ => {}
            }
        }
        seen.insert(t);
    }
    for t in PHONE_EVENT_TYPES
        .iter()
        .copied()
        .chain([
            "action.propose",
            "action.approve",
            "action.reject",
            "action.result",
            "action.cancel",
        ])
        .chain(["control.ack", "desktop.request", "error"])
    {
        assert!(seen.contains(t), "docs/protocol.md has no example of {t}");
    }
}
