//! [`DialFrame::parse`] is a shortcut, never a second set of rules: for every frame made here it
//! either declines (`None`) or agrees with the general path (`validate_frame`, the device check,
//! `PhoneEvent::from_envelope`, `DialEvent::to_dial`) field for field, and the receiver rules
//! applied to its fields (`Receiver::receive_event_fields`) give what `Receiver::receive` gives
//! the envelope. Frames: a realistic dial, every dial of the demo scenario as the reference phone
//! resolves it, targeted oddities, every single-field edit of the realistic dial, and random
//! combinations of edits (proptest).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{json, Value};
use switchboard::ifp::{validate_frame, Receiver};
use switchboard::phone::scenario::{Resolver, Scenario, Sender};
use switchboard::phone_events::{DialFrame, PhoneEvent, DIAL_EVENT};

/// The device id of the phone the frames come from.
const PHONE: &str = "dev_phone_a1b2";

const DEMO: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/demo.jsonl"));

/// Asserts that the fast path agrees with the general path on `text` from the phone `phone`:
/// when `DialFrame::parse` gives `Some`, the general path accepts the frame as a dial from that
/// phone and every field matches; the receiver rules on the frame's fields give the same
/// outcomes as on the envelope. Returns whether the fast path took the frame.
fn assert_agrees(text: &str, phone: &str) -> bool {
    let phone_id: Arc<str> = Arc::from(phone);
    let Some(fast) = DialFrame::parse(text, &phone_id) else {
        return false;
    };
    let env = validate_frame(text.as_bytes())
        .unwrap_or_else(|r| panic!("fast path took a frame the validator refuses ({r}):\n{text}"));
    assert!(
        env.device.as_deref().map_or(true, |d| d == phone),
        "fast path took a frame from another device {:?}:\n{text}",
        env.device
    );
    let event = PhoneEvent::from_envelope(&env)
        .unwrap_or_else(|e| panic!("fast path took a frame the event rules refuse ({e}):\n{text}"));
    let PhoneEvent::Dial(d) = event else {
        panic!(
            "fast path took a frame that is not a dial ({}):\n{text}",
            env.r#type
        )
    };
    let labels = env.labels.expect("events carry labels");
    assert_eq!(
        fast.dial,
        d.to_dial(
            phone,
            env.session.as_deref().unwrap_or(""),
            labels.retention
        ),
        "dial record differs:\n{text}"
    );
    assert_eq!(fast.id, env.id, "id differs:\n{text}");
    assert_eq!(
        Some(&*fast.session),
        env.session.as_deref(),
        "session differs:\n{text}"
    );
    assert_eq!(
        Some(fast.generation),
        env.generation,
        "generation differs:\n{text}"
    );
    assert_eq!(fast.seq, d.seq, "seq differs:\n{text}");
    // The receiver rules on the fields the fast path read: accepted, then a duplicate; fenced
    // when the home generation is above the frame's.
    for home in [1, fast.generation, fast.generation + 1] {
        let mut whole = Receiver::new(home);
        let mut fields = Receiver::new(home);
        for _ in 0..2 {
            let a = whole.receive(&env, &env.ts);
            let b = fields.receive_event_fields(
                DIAL_EVENT,
                Some(&*fast.session),
                Some(fast.generation),
                fast.seq,
                &fast.dial.id,
                &env.id,
            );
            assert_eq!(a, b, "receiver outcomes differ (home {home}):\n{text}");
        }
    }
    true
}

/// Whether the general path accepts `text` as a dial from `phone`.
fn general_accepts(text: &str, phone: &str) -> bool {
    let Ok(env) = validate_frame(text.as_bytes()) else {
        return false;
    };
    env.device.as_deref().map_or(true, |d| d == phone)
        && matches!(PhoneEvent::from_envelope(&env), Ok(PhoneEvent::Dial(_)))
}

