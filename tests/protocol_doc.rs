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

/// The pairing worked example of `docs/protocol.md` ("Pairing", the `pairing-example` block):
/// the commitment and each verification code are recomputed from the inputs printed there, and
/// the inputs are the byte runs the text says they are. One of the codes starts with 0.
#[test]
fn pairing_worked_example_matches_the_derivation() {
    use base64::Engine as _;
    use sha2::{Digest, Sha256};
    use switchboard::link::pairing::{commitment_b64, verification_code};
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/protocol.md")).unwrap();
    let start = doc
        .find("```pairing-example\n")
        .expect("docs/protocol.md has the pairing worked example");
    let body = &doc[start + "```pairing-example\n".len()..];
    let body = &body[..body.find("```").unwrap()];
    let mut lines: Vec<(String, String)> = Vec::new();
    for line in body.lines() {
        let (k, v) = line.split_once('=').expect("key = value lines");
        lines.push((k.trim().to_string(), v.trim().to_string()));
    }
    let one = |k: &str| {
        lines
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("the example has no {k}"))
    };
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    let run = |from: u8| (from..from + 32).collect::<Vec<u8>>();
    // The inputs are what the text says.
    let dn = one("desktop_nonce");
    let fp = one("cert_fp");
    let pk = one("phone_key");
    assert_eq!(dn, b64(&run(0)));
    assert_eq!(pk, b64(&run(64)));
    assert_eq!(
        fp,
        hex::encode(Sha256::digest(b"worked example certificate"))
    );
    assert_eq!(commitment_b64(&dn, &fp, &pk).unwrap(), one("commitment"));
    // Each phone_nonce is followed by its code.
    let mut checked = Vec::new();
    for w in lines.windows(2) {
        if w[0].0 == "phone_nonce" {
            assert_eq!(w[1].0, "code", "a code follows each phone nonce");
            let got = verification_code(&dn, &w[0].1, &fp, &pk).unwrap();
            assert_eq!(got, w[1].1, "the code for phone nonce {}", w[0].1);
            checked.push(got);
        }
    }
    assert_eq!(checked.len(), 2);
    assert_eq!(one("phone_nonce"), b64(&run(32)));
    let mut second = run(32);
    second[0] = 0x25;
    assert!(lines
        .iter()
        .any(|(k, v)| k == "phone_nonce" && *v == b64(&second)));
    assert!(
        checked.iter().any(|c| c.starts_with('0') && c.len() == 7),
        "a code with a leading zero, kept: {checked:?}"
    );
}
