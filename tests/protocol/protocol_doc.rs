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
    use switchboard::dial::conformance::{check_parts, DialParts, ScopeBook};
    use switchboard::dials::DialOutcome;
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

// ---------------------------------------------------------------------------------------------
// Every refusal text and close code the desktop can send is in docs/protocol.md.
//
// The list is read from the desktop's source (the link, the hub, the validator and receiver),
// so a refusal added without its line in the doc fails here: every place that makes an `error`
// detail (`refuse(`, `refuse_frame(`, `Rejection::invalid(`, `Rejection::new(`,
// `Outcome::rejected(`, and any `ErrorClass::X, "..."` pair such as a returned tuple) is read;
// its text is a literal, a `format!`, a `&str` const, or a `let` of one of those (or of a
// function that makes them) in the same function. A place whose text cannot be read that way
// must be one of `PASS_THROUGH` (it forwards a text made at another place that is read).

/// Refusal places that forward a text made elsewhere (file, detail expression, where it is made).
const PASS_THROUGH: &[(&str, &str, &str)] = &[
    (
        "crates/link/src/connection/incoming.rs",
        "rej.reason.clone()",
        "the validator's rejection (src/ifp)",
    ),
    (
        "crates/link/src/connection/incoming.rs",
        "detail",
        "refuse / refuse_frame's parameter: their callers are read",
    ),
    (
        "crates/link/src/connection/incoming.rs",
        "detail.clone()",
        "wire::refusal_after_hello's tuples, read as ErrorClass pairs",
    ),
    (
        "crates/app/src/hub/messages.rs",
        "words.clone()",
        "a payload that does not type (PhoneEventError: serde's words), documented as a form",
    ),
    (
        "crates/wire/src/ifp/validate.rs",
        "reason",
        "Rejection::invalid's own parameter",
    ),
    (
        "crates/wire/src/ifp/receiver/outcome.rs",
        "rejection.reason",
        "Outcome::from_rejection: the validator's rejection",
    ),
    (
        "crates/wire/src/ifp/receiver/outcome.rs",
        "self.reason.clone().unwrap_or_default()",
        "Outcome::rejection: a rejection made at a read place",
    ),
    (
        "crates/link/src/connection/pair.rs",
        "detail",
        "HelloBinding::from_ext's refusal of an unknown ext.x-ifp-binding (crates/link/src/binding.rs)",
    ),
    (
        "crates/link/src/connection/hello.rs",
        "detail",
        "HelloBinding::from_ext's refusal of an unknown ext.x-ifp-binding (crates/link/src/binding.rs)",
    ),
];

/// The desktop's source files that make what it sends to a phone (test modules cut off).
fn desktop_sources() -> Vec<(String, String)> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for d in [
        "crates/link/src",
        "crates/app/src/hub",
        "crates/wire/src/ifp",
    ] {
        walk(&root.join(d), &mut files);
    }
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let rel = f
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        // The phone's side of the link, and the corpus harness, send nothing from the desktop.
        if rel == "crates/link/src/phone_client.rs" || rel == "crates/wire/src/ifp/conformance.rs" {
            continue;
        }
        out.push((rel, without_tests(&std::fs::read_to_string(&f).unwrap())));
    }
    assert!(out.len() > 20, "the desktop's sources were not found");
    out
}