/// A dial as the phone sends it (the shape `Resolver` gives the demo's dial lines).
fn realistic() -> Value {
    json!({
        "ifp": "1",
        "id": "msg_5d41402abc4b2a76b971",
        "ts": "2026-07-21T01:00:01.590Z",
        "type": "event.phoneline.dial",
        "entity": "ent_phone0a1b2c3d",
        "session": "ses_mirror4e5f6a7b8c9d",
        "device": PHONE,
        "generation": 1,
        "provenance": {
            "sensor": "dev_phone_a1b2:phoneline",
            "captured_at": "2026-07-21T01:00:01.590Z"
        },
        "labels": {"consent": "product_operation", "retention": "extended"},
        "payload": {
            "dedup": "dial_9c1d2e3f4a5b6c7d",
            "call_id": "call_0a1b2c3d4e5f6a7b",
            "caller": "lumiagent",
            "callee": "lumirealm",
            "endpoint": "lumirealm.phoneline",
            "op": "grep_items",
            "request": {
                "op": "grep_items", "surface": "module_envelope", "characterId": "char_aria",
                "pattern": "lantern \"harbour\"", "limits": {"maxHits": 20, "contextChars": 80},
                "flags": ["i"], "minScore": 0.75, "callId": "call_0a1b2c3d4e5f6a7b"
            },
            "started_at": "2026-07-21T01:00:00.250Z",
            "duration_ms": 1340,
            "outcome": "ok",
            "response": {
                "hits": [{
                    "id": "mod_aria_lore",
                    "path": "lorebook.entries[4].content",
                    "snippet": "the lantern at the harbour\nat dusk \u{2014} \u{e9} \u{1f600}\t\u{1}",
                    "score": 0.5
                }],
                "truncated": false, "next": null, "total": 1
            },
            "seq": 7
        }
    })
}

#[test]
fn realistic_dial_takes_the_fast_path_and_agrees() {
    let v = realistic();
    let compact = v.to_string();
    assert!(general_accepts(&compact, PHONE));
    assert!(
        assert_agrees(&compact, PHONE),
        "fast path declined:\n{compact}"
    );
    let fast = DialFrame::parse(&compact, &Arc::from(PHONE)).unwrap();
    // Already compact: kept as received.
    assert_eq!(
        fast.dial.request.as_str(),
        v["payload"]["request"].to_string()
    );
    assert_eq!(&*fast.dial.phone, PHONE);
    assert!(fast.dial.slow);
    // Pretty-printed: the general path accepts it, and the fast path agrees (it re-writes the
    // request and response) or declines.
    let pretty = serde_json::to_string_pretty(&v).unwrap();
    assert!(general_accepts(&pretty, PHONE));
    assert_agrees(&pretty, PHONE);
    // Without `device` (absent = the connection's phone) it still agrees.
    let mut no_device = v.clone();
    no_device.as_object_mut().unwrap().shift_remove("device");
    assert!(assert_agrees(&no_device.to_string(), PHONE));
}

/// Every `event.phoneline.dial` line of `scenarios/demo.jsonl`, resolved as the reference phone
/// resolves it (`Resolver`, as in `benches/live_dials.rs`), two repetitions.
#[test]
fn every_demo_dial_takes_the_fast_path_and_agrees() {
    let scenario = Scenario::parse(DEMO).unwrap();
    let sender = Sender {
        device: PHONE.to_string(),
        entity: "ent_phone0a1b2c3d".to_string(),
    };
    let mut resolver = Resolver::new(&scenario, sender, "dial-frame-test", 1_784_595_600_000, 2);
    let mut dials = 0;
    while let Some(frame) = resolver.next_frame() {
        let frame = frame.unwrap();
        if frame.kind != DIAL_EVENT {
            continue;
        }
        assert!(general_accepts(&frame.text, PHONE), "{}", frame.text);
        assert!(
            assert_agrees(&frame.text, PHONE),
            "fast path declined a demo dial:\n{}",
            frame.text
        );
        dials += 1;
    }
    let per_rep = DEMO
        .lines()
        .filter(|l| l.contains("\"type\":\"event.phoneline.dial\""))
        .count();
    assert!(per_rep > 0);
    assert_eq!(dials, 2 * per_rep);
}

// ---------------------------------------------------------------------------------------------
// Editing the realistic frame

/// Serialises `v` (compact or pretty) and puts each raw text in place of its marker string, so
/// that any text (repeated keys, whitespace, odd numbers, invalid escapes) can appear.
fn render(v: &Value, raws: &[(String, String)], pretty: bool) -> String {
    let mut text = if pretty {
        serde_json::to_string_pretty(v).unwrap()
    } else {
        v.to_string()
    };
    for (marker, raw) in raws {
        text = text.replacen(&format!("\"{marker}\""), raw, 1);
    }
    text
}

