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

fn doc_text() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/protocol.md")).unwrap()
}

/// The settings example's `manifestHash` is the hash of its own describe manifest (normalised,
/// name and id from the registry), and the hashed text and hash printed under "manifestHash"
/// are that text and that hash: the example as printed shows the line paired, no warning.
#[test]
fn the_settings_example_hash_is_the_hash_of_its_own_manifest() {
    use switchboard::phone_line::manifest::{manifest_hash, SurfaceManifest};
    let doc = doc_text();
    let mut checked = 0;
    for v in examples() {
        if v["type"] != "event.phoneline.settings" {
            continue;
        }
        let p = &v["payload"];
        for line in p["lines"].as_array().unwrap() {
            let Some(m) = line["describe"].get("manifest") else {
                continue;
            };
            let id = line["identifier"].as_str().unwrap();
            let record = &p["pairings"]["pairings"][id];
            let name = p["registry"]["phoneLines"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["identifier"] == id)
                .unwrap()["name"]
                .clone();
            assert_eq!(
                m["extension"]["name"], name,
                "a paired line's name is the registry's"
            );
            let hash = manifest_hash(m).unwrap();
            assert_eq!(
                record["manifestHash"],
                hash.as_str(),
                "settings example {id}"
            );
            assert!(
                record["decidedAt"].is_u64(),
                "decidedAt is epoch ms: {record}"
            );
            let text = switchboard::js_json::stringify(
                &SurfaceManifest::from_value(m.clone())
                    .unwrap()
                    .trusted_value(),
            );
            assert!(
                doc.contains(&format!("`{text}`")),
                "the doc prints the hashed text {text}"
            );
            assert!(
                doc.contains(&format!("its hash `{hash}`")),
                "the doc prints {hash}"
            );
            checked += 1;
        }
    }
    assert_eq!(
        checked, 1,
        "one paired line with a manifest in the settings example"
    );
}

/// Every `params_hash` in the action examples is right: a proposal's is the hash of its
/// `params`, an approval's is its proposal's; the keepalive examples carry `entity` and the
/// pong answers the ping; the ack's `applied` is a count.
#[test]
fn action_hashes_and_keepalive_examples_are_consistent() {
    let all = examples();
    let mut proposals = std::collections::HashMap::new();
    for v in &all {
        if v["type"] == "action.propose" {
            let h = switchboard::ifp::params_hash(&v["payload"]["params"]);
            assert_eq!(v["payload"]["params_hash"], h.as_str(), "{v}");
            proposals.insert(v["payload"]["action_id"].to_string(), h);
        }
    }
    let mut approvals = 0;
    for v in &all {
        if v["type"] == "action.approve" {
            let want = &proposals[&v["payload"]["action_id"].to_string()];
            assert_eq!(v["payload"]["params_hash"], want.as_str(), "{v}");
            approvals += 1;
        }
    }
    assert!(approvals >= 1);
    let ping = all
        .iter()
        .find(|v| v["type"] == "control.ping")
        .expect("a ping example");
    let pong = all
        .iter()
        .find(|v| v["type"] == "control.pong")
        .expect("a pong example");
    for v in [ping, pong] {
        assert!(
            v["entity"].is_string(),
            "entity is required on keepalive messages: {v}"
        );
    }
    assert_eq!(pong["parent"], ping["id"]);
    let mut no_entity = ping.clone();
    no_entity.as_object_mut().unwrap().remove("entity");
    let r = switchboard::ifp::validate(&no_entity).unwrap_err();
    assert!(r.reason.starts_with("entity"), "{r}");
    // What the doc says of a generation below 1 is what the validator does.
    let mut zero = all
        .iter()
        .find(|v| v["type"] == "event.phoneline.dial")
        .unwrap()
        .clone();
    zero["generation"] = serde_json::json!(0);
    let r = switchboard::ifp::validate(&zero).unwrap_err();
    assert_eq!(r.class.to_string(), "invalid_envelope");
    assert!(doc_text().contains("A generation below 1 is not a\n  generation at all: the validator refuses it `invalid_envelope`."));
    assert_eq!(
        switchboard::ifp::readable_id(serde_json::to_string(&zero).unwrap().as_bytes()).as_deref(),
        zero["id"].as_str()
    );
}