/// `text` without its `#[cfg(test)] mod …` (at the end of a file by the project's rule) and
/// without whole-line comments.
fn without_tests(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|n| n.trim_start().starts_with("mod "))
        {
            break;
        }
        if line.trim_start().starts_with("//") {
            out.push('\n');
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The string literal starting at byte `i` (a `"`): its value and the index after it.
fn string_at(s: &str, i: usize) -> Option<(String, usize)> {
    let b = s.as_bytes();
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut out = String::new();
    let mut chars = s[i + 1..].char_indices();
    while let Some((k, c)) = chars.next() {
        match c {
            '"' => return Some((out, i + 1 + k + 1)),
            '\\' => match chars.next().map(|(_, c)| c) {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('\n') => {
                    // A line continuation: the next line's leading blanks are not in the value.
                    let rest = &s[i + 1 + k + 2..];
                    let skip = rest.len() - rest.trim_start().len();
                    for _ in 0..rest[..skip].chars().count() {
                        chars.next();
                    }
                }
                Some(c) => out.push(c),
                None => return None,
            },
            c => out.push(c),
        }
    }
    None
}

/// The index of the `)` (or `}` / `]`) closing the bracket at `open`, skipping string and
/// char literals.
fn closing(s: &str, open: usize) -> usize {
    let b = s.as_bytes();
    let mut depth = 0i32;
    let mut i = open;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i = string_at(s, i).map_or(i + 1, |(_, e)| e);
                continue;
            }
            b'\'' if b.get(i + 2) == Some(&b'\'') => i += 2,
            b'\'' if b.get(i + 1) == Some(&b'\\') && b.get(i + 3) == Some(&b'\'') => i += 3,
            b'(' | b'{' | b'[' => depth += 1,
            b')' | b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
        i += 1;
    }
    panic!("unbalanced bracket at {open}");
}