/// Sets the value at `path` to a marker for `raw` (or removes it when `raw` is `None`). `false`
/// when the path's parent is not an object.
fn edit(v: &mut Value, path: &[&str], raw: Option<&str>, raws: &mut Vec<(String, String)>) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut at = &mut *v;
    for p in parents {
        match at.get_mut(*p) {
            Some(next) => at = next,
            None => return false,
        }
    }
    let Some(obj) = at.as_object_mut() else {
        return false;
    };
    match raw {
        None => {
            obj.shift_remove(*last);
        }
        Some(raw) => {
            let marker = format!("@@raw{}@@", raws.len());
            obj.insert((*last).to_string(), Value::String(marker.clone()));
            raws.push((marker, raw.to_string()));
        }
    }
    true
}

/// The realistic frame with one field replaced by raw text (`None` removes it), compact.
fn with(path: &[&str], raw: Option<&str>) -> String {
    let mut v = realistic();
    let mut raws = Vec::new();
    assert!(edit(&mut v, path, raw, &mut raws), "no such path {path:?}");
    render(&v, &raws, false)
}

/// `[[[...]]]`, `levels` deep.
fn nested(levels: usize) -> String {
    format!("{}{}", "[".repeat(levels), "]".repeat(levels))
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// The general path refuses the frame (or it is not a dial from this phone): `None`.
    Refused,
    /// The general path accepts it and the fast path takes it too.
    Taken,
    /// The general path accepts it; the fast path may decline.
    Accepted,
}

fn check(name: &str, text: &str, expect: Expect) {
    let general = general_accepts(text, PHONE);
    let fast = assert_agrees(text, PHONE);
    match expect {
        Expect::Refused => {
            assert!(!general, "{name}: the general path accepts it:\n{text}");
            assert!(!fast, "{name}: the fast path took it:\n{text}");
        }
        Expect::Taken => {
            assert!(general, "{name}: the general path refuses it:\n{text}");
            assert!(fast, "{name}: the fast path declined:\n{text}");
        }
        Expect::Accepted => assert!(general, "{name}: the general path refuses it:\n{text}"),
    }
}

#[test]
fn a_message_id_is_held_in_place_up_to_its_limit_and_a_longer_one_takes_the_general_path() {
    use switchboard::phone_events::FrameId;
    let id = |n: usize| format!("\"msg_{}\"", "a".repeat(n - 4));
    // At the limit: taken, and the id reads back whole.
    let at = with(&["id"], Some(&id(FrameId::MAX)));
    check("id at the limit", &at, Expect::Taken);
    let fast = DialFrame::parse(&at, &Arc::from(PHONE)).unwrap();
    assert_eq!(fast.id.len(), FrameId::MAX);
    assert_eq!(&*fast.id, &id(FrameId::MAX)[1..=FrameId::MAX]);
    // Longer (still a valid id: up to 64 characters after the prefix): declined, never refused.
    let over = with(&["id"], Some(&id(FrameId::MAX + 1)));
    assert!(general_accepts(&over, PHONE));
    assert!(DialFrame::parse(&over, &Arc::from(PHONE)).is_none());
    let longest = with(&["id"], Some(&id(68)));
    assert!(general_accepts(&longest, PHONE));
    assert!(DialFrame::parse(&longest, &Arc::from(PHONE)).is_none());
}