/// The `error` example's detail is word for word what the desktop's receiver answers to an
/// approval of the doc's proposal carrying the hash the example names.
#[test]
fn the_error_example_is_what_the_receiver_says() {
    let all = examples();
    let err = all
        .iter()
        .find(|v| v["type"] == "error" && v["payload"]["class"] == "binding_mismatch")
        .expect("a binding_mismatch example");
    let detail = err["payload"]["detail"].as_str().unwrap();
    let given = detail.split(' ').nth(1).unwrap();
    let propose = all
        .iter()
        .find(|v| {
            v["type"] == "action.propose" && v["payload"]["action_id"] == "act_cdde40f4fd9e4ae0"
        })
        .unwrap();
    let mut approve = all
        .iter()
        .find(|v| {
            v["type"] == "action.approve" && v["payload"]["action_id"] == "act_cdde40f4fd9e4ae0"
        })
        .unwrap()
        .clone();
    approve["id"] = err["parent"].clone();
    approve["ts"] = serde_json::json!("2026-07-21T01:00:17.000Z");
    approve["payload"]["params_hash"] = serde_json::json!(given);
    let mut rx = switchboard::ifp::Receiver::new(1);
    let p = rx.receive_value_at_ts(propose);
    assert_eq!(p.verdict, switchboard::ifp::Verdict::Accepted);
    let o = rx.receive_value_at_ts(&approve);
    assert_eq!(
        o.error_class.map(|c| c.to_string()).as_deref(),
        Some("binding_mismatch")
    );
    assert_eq!(o.reason.as_deref(), Some(detail));
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

/// The dial example of `docs/protocol.md` follows phone-line.md (request and response shapes).
#[test]
fn the_dial_example_follows_the_spec() {
    use switchboard::dials::DialOutcome;
    use switchboard::phone_line::conformance::{check_parts, DialParts, ScopeBook};
    let dials: Vec<Value> = examples()
        .into_iter()
        .filter(|v| v["type"] == "event.phoneline.dial")
        .collect();
    assert!(!dials.is_empty(), "docs/protocol.md has no dial example");
    for v in dials {
        let p = &v["payload"];
        let parts = DialParts {
            op: p["op"].as_str().unwrap(),
            callee: p["callee"].as_str().unwrap(),
            call_id: p["call_id"].as_str().unwrap_or(""),
            outcome: DialOutcome::parse(p["outcome"].as_str().unwrap()).unwrap(),
        };
        let c = check_parts(
            &parts,
            &p["request"],
            p.get("response"),
            ScopeBook::builtin(),
        );
        assert!(c.to_spec(), "{:#?}\n{v}", c.findings);
    }
}

/// The pinned-binding test vectors of `docs/protocol.md` ("Hello bindings", the
/// `pinned-hello-example` block): the keys come from the seeds the text names, the device id
/// from the phone's key, and each proof is recomputed with the desktop's own signed-bytes
/// functions and verified under the key that made it.
#[test]
fn pinned_hello_vectors_match_the_derivation() {
    use base64::Engine as _;
    use ed25519_dalek::{Signer as _, SigningKey};
    use sha2::{Digest, Sha256};
    use switchboard::link::binding::{
        desktop_hello_pinned_signed_bytes, desktop_intro_pinned_signed_bytes,
        pinned_hello_signed_bytes,
    };
    let doc = doc_text();
    let start = doc
        .find("```pinned-hello-example\n")
        .expect("docs/protocol.md has the pinned-binding vectors");
    let body = &doc[start + "```pinned-hello-example\n".len()..];
    let body = &body[..body.find("```").unwrap()];
    let vals: std::collections::HashMap<String, String> = body
        .lines()
        .map(|l| {
            let (k, v) = l.split_once('=').expect("key = value lines");
            (k.trim().to_string(), v.trim().to_string())
        })
        .collect();
    let one = |k: &str| {
        vals.get(k)
            .cloned()
            .unwrap_or_else(|| panic!("the vectors have no {k}"))
    };
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let run = |from: u8| -> [u8; 32] { std::array::from_fn(|i| from + i as u8) };
    assert_eq!(one("phone_seed"), b64.encode(run(96)));
    assert_eq!(one("desktop_seed"), b64.encode(run(128)));
    assert_eq!(one("nonce"), b64.encode(run(0)));
    assert_eq!(
        one("cert_fp"),
        hex::encode(Sha256::digest(b"worked example certificate"))
    );
    let phone = SigningKey::from_bytes(&run(96));
    let desktop = SigningKey::from_bytes(&run(128));
    assert_eq!(
        one("phone_key"),
        b64.encode(phone.verifying_key().as_bytes())
    );
    assert_eq!(
        one("desktop_key"),
        b64.encode(desktop.verifying_key().as_bytes())
    );
    let device = format!(
        "dev_{}",
        &hex::encode(Sha256::digest(phone.verifying_key().as_bytes()))[..16]
    );
    assert_eq!(one("device_id"), device);
    let (nonce, fp) = (one("nonce"), one("cert_fp"));
    let sig = |k: &SigningKey, bytes: &[u8]| b64.encode(k.sign(bytes).to_bytes());
    assert_eq!(
        one("intro_proof"),
        sig(&desktop, &desktop_intro_pinned_signed_bytes(&nonce, &fp))
    );
    assert_eq!(
        one("hello_proof"),
        sig(&phone, &pinned_hello_signed_bytes(&nonce, &device, &fp))
    );
    assert_eq!(
        one("answer_proof"),
        sig(
            &desktop,
            &desktop_hello_pinned_signed_bytes(&nonce, &device, &fp)
        )
    );
}