/// The top-level comma-separated arguments of `s` (the text between a call's brackets).
fn arguments(s: &str) -> Vec<String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < b.len() {
        match b[i] {
            b'"' => {
                i = string_at(s, i).map_or(i + 1, |(_, e)| e);
                continue;
            }
            b'(' | b'{' | b'[' => {
                i = closing(s, i) + 1;
                continue;
            }
            b',' => {
                out.push(s[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if !s[start..].trim().is_empty() {
        out.push(s[start..].trim().to_string());
    }
    out
}

/// A detail as the source makes it: a plain literal, or a `format!` string (`{…}` are values).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Text {
    Literal(String),
    Format(String),
}

impl Text {
    /// A regex matching the doc's way of writing it: the fixed parts as they are, each value
    /// as anything (the doc writes `<what>`).
    fn pattern(&self) -> regex::Regex {
        let mut re = String::from("^");
        match self {
            Text::Literal(t) => re.push_str(&regex::escape(t)),
            Text::Format(f) => {
                let mut chars = f.chars().peekable();
                let mut fixed = String::new();
                while let Some(c) = chars.next() {
                    match (c, chars.peek()) {
                        ('{', Some('{')) | ('}', Some('}')) => {
                            chars.next();
                            fixed.push(c);
                        }
                        ('{', _) => {
                            for c in chars.by_ref() {
                                if c == '}' {
                                    break;
                                }
                            }
                            re.push_str(&regex::escape(&fixed));
                            fixed.clear();
                            re.push_str(".*?");
                        }
                        _ => fixed.push(c),
                    }
                }
                re.push_str(&regex::escape(&fixed));
            }
        }
        re.push('$');
        regex::Regex::new(&re).unwrap()
    }

    fn text(&self) -> &str {
        match self {
            Text::Literal(t) | Text::Format(t) => t,
        }
    }
}

/// A `&str` const's value, looked up in every source file.
fn const_value(name: &str, sources: &[(String, String)]) -> Option<String> {
    let re = regex::Regex::new(&format!(r"const {name}: &str =\s*")).unwrap();
    sources.iter().find_map(|(_, s)| {
        let m = re.find(s)?;
        string_at(s, m.end()).map(|(v, _)| v)
    })
}

/// Every literal text an expression makes: its `format!` strings, else its string literals;
/// a call of a function of the sources counts with that function's texts.
fn texts_in(expr: &str, sources: &[(String, String)], depth: usize) -> Vec<Text> {
    let mut out = Vec::new();
    let fmt = regex::Regex::new(r"format!\(\s*").unwrap();
    for m in fmt.find_iter(expr) {
        if let Some((v, _)) = string_at(expr, m.end()) {
            out.push(Text::Format(v));
        }
    }
    if out.is_empty() {
        let mut i = 0;
        while let Some(k) = expr[i..].find('"') {
            match string_at(expr, i + k) {
                Some((v, e)) => {
                    out.push(Text::Literal(v));
                    i = e;
                }
                None => break,
            }
        }
    }
    if out.is_empty() && depth < 2 {
        let call = regex::Regex::new(r"^(?:self\.|[a-z_]+::)*([a-z_][a-z0-9_]*)\(").unwrap();
        if let Some(c) = call.captures(expr.trim()) {
            let def = regex::Regex::new(&format!(r"fn {}\b", &c[1])).unwrap();
            for (_, s) in sources {
                if let Some(m) = def.find(s) {
                    let open = m.end() + s[m.end()..].find('{').unwrap();
                    let body = &s[open..=closing(s, open)];
                    out.extend(texts_in(body, sources, depth + 1));
                }
            }
        }
    }
    out
}

/// The texts a detail expression at `at` in `src` stands for (empty: not readable here).
fn resolve(expr: &str, src: &str, at: usize, sources: &[(String, String)]) -> Vec<Text> {
    let mut e = expr.trim().trim_start_matches('&').to_string();
    for tail in [".into()", ".to_string()", ".clone()", ".to_owned()"] {
        if let Some(x) = e.strip_suffix(tail) {
            e = x.to_string();
        }
    }
    if e.starts_with('"') || e.starts_with("format!(") {
        return texts_in(&e, sources, 0);
    }
    let last = e.rsplit("::").next().unwrap_or(&e);
    if regex::Regex::new(r"^[A-Z][A-Z0-9_]+$")
        .unwrap()
        .is_match(last)
    {
        return const_value(last, sources)
            .map(Text::Literal)
            .into_iter()
            .collect();
    }
    if regex::Regex::new(r"^[a-z_][a-z0-9_]*$")
        .unwrap()
        .is_match(&e)
    {
        // A `let` of it in the same function, before the place.
        let fn_start = src[..at].rfind("fn ").unwrap_or(0);
        let binding = regex::Regex::new(&format!(
            r"let (?:mut )?{e}(?::[^=]+)? =\s*|let Some\((?:mut )?{e}\) =\s*"
        ))
        .unwrap();
        if let Some(m) = binding.find_iter(&src[fn_start..at]).last() {
            let start = fn_start + m.end();
            // The expression runs to the `;` at its own depth (an `if let`'s to its block).
            let conditional = m.as_str().starts_with("let Some");
            let mut i = start;
            let b = src.as_bytes();
            while i < at && b[i] != b';' && !(conditional && b[i] == b'{') {
                match b[i] {
                    b'"' => {
                        i = string_at(src, i).map_or(i + 1, |(_, x)| x);
                        continue;
                    }
                    b'(' | b'{' | b'[' => i = closing(src, i),
                    _ => {}
                }
                i += 1;
            }
            return texts_in(&src[start..i], sources, 0);
        }
    }
    Vec::new()
}

/// One refusal the desktop can send: class (`None`: given by the text's own place), text, and
/// where it is made.
#[derive(Debug)]
struct Refusal {
    class: Option<String>,
    text: Text,
    at: String,
}

fn class_of(expr: &str) -> Option<String> {
    let re = regex::Regex::new(r"ErrorClass::([A-Za-z]+)$").unwrap();
    let variant = re.captures(expr.trim())?[1].to_string();
    let class = switchboard::ifp::ErrorClass::ALL
        .iter()
        .find(|c| format!("{c:?}") == variant)
        .unwrap_or_else(|| panic!("no ErrorClass::{variant}"));
    Some(class.as_str().to_string())
}

/// Every refusal the desktop's source can send, and the places it could not read.
fn source_refusals() -> (Vec<Refusal>, Vec<String>) {
    let sources = desktop_sources();
    let mut found = Vec::new();
    let mut unread = Vec::new();
    let site = regex::Regex::new(
        r"(\.refuse\(|\.refuse_frame\(|Rejection::invalid\(|Rejection::new\(|Outcome::rejected\(|ErrorClass::[A-Za-z]+,\s*(?:format!\(|&?\x22))",
    )
    .unwrap();
    for (file, src) in &sources {
        for m in site.find_iter(src) {
            let line = src[..m.start()].lines().count();
            let at = format!("{file}:{line}");
            let kind = m.as_str();
            let (class, detail) = if kind.starts_with("ErrorClass::") {
                let comma = kind.find(',').unwrap();
                let rest = &src[m.start() + comma + 1..];
                let start = m.start() + comma + 1 + (rest.len() - rest.trim_start().len());
                let end = if src[start..].starts_with("format!") {
                    closing(src, start + "format!".len()) + 1
                } else {
                    let s = start + usize::from(src[start..].starts_with('&'));
                    string_at(src, s).unwrap().1
                };
                (class_of(&kind[..comma]), src[start..end].to_string())
            } else {
                let open = m.end() - 1;
                let args = arguments(&src[open + 1..closing(src, open)]);
                if src[..m.start()].ends_with("fn") || src[..m.start()].ends_with("fn ") {
                    continue;
                }
                match kind {
                    ".refuse(" if file.starts_with("crates/app/src/hub/") => continue, // an Outcome, read at its place
                    ".refuse(" => (class_of(&args[0]), args[1].clone()),
                    ".refuse_frame(" => (Some("invalid_envelope".into()), args[0].clone()),
                    "Rejection::invalid(" => (Some("invalid_envelope".into()), args[0].clone()),
                    _ => {
                        // With a class from a variable the text is a pass-through, read at its place.
                        if class_of(&args[0]).is_none() {
                            if !PASS_THROUGH
                                .iter()
                                .any(|(f, e, _)| f == file && *e == args[1])
                            {
                                unread
                                    .push(format!("{at}: class {} and text {}", args[0], args[1]));
                            }
                            continue;
                        }
                        (class_of(&args[0]), args[1].clone())
                    }
                }
            };
            let texts = resolve(&detail, src, m.start(), &sources);
            if texts.is_empty() {
                if !PASS_THROUGH
                    .iter()
                    .any(|(f, e, _)| f == file && *e == detail.trim())
                {
                    unread.push(format!("{at}: {}", detail.trim()));
                }
                continue;
            }
            for text in texts {
                found.push(Refusal {
                    class: class.clone(),
                    text,
                    at: at.clone(),
                });
            }
        }
    }
    // Only the two makers of an `error` payload exist: every other place goes through them.
    for (file, src) in &sources {
        if src.contains("ErrorPayload {")
            && !matches!(
                file.as_str(),
                "crates/link/src/connection.rs"
                    | "crates/wire/src/ifp/outgoing.rs"
                    | "crates/wire/src/ifp/payload.rs"
            )
        {
            unread.push(format!("{file}: makes an ErrorPayload itself"));
        }
    }
    (found, unread)
}

/// The doc's refusal rows: (class, detail as written, the row) from every table row whose
/// first cell is a class in backticks and whose second is a detail in backticks.
fn doc_refusals(doc: &str) -> Vec<(String, String, String)> {
    let classes: Vec<&str> = switchboard::ifp::ErrorClass::ALL
        .iter()
        .map(|c| c.as_str())
        .collect();
    let mut out = Vec::new();
    for line in doc.lines() {
        let cells: Vec<&str> = line.trim().trim_matches('|').split(" | ").collect();
        if cells.len() < 2 {
            continue;
        }
        let class = cells[0].trim().trim_matches('`');
        if !classes.contains(&class) {
            continue;
        }
        let d = cells[1].trim();
        let detail = if let Some(x) = d.strip_prefix("`` ").and_then(|x| x.strip_suffix(" ``")) {
            x
        } else if let Some(x) = d.strip_prefix('`').and_then(|x| x.strip_suffix('`')) {
            x
        } else {
            continue;
        };
        out.push((
            class.to_string(),
            detail.replace("\\|", "|"),
            line.to_string(),
        ));
    }
    out
}

#[test]
fn every_refusal_and_close_code_the_desktop_can_send_is_in_the_doc() {
    let doc = doc_text();
    let (found, unread) = source_refusals();
    assert!(
        unread.is_empty(),
        "refusal places whose text this test cannot read (give the text as a literal, a format!, \
         a &str const or a let of one in the same function, or add the place to PASS_THROUGH \
         saying where its text is made):\n{}",
        unread.join("\n")
    );
    // The places the doc and the issue name are among those read.
    for known in [
        "pairing refused: open a pairing window",
        "hello refused: this device is not paired",
        "not an ifp/1 envelope field",
        "extension keys must start with",
        "frame over the 1 MiB limit",
        "below the last accepted seq",
    ] {
        assert!(
            found.iter().any(|r| r.text.text().contains(known)),
            "the source scan no longer finds {known:?}"
        );
    }
    let rows = doc_refusals(&doc);
    let mut missing = Vec::new();
    let mut used = vec![false; rows.len()];
    for r in &found {
        let re = r.text.pattern();
        let mut hit = false;
        for (i, (class, detail, _)) in rows.iter().enumerate() {
            if r.class.as_deref().map_or(true, |c| c == class) && re.is_match(detail) {
                used[i] = true;
                hit = true;
            }
        }
        if !hit {
            missing.push(format!(
                "{}: `{}` `{}`",
                r.at,
                r.class.as_deref().unwrap_or("?"),
                r.text.text()
            ));
        }
    }
    assert!(
        missing.is_empty(),
        "refusals the desktop can send that docs/protocol.md does not list (a row `| `class` | \
         `detail, <value> for each value` | ... |`):\n{}",
        missing.join("\n")
    );
    let stale: Vec<&String> = rows
        .iter()
        .zip(&used)
        .filter(|(_, u)| !**u)
        .map(|((_, _, line), _)| line)
        .collect();
    assert!(
        stale.is_empty(),
        "docs/protocol.md lists refusals the desktop no longer sends:\n{stale:#?}"
    );
    // Close codes: every code the link closes with is in the close-code table with its number,
    // and every literal close reason is on its row.
    let closes = regex::Regex::new(r"CloseCode::([A-Za-z]+)").unwrap();
    let close_site = regex::Regex::new(r#"self\.close\(CloseCode::([A-Za-z]+),\s*""#).unwrap();
    let table = doc
        .split("### Close codes")
        .nth(1)
        .expect("a Close codes section")
        .split("\n### ")
        .next()
        .unwrap();
    let row = |code: u16| {
        table
            .lines()
            .find(|l| l.starts_with(&format!("| {code} ")))
            .unwrap_or_else(|| panic!("the Close codes table has no row for {code}"))
    };
    let number = |variant: &str| -> u16 {
        use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
        u16::from(match variant {
            "Normal" => CloseCode::Normal,
            "Away" => CloseCode::Away,
            "Protocol" => CloseCode::Protocol,
            "Unsupported" => CloseCode::Unsupported,
            "Invalid" => CloseCode::Invalid,
            "Policy" => CloseCode::Policy,
            "Size" => CloseCode::Size,
            "Error" => CloseCode::Error,
            other => panic!("a close code this test does not know: CloseCode::{other}"),
        })
    };
    let mut codes = BTreeSet::new();
    for (file, src) in desktop_sources() {
        for c in closes.captures_iter(&src) {
            codes.insert(number(&c[1]));
        }
        for c in close_site.captures_iter(&src) {
            let start = c.get(0).unwrap().end() - 1;
            let (reason, _) = string_at(&src, start).unwrap();
            let r = row(number(&c[1]));
            assert!(
                r.contains(&format!("`{reason}`")),
                "{file}: close reason {reason:?} is not on the Close codes row {r}"
            );
        }
    }
    assert!(codes.len() >= 4, "close codes found: {codes:?}");
    for code in codes {
        row(code);
    }
}

/// The canonical JSON the doc prints for the proposal example is what the desktop hashes, and
/// its hash is the example's `params_hash`.
#[test]
fn the_params_hash_rule_example_is_the_canonical_text() {
    let doc = doc_text();
    let proposal = examples()
        .into_iter()
        .find(|v| v["type"] == "action.propose")
        .unwrap();
    let params = &proposal["payload"]["params"];
    let text = switchboard::ifp::params_hash::canonical_params(params);
    assert!(doc.contains(&format!("hashes\n`{text}`")), "{text}");
    assert_eq!(
        format!("sha256:{}", switchboard::js_json::sha256_hex(&text)),
        proposal["payload"]["params_hash"].as_str().unwrap()
    );
}