#[test]
fn odd_requests_are_rewritten_as_the_general_path_does() {
    use Expect::Taken;
    let req = ["payload", "request"];
    let cases: [(&str, &str); 14] = [
        (
            "whitespace",
            "{ \"op\" : \"grep_items\",\n\t\"n\" : [ 1 , 2 ] }",
        ),
        ("escaped slash", r#"{"op":"grep_items","path":"a\/b"}"#),
        ("escaped letter", r#"{"op":"gr\u0065p_items","x":"\u0041"}"#),
        (
            "uppercase control escape",
            r#"{"op":"grep_items","x":"\u001F\u000a"}"#,
        ),
        (
            "surrogate pair",
            r#"{"op":"grep_items","x":"\ud83d\ude00"}"#,
        ),
        ("1.0", r#"{"op":"grep_items","n":1.0}"#),
        ("1e3", r#"{"op":"grep_items","n":1e3}"#),
        ("-0", r#"{"op":"grep_items","n":-0}"#),
        (
            "beyond 2^64",
            r#"{"op":"grep_items","n":12345678901234567890123}"#,
        ),
        (
            "beyond 2^53",
            r#"{"op":"grep_items","n":12345678901234567890}"#,
        ),
        ("repeated key", r#"{"op":"grep_items","a":1,"b":2,"a":3}"#),
        (
            "array-index keys",
            r#"{"op":"grep_items","12":1,"0":2,"01":3}"#,
        ),
        (
            "17 keys",
            r#"{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1,"j":1,"k":1,"l":1,"m":1,"n":1,"o":1,"p":1,"q":1}"#,
        ),
        ("not an object", r#"["grep_items",null,true,false,"x",0.5]"#),
    ];
    for (name, raw) in cases {
        check(&format!("request {name}"), &with(&req, Some(raw)), Taken);
        check(
            &format!("response {name}"),
            &with(&["payload", "response"], Some(raw)),
            Taken,
        );
    }
    // The record holds the JavaScript form.
    let text = with(&req, Some(r#"{"b":1,"12":1.0,"0":-0,"a":"\/","b":2}"#));
    let fast = DialFrame::parse(&text, &Arc::from(PHONE)).unwrap();
    assert_eq!(
        fast.dial.request.as_str(),
        r#"{"0":0,"12":1,"b":2,"a":"/"}"#
    );
}

#[test]
fn targeted_oddities_decline_or_agree() {
    use Expect::{Accepted, Refused, Taken};
    let cases: Vec<(&str, String, Expect)> = vec![
        ("ext", with(&["ext"], Some(r#"{"x-trace":"t1"}"#)), Accepted),
        (
            "parent",
            with(&["parent"], Some(r#""msg_abcdef12""#)),
            Accepted,
        ),
        (
            "correlation",
            with(&["correlation"], Some(r#""c1""#)),
            Accepted,
        ),
        (
            "another phone",
            with(&["device"], Some(r#""dev_other_9z""#)),
            Refused,
        ),
        ("device null", with(&["device"], Some("null")), Accepted),
        (
            "device invalid",
            with(&["device"], Some(r#""dev_x""#)),
            Refused,
        ),
        ("generation 0", with(&["generation"], Some("0")), Refused),
        (
            "generation 3.0",
            with(&["generation"], Some("3.0")),
            Accepted,
        ),
        (
            "generation 2^53+1",
            with(&["generation"], Some("9007199254740993")),
            Accepted,
        ),
        ("generation missing", with(&["generation"], None), Refused),
        ("seq -1", with(&["payload", "seq"], Some("-1")), Refused),
        ("seq 1.0", with(&["payload", "seq"], Some("1.0")), Refused),
        (
            "seq 2^53+1",
            with(&["payload", "seq"], Some("9007199254740993")),
            Accepted,
        ),
        (
            "seq repeated",
            with(&["payload", "dedup"], Some(r#""d1","seq":9"#)),
            Accepted,
        ),
        // Text the reader must prove valid itself: raw control characters in strings and a
        // lone minus sign, which no JSON reader takes.
        (
            "raw tab in caller",
            with(&["payload", "caller"], Some("\"lumi\tagent\"")),
            Refused,
        ),
        (
            "raw newline in a request string",
            with(&["payload", "request"], Some("{\"op\":\"a\nb\"}")),
            Refused,
        ),
        (
            "lone minus in the response",
            with(&["payload", "response"], Some("{\"n\":-}")),
            Refused,
        ),
        (
            "escaped caller",
            with(&["payload", "caller"], Some(r#""lumi\u0061gent""#)),
            Taken,
        ),
        (
            "empty dedup",
            with(&["payload", "dedup"], Some(r#""""#)),
            Refused,
        ),
        (
            "dedup escaped",
            with(&["payload", "dedup"], Some(r#""dial_\u0031""#)),
            Taken,
        ),
        (
            "blank caller",
            with(&["payload", "caller"], Some(r#""  ""#)),
            Refused,
        ),
        ("empty op", with(&["payload", "op"], Some(r#""""#)), Refused),
        (
            "error without text",
            with(&["payload", "outcome"], Some(r#""error""#)),
            Refused,
        ),
        (
            "timed_out without text",
            with(&["payload", "outcome"], Some(r#""timed_out""#)),
            Refused,
        ),
        (
            "error with empty text",
            with(&["payload", "outcome"], Some(r#""error","error":"""#)),
            Refused,
        ),
        (
            "error with text",
            with(
                &["payload", "outcome"],
                Some(r#""error","error":"boom \"x\"""#),
            ),
            Taken,
        ),
        (
            "tool_error without text",
            with(&["payload", "outcome"], Some(r#""tool_error""#)),
            Taken,
        ),
        (
            "ok with empty error",
            with(&["payload", "outcome"], Some(r#""ok","error":"""#)),
            Taken,
        ),
        (
            "outcome unknown",
            with(&["payload", "outcome"], Some(r#""exploded""#)),
            Refused,
        ),
        (
            "outcome as a map",
            with(&["payload", "outcome"], Some(r#"{"ok":null}"#)),
            Accepted,
        ),
        (
            "response null",
            with(&["payload", "response"], Some("null")),
            Taken,
        ),
        (
            "response missing",
            with(&["payload", "response"], None),
            Taken,
        ),
        (
            "request null",
            with(&["payload", "request"], Some("null")),
            Taken,
        ),
        (
            "request missing",
            with(&["payload", "request"], None),
            Refused,
        ),
        (
            "call_id missing",
            with(&["payload", "call_id"], None),
            Taken,
        ),
        (
            "call_id null",
            with(&["payload", "call_id"], Some("null")),
            Refused,
        ),
        (
            "error null",
            with(&["payload", "error"], Some("null")),
            Taken,
        ),
        (
            "error a number",
            with(&["payload", "error"], Some("5")),
            Refused,
        ),
        (
            "duration 1.0",
            with(&["payload", "duration_ms"], Some("1.0")),
            Refused,
        ),
        (
            "duration u64 max",
            with(&["payload", "duration_ms"], Some("18446744073709551615")),
            Taken,
        ),
        (
            "started_at offset",
            with(
                &["payload", "started_at"],
                Some(r#""2026-07-21T01:00:00+02:00""#),
            ),
            Refused,
        ),
        (
            "unknown payload key",
            with(&["payload", "note"], Some(r#""hello""#)),
            Accepted,
        ),
        (
            "unknown payload keys repeated",
            with(&["payload", "note"], Some(r#"1,"note":2"#)),
            Accepted,
        ),
        (
            "unknown retention",
            with(&["labels", "retention"], Some(r#""forever""#)),
            Refused,
        ),
        (
            "unknown consent",
            with(&["labels", "consent"], Some(r#""maybe""#)),
            Refused,
        ),
        (
            "labels extra key",
            with(&["labels", "x"], Some("1")),
            Accepted,
        ),
        (
            "provenance chain",
            with(&["provenance", "chain"], Some(r#"[{"stage":"capture"}]"#)),
            Accepted,
        ),
        (
            "provenance bad chain",
            with(&["provenance", "chain"], Some(r#"[{"stage":""}]"#)),
            Refused,
        ),
        (
            "empty sensor",
            with(&["provenance", "sensor"], Some(r#""""#)),
            Refused,
        ),
        (
            "ts with offset",
            with(&["ts"], Some(r#""2026-07-21T01:00:00+00:00""#)),
            Refused,
        ),
        (
            "ts leap second",
            with(&["ts"], Some(r#""2026-07-21T01:00:60Z""#)),
            Refused,
        ),
        ("ifp \"2\"", with(&["ifp"], Some(r#""2""#)), Refused),
        ("ifp 1", with(&["ifp"], Some("1")), Refused),
        (
            "settings type",
            with(&["type"], Some(r#""event.phoneline.settings""#)),
            Refused,
        ),
        (
            "other event type",
            with(&["type"], Some(r#""event.text.message""#)),
            Refused,
        ),
        (
            "escaped type",
            with(&["type"], Some(r#""event.phoneline\u002edial""#)),
            Accepted,
        ),
        ("bad id", with(&["id"], Some(r#""msg_1""#)), Refused),
        (
            "unknown top-level key",
            with(&["extra"], Some("1")),
            Refused,
        ),
        (
            "repeated top-level key",
            with(&["ifp"], Some(r#""1","ifp":"1""#)),
            Accepted,
        ),
        ("session missing", with(&["session"], None), Refused),
        ("entity null", with(&["entity"], Some("null")), Refused),
    ];
    for (name, text, expect) in cases {
        check(name, &text, expect);
    }
}

/// serde's derived `Deserialize` reads a struct from an array of its field values too; ifp/1
/// frames and their `provenance`, `labels` and `payload` are objects.
#[test]
fn arrays_in_place_of_objects_are_refused() {
    let v = realistic();
    let p = &v["payload"];
    let payload = json!([
        p["seq"],
        p["dedup"],
        p["call_id"],
        p["caller"],
        p["callee"],
        p["endpoint"],
        p["op"],
        p["request"],
        p["started_at"],
        p["duration_ms"],
        p["outcome"],
        p["response"],
        null
    ]);
    let frame = json!([
        v["ifp"],
        v["id"],
        v["ts"],
        v["type"],
        v["entity"],
        v["session"],
        v["device"],
        v["generation"],
        v["provenance"],
        v["labels"],
        v["payload"]
    ]);
    let cases = [
        ("payload", with(&["payload"], Some(&payload.to_string()))),
        (
            "provenance",
            with(
                &["provenance"],
                Some(r#"["dev_phone_a1b2:phoneline","2026-07-21T01:00:01.590Z"]"#),
            ),
        ),
        (
            "labels",
            with(&["labels"], Some(r#"["product_operation","extended"]"#)),
        ),
        ("frame", frame.to_string()),
    ];
    for (name, text) in cases {
        check(&format!("{name} as an array"), &text, Expect::Refused);
    }
}

/// serde_json skips a value it does not keep (an unknown key's value, a `RawValue`) without its
/// nesting limit and without decoding strings or numbers; the general path parses the whole frame
/// with them.
#[test]
fn values_serde_json_only_skips_are_held_to_the_general_path() {
    use Expect::{Accepted, Refused, Taken};
    // The frame is two levels (frame, payload) above the request: 125 more levels are the most
    // serde_json's limit (127) lets the general path read.
    for (levels, expect) in [(125, Taken), (126, Refused), (200, Refused)] {
        let deep = nested(levels);
        let spaced = format!("[ {}]", nested(levels - 1));
        for (what, raw) in [("compact", &deep), ("spaced", &spaced)] {
            check(
                &format!("request {what} {levels} deep"),
                &with(&["payload", "request"], Some(raw)),
                expect,
            );
            check(
                &format!("response {what} {levels} deep"),
                &with(&["payload", "response"], Some(raw)),
                expect,
            );
        }
        let unknown = if expect == Taken { Accepted } else { expect };
        check(
            &format!("unknown key {levels} deep"),
            &with(&["payload", "note"], Some(&deep)),
            unknown,
        );
    }
    // Lone surrogates, and numbers beyond f64 (serde_json: "number out of range").
    let long = format!("1{}", "0".repeat(400));
    for raw in [r#""\ud800""#, r#""\udc00x""#, "1e400", "-1e400", &long] {
        for path in [
            &["payload", "note"][..],
            &["payload", "request"],
            &["payload", "response"],
        ] {
            check(
                &format!("{path:?} = {raw:.12}"),
                &with(path, Some(raw)),
                Refused,
            );
        }
    }
}

#[test]
fn frames_over_the_size_limit_are_refused() {
    let big = format!(
        r#"{{"blob":"{}"}}"#,
        "x".repeat(switchboard::ifp::MAX_FRAME_BYTES)
    );
    check(
        "over 1 MiB",
        &with(&["payload", "response"], Some(&big)),
        Expect::Refused,
    );
}

// ---------------------------------------------------------------------------------------------
// Every single edit, and random combinations

const PATHS: &[&[&str]] = &[
    &["ifp"],
    &["id"],
    &["ts"],
    &["type"],
    &["entity"],
    &["session"],
    &["device"],
    &["generation"],
    &["parent"],
    &["correlation"],
    &["ext"],
    &["provenance"],
    &["labels"],
    &["payload"],
    &["bogus"],
    &["provenance", "sensor"],
    &["provenance", "captured_at"],
    &["provenance", "chain"],
    &["provenance", "extra"],
    &["labels", "consent"],
    &["labels", "retention"],
    &["labels", "extra"],
    &["payload", "seq"],
    &["payload", "dedup"],
    &["payload", "call_id"],
    &["payload", "caller"],
    &["payload", "callee"],
    &["payload", "endpoint"],
    &["payload", "op"],
    &["payload", "request"],
    &["payload", "started_at"],
    &["payload", "duration_ms"],
    &["payload", "outcome"],
    &["payload", "response"],
    &["payload", "error"],
    &["payload", "note"],
    &["payload", "request", "op"],
    &["payload", "request", "limits"],
    &["payload", "response", "hits"],
];

const VALUES: &[&str] = &[
    "null",
    "true",
    "false",
    "0",
    "-1",
    "1",
    "3",
    "3.0",
    "1.5",
    "2e3",
    "-0",
    "1e400",
    "9007199254740992",
    "9007199254740993",
    "18446744073709551615",
    "18446744073709551616",
    r#""""#,
    r#"" ""#,
    r#""x""#,
    r#""1""#,
    r#""ses_abcdef""#,
    r#""msg_abcdef""#,
    r#""ent_abcdef""#,
    r#""dev_phone_a1b2""#,
    r#""dev_other_9z""#,
    r#""2026-07-21T00:00:00Z""#,
    r#""2026-07-21T00:00:00+02:00""#,
    r#""event.phoneline.dial""#,
    r#""event.phoneline.settings""#,
    r#""ok""#,
    r#""error""#,
    r#""timed_out""#,
    r#""tool_error""#,
    r#""standard""#,
    r#""forever""#,
    r#""product_operation""#,
    r#""\ud800""#,
    r#""\u0041""#,
    r#""a\/b""#,
    "[]",
    "[1,2]",
    "{}",
    r#"{"a":1,"a":2}"#,
    r#"{"x-a":1}"#,
    r#"{"0":1,"b":2}"#,
    r#"{"ok":null}"#,
    r#"[{"stage":"capture"}]"#,
    r#"{"sensor":"s","captured_at":"2026-07-21T00:00:00Z"}"#,
    r#"["s","2026-07-21T00:00:00Z"]"#,
    r#"{"consent":"product_operation","retention":"standard"}"#,
    r#"["product_operation","standard"]"#,
    "{ \"a\" : [ 1 , 2.50 ] }",
];

const WHITESPACE: &[&str] = &[" ", "\n", "\t", "\r\n  "];

#[test]
fn every_single_edit_declines_or_agrees() {
    let mut taken = 0;
    let mut total = 0;
    for path in PATHS {
        let values = VALUES.iter().map(|v| Some(*v)).chain([None]);
        for raw in values {
            let mut v = realistic();
            let mut raws = Vec::new();
            if !edit(&mut v, path, raw, &mut raws) {
                continue;
            }
            for pretty in [false, true] {
                let text = render(&v, &raws, pretty);
                total += 1;
                if assert_agrees(&text, PHONE) {
                    taken += 1;
                }
            }
        }
    }
    // Not vacuous: many edits leave a dial the fast path takes.
    assert!(taken > total / 10, "only {taken} of {total} taken");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_edits_decline_or_agree(
        edits in prop::collection::vec(
            (0..PATHS.len(), prop::option::weighted(0.85, 0..VALUES.len())),
            0..4,
        ),
        pretty in any::<bool>(),
        spaces in prop::collection::vec((any::<prop::sample::Index>(), 0..WHITESPACE.len()), 0..3),
    ) {
        let mut v = realistic();
        let mut raws = Vec::new();
        for (path, value) in &edits {
            edit(&mut v, PATHS[*path], value.map(|i| VALUES[i]), &mut raws);
        }
        let mut text = render(&v, &raws, pretty);
        for (at, ws) in &spaces {
            let mut i = at.index(text.len() + 1);
            while !text.is_char_boundary(i) {
                i += 1;
            }
            text.insert_str(i, WHITESPACE[*ws]);
        }
        assert_agrees(&text, PHONE);
    }
}
