//! `phone_action`: every action's valid call, each required entry missing, each checked field's
//! bad values, the card's contents, and the answer texts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{json, Value};
use switchboard::phone_action::{
    action_names, action_spec, check_call, checked_fields, outcome, refusal_text, result_text,
    unavailable_text, what, AnswerStatus, Refusal, MESSAGE_MAX_CHARS, PHONE,
};

/// Per action: a valid call (every field it reads given, with odd spacing to trim), and per
/// checked field the bad values (each must be refused naming that field) and other good values.
type Values = (&'static str, fn() -> Vec<Value>);
struct Case {
    valid: Value,
    bad: &'static [Values],
    good: &'static [Values],
}

fn place_bad() -> Vec<Value> {
    vec![
        json!("Paris"),
        json!({"lat": 48.8}),
        json!({"lat": 91, "lon": 2}),
        json!({"lat": 48.8, "lon": -180.5}),
        json!({"lat": "48.8", "lon": "2.3"}),
        json!({"lat": true, "lon": 2}),
        json!({"query": "   "}),
        json!({"name": ""}),
        json!({"query": 7}),
        json!(["Paris"]),
        json!(12),
    ]
}
fn place_good() -> Vec<Value> {
    vec![
        json!({"lat": -90, "lon": 180}),
        json!({"lat": 48.85, "lon": 2.35}),
        json!({"query": "Gare du Nord"}),
        json!({"name": "Home"}),
        json!({"name": "Home", "lat": 999}),
    ]
}
fn enum_bad() -> Vec<Value> {
    vec![json!("teleport"), json!(3), json!(true), json!(["drive"])]
}
fn strings_bad() -> Vec<Value> {
    vec![
        json!("ann@example.com"),
        json!(["ann@example.com", "  "]),
        json!([3]),
        json!([null]),
        json!({"a": "b"}),
    ]
}

fn cases() -> Vec<(&'static str, Case)> {
    vec![
        (
            "alarm",
            Case {
                valid: json!({"action": " alarm ", "summary": " Wake up ", "time": " 07:30 ", "days": ["mon", " fri "], "label": "Gym", "number": "not read"}),
                bad: &[
                    ("time", || {
                        vec![
                            json!("7:30"),
                            json!("24:00"),
                            json!("12:60"),
                            json!("07:30:00"),
                            json!("0730"),
                            json!(730),
                            json!("aa:bb"),
                            json!("+1:30"),
                        ]
                    }),
                    ("days", || {
                        vec![
                            json!("mon"),
                            json!(["monday"]),
                            json!(["mon", "xyz"]),
                            json!(["Mon"]),
                            json!([1]),
                            json!({"mon": true}),
                        ]
                    }),
                ],
                good: &[
                    ("time", || vec![json!("00:00"), json!("23:59")]),
                    ("days", || vec![json!(["sun", "sat", "tue", "wed", "thu"])]),
                ],
            },
        ),
        (
            "timer",
            Case {
                valid: json!({"action": "timer", "seconds": 300, "label": " tea "}),
                bad: &[("seconds", || {
                    vec![
                        json!(0),
                        json!(86401),
                        json!(-5),
                        json!(1.5),
                        json!("60"),
                        json!(true),
                        json!(false),
                        json!([60]),
                    ]
                })],
                good: &[("seconds", || vec![json!(1), json!(86400), json!(60.0)])],
            },
        ),
        (
            "calendar_event",
            Case {
                valid: json!({"action": "calendar_event", "title": "Dentist", "start": "2026-03-01T09:30", "end": "2026-03-01T10:00", "location": "Main St", "notes": "bring card"}),
                bad: &[
                    ("start", || {
                        vec![
                            json!("2026-3-1"),
                            json!("01/03/2026"),
                            json!("2026-03-01T9:30"),
                            json!("2026-03-01 09:30"),
                            json!("2026-03-01T09:30:00"),
                            json!(20260301),
                            json!("tomorrow"),
                        ]
                    }),
                    ("end", || {
                        vec![
                            json!("2026-03-01T"),
                            json!("26-03-01"),
                            json!(true),
                            json!("2026-03-01Z"),
                        ]
                    }),
                ],
                good: &[
                    ("start", || vec![json!("2026-03-01"), json!("2026-02-31")]),
                    ("end", || vec![json!("2026-13-45T99:99")]),
                ],
            },
        ),
        (
            "sms_draft",
            Case {
                valid: json!({"action": "sms_draft", "to": [" +44 20 7946 0958 "], "body": " On my way "}),
                bad: &[("to", strings_bad)],
                good: &[("to", || vec![json!(["Ann", "Bob"])])],
            },
        ),
        (
            "email_draft",
            Case {
                valid: json!({"action": "email_draft", "to": ["ann@example.com"], "cc": ["bob@example.com"], "subject": "Hi", "body": "Hello"}),
                bad: &[("to", strings_bad), ("cc", strings_bad)],
                good: &[],
            },
        ),
        (
            "dial",
            Case {
                valid: json!({"action": "dial", "number": " +1 (555) 010-9999 "}),
                bad: &[("number", || {
                    vec![
                        json!("12"),
                        json!("+1 555 CALL"),
                        json!("555_0100"),
                        json!(5550100),
                        json!("(+)-./#*"),
                        json!(["555"]),
                    ]
                })],
                good: &[("number", || {
                    vec![json!("112"), json!("*21#123"), json!("020/7946.0958")]
                })],
            },
        ),
        (
            "navigate",
            Case {
                valid: json!({"action": "navigate", "destination": {"query": " Louvre "}, "stops": [{"name": "Bakery"}, {"lat": 48.86, "lon": 2.34}], "mode": "walk", "replace_route": true}),
                bad: &[
                    ("destination", place_bad),
                    ("stops", || {
                        vec![
                            json!({"query": "x"}),
                            json!([{"query": "x"}, {"lat": 1}]),
                            json!(["Bakery"]),
                        ]
                    }),
                    ("mode", enum_bad),
                ],
                good: &[
                    ("mode", || {
                        vec![json!("drive"), json!("bicycle"), json!("transit")]
                    }),
                    ("destination", place_good),
                ],
            },
        ),
        (
            "add_stop",
            Case {
                valid: json!({"action": "add_stop", "stop": {"query": "petrol station"}, "destination": {"name": "Grandma"}}),
                bad: &[("stop", place_bad), ("destination", place_bad)],
                good: &[("stop", place_good)],
            },
        ),
        (
            "search_nearby",
            Case {
                valid: json!({"action": "search_nearby", "query": "coffee", "near": "route"}),
                bad: &[("near", enum_bad)],
                good: &[("near", || vec![json!("me")])],
            },
        ),
        (
            "stop_navigation",
            Case {
                valid: json!({"action": "stop_navigation", "destination": "ignored"}),
                bad: &[],
                good: &[],
            },
        ),
        (
            "open_app",
            Case {
                valid: json!({"action": "open_app", "app": "Spotify"}),
                bad: &[],
                good: &[],
            },
        ),
        (
            "open_url",
            Case {
                valid: json!({"action": "open_url", "url": " https://example.com/a "}),
                bad: &[("url", || {
                    vec![
                        json!("example.com"),
                        json!("http://"),
                        json!("https://   "),
                        json!("ftp://example.com"),
                        json!("javascript:alert(1)"),
                        json!(42),
                    ]
                })],
                good: &[("url", || {
                    vec![json!("HTTP://EXAMPLE.COM"), json!("http://x")]
                })],
            },
        ),
        (
            "media",
            Case {
                valid: json!({"action": "media", "command": "pause"}),
                bad: &[("command", enum_bad)],
                good: &[("command", || {
                    vec![
                        json!("play"),
                        json!("next"),
                        json!("previous"),
                        json!("toggle"),
                        json!("stop"),
                    ]
                })],
            },
        ),
        (
            "torch",
            Case {
                valid: json!({"action": "torch", "on": false}),
                bad: &[("on", || {
                    vec![json!("true"), json!(1), json!("on"), json!([true])]
                })],
                good: &[("on", || vec![json!(true)])],
            },
        ),
        (
            "settings_panel",
            Case {
                valid: json!({"action": "settings_panel", "panel": "wifi"}),
                bad: &[("panel", enum_bad)],
                good: &[("panel", || {
                    vec![json!("bluetooth"), json!("do_not_disturb")]
                })],
            },
        ),
        (
            "automation_intent",
            Case {
                valid: json!({"action": "automation_intent", "name": "Leave work", "values": {"eta": "18:00", "who": "Ann"}}),
                bad: &[("values", || {
                    vec![
                        json!({"eta": 18}),
                        json!({"a": "b", "c": null}),
                        json!(["a"]),
                        json!("eta=18"),
                    ]
                })],
                good: &[("values", || vec![json!({"a": ""})])],
            },
        ),
    ]
}

#[test]
fn the_cases_cover_all_16_actions_and_every_checked_field() {
    let cases = cases();
    let names: Vec<_> = cases.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, action_names());
    assert_eq!(names.len(), 16);
    for (name, case) in &cases {
        let spec = action_spec(name).unwrap();
        let covered: Vec<_> = case.bad.iter().map(|(f, _)| *f).collect();
        let mut want = checked_fields(spec);
        let mut got = covered.clone();
        want.sort_unstable();
        got.sort_unstable();
        assert_eq!(got, want, "{name}: every checked field has bad values");
        for f in spec.required.iter().flat_map(|g| g.iter()) {
            assert!(
                spec.fields.contains(f),
                "{name}: required {f} is a field it reads"
            );
            assert!(
                case.valid.get(*f).is_some(),
                "{name}: the valid call gives {f}"
            );
        }
    }
}

#[test]
fn every_valid_call_passes_and_the_card_keeps_only_read_fields_trimmed() {
    for (name, case) in cases() {
        let card = check_call(&case.valid).unwrap_or_else(|r| panic!("{name}: {r}"));
        assert_eq!(card.action, name);
        let spec = action_spec(name).unwrap();
        let given = case.valid.as_object().unwrap();
        let expected: Vec<&str> = spec
            .fields
            .iter()
            .copied()
            .filter(|f| given.contains_key(*f))
            .collect();
        let got: Vec<&str> = card.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            got, expected,
            "{name}: fields in action order, others dropped"
        );
        let wire = card.to_wire();
        for k in wire.as_object().unwrap().keys() {
            assert!(
                k == "action" || k == "summary" || spec.fields.contains(&k.as_str()),
                "{name}: {k} leaked"
            );
        }
        assert!(refusal_text(&case.valid).is_none());
    }
}

#[test]
fn card_contents_for_the_spec_examples() {
    let cases = cases();
    let alarm = check_call(&cases[0].1.valid).unwrap();
    assert_eq!(alarm.summary, "Wake up");
    assert_eq!(alarm.field("time"), Some(&json!("07:30")));
    assert_eq!(alarm.field("days"), Some(&json!(["mon", "fri"])));
    assert_eq!(alarm.field("number"), None, "not read by alarm");
    assert_eq!(alarm.fields[1].display, "mon, fri");
    let timer = check_call(&cases[1].1.valid).unwrap();
    assert_eq!(timer.summary, "timer", "empty summary is the action's name");
    assert_eq!(timer.field("label"), Some(&json!("tea")));
    let nav = check_call(&cases[6].1.valid).unwrap();
    assert_eq!(nav.field("destination"), Some(&json!({"query": "Louvre"})));
    assert_eq!(nav.fields[0].display, "Louvre");
    assert_eq!(nav.fields[1].display, "Bakery → 48.86, 2.34");
    let torch = check_call(&json!({"action": "torch", "on": false, "summary": "   "})).unwrap();
    assert_eq!(torch.summary, "torch");
    assert_eq!(torch.fields[0].display, "off");
    assert_eq!(
        torch.to_wire(),
        json!({"action": "torch", "summary": "torch", "on": false})
    );
    // Empty optional fields are not present, so they are neither checked nor carried.
    let c = check_call(&json!({"action": "alarm", "time": "06:00", "days": [], "label": "  "}))
        .unwrap();
    assert_eq!(c.fields.len(), 1);
}

#[test]
fn unknown_action_lists_the_16_joined_with_comma_space() {
    let list = action_names().join(", ");
    assert!(list.starts_with(
        "alarm, timer, calendar_event, sms_draft, email_draft, dial, navigate, add_stop"
    ));
    for call in [
        json!({"action": "fly"}),
        json!({"action": 3}),
        json!({}),
        json!("alarm"),
        json!(null),
        json!({"action": "Alarm"}),
    ] {
        let r = check_call(&call).unwrap_err();
        assert!(matches!(r, Refusal::UnknownAction { .. }), "{call}");
        assert_eq!(
            r.text(),
            PHONE.texts.unknown_action.replace("{{actions}}", &list)
        );
    }
}

#[test]
fn each_required_entry_missing_is_named() {
    for (name, case) in cases() {
        let spec = action_spec(name).unwrap();
        for group in spec.required {
            for empty in [Value::Null, json!(""), json!("   "), json!([]), json!({})] {
                let mut call = case.valid.clone();
                for f in group.iter() {
                    if empty.is_null() {
                        call.as_object_mut().unwrap().remove(*f);
                    } else {
                        call[*f] = empty.clone();
                    }
                }
                let r = check_call(&call).unwrap_err();
                let entry = group.join(" or ");
                assert_eq!(r.text(), format!("{name} needs {entry}."), "{call}");
                assert!(
                    matches!(&r, Refusal::Missing { missing, .. } if missing == &vec![entry.clone()])
                );
            }
        }
        // All entries missing at once: every one, joined with " and ", in order.
        if !spec.required.is_empty() {
            let call = json!({"action": name});
            let all: Vec<String> = spec.required.iter().map(|g| g.join(" or ")).collect();
            assert_eq!(
                refusal_text(&call).unwrap(),
                format!("{name} needs {}.", all.join(" and "))
            );
        }
    }
}

#[test]
fn the_spec_missing_examples_word_for_word() {
    assert_eq!(
        refusal_text(&json!({"action": "add_stop"})).unwrap(),
        "add_stop needs stop and destination."
    );
    assert_eq!(
        refusal_text(&json!({"action": "email_draft", "cc": ["x@y.z"]})).unwrap(),
        "email_draft needs to and subject or body."
    );
    // A group is present when any one of its fields is.
    assert!(
        refusal_text(&json!({"action": "email_draft", "to": ["a@b.c"], "body": "hi"})).is_none()
    );
    // torch: false is present.
    assert!(refusal_text(&json!({"action": "torch", "on": false})).is_none());
    // Missing is reported before a bad value of another field.
    assert_eq!(
        refusal_text(&json!({"action": "add_stop", "stop": 5})).unwrap(),
        "add_stop needs destination."
    );
}

#[test]
fn each_bad_value_is_refused_naming_the_field() {
    for (name, case) in cases() {
        for (field, bads) in case.bad {
            for bad in bads() {
                let mut call = case.valid.clone();
                call[*field] = bad.clone();
                let r = check_call(&call).unwrap_err();
                assert!(
                    matches!(&r, Refusal::Bad { field: f, .. } if f == field),
                    "{name}.{field} = {bad}: {r:?}"
                );
                assert_eq!(r.text(), format!("{field} must be {}.", what(field)));
            }
        }
        for (field, goods) in case.good {
            for good in goods() {
                let mut call = case.valid.clone();
                call[*field] = good.clone();
                assert!(
                    check_call(&call).is_ok(),
                    "{name}.{field} = {good} should pass"
                );
            }
        }
    }
}

#[test]
fn checks_run_in_check_order_and_only_on_fields_the_action_reads() {
    // Both bad: days comes after time in phone.check.
    let r = check_call(&json!({"action": "alarm", "time": "7", "days": ["x"]})).unwrap_err();
    assert!(matches!(r, Refusal::Bad { ref field, .. } if field == "time"));
    let r = check_call(&json!({"action": "alarm", "time": "07:00", "days": ["x"]})).unwrap_err();
    assert!(matches!(r, Refusal::Bad { ref field, .. } if field == "days"));
    // destination before stop, though add_stop lists stop first.
    let r = check_call(&json!({"action": "add_stop", "stop": 1, "destination": 2})).unwrap_err();
    assert!(matches!(r, Refusal::Bad { ref field, .. } if field == "destination"));
    // A field the action does not read is never checked.
    assert!(check_call(&json!({"action": "dial", "number": "555-0100", "url": "nope"})).is_ok());
    // The enumerations are named in the refusal.
    assert_eq!(
        refusal_text(&json!({"action": "navigate", "destination": {"name": "x"}, "mode": "fly"}))
            .unwrap(),
        "mode must be one of drive, walk, bicycle, transit."
    );
}

#[test]
fn answers_give_the_status_text_and_the_phone_message() {
    let t = &PHONE.texts;
    assert_eq!(result_text(Some(&json!({"status": "done"}))), t.done);
    let declined = outcome(Some(&json!({"status": "declined", "message": "  "})));
    assert_eq!(declined.status, AnswerStatus::Declined);
    assert!(declined.do_not_retry);
    assert_eq!(declined.text, t.declined);
    assert!(declined.text.contains("Do not try again unless they ask"));
    assert_eq!(
        result_text(Some(
            &json!({"status": "failed", "message": " No map app installed. "})
        )),
        format!("{}\n\nThe phone says: No map app installed.", t.failed)
    );
    // Unknown status is failed, with the message kept.
    let o = outcome(Some(&json!({"status": "exploded", "message": "boom"})));
    assert_eq!(o.status, AnswerStatus::Failed);
    assert_eq!(o.unknown_status.as_deref(), Some("exploded"));
    assert_eq!(o.text, format!("{}\n\nThe phone says: boom", t.failed));
    for weird in [json!({}), json!({"status": 1}), json!("done"), json!(null)] {
        assert_eq!(
            outcome(Some(&weird)).status,
            AnswerStatus::Failed,
            "{weird}"
        );
    }
    // No answer in time: its own text, no message.
    let none = outcome(None);
    assert_eq!(
        (none.status, none.message.as_deref(), none.text.as_str()),
        (AnswerStatus::NoAnswer, None, t.no_answer)
    );
}

#[test]
fn the_phone_message_is_cut_at_message_max_chars() {
    let long: String = "é".repeat(MESSAGE_MAX_CHARS + 40);
    let o = outcome(Some(&json!({"status": "failed", "message": long})));
    let m = o.message.unwrap();
    assert_eq!(m.chars().count(), MESSAGE_MAX_CHARS);
    assert!(o.message_cut);
    assert!(o.text.ends_with(&m));
    let exact: String = "a".repeat(MESSAGE_MAX_CHARS);
    let o = outcome(Some(&json!({"status": "done", "message": exact.clone()})));
    assert_eq!(o.message.as_deref(), Some(exact.as_str()));
    assert!(!o.message_cut);
}

#[test]
fn unavailable_and_table_numbers() {
    assert!(unavailable_text().contains("no phone to confirm on"));
    assert_eq!(PHONE.capability, "phone_actions");
    // Every checked field has its own `what`.
    for f in PHONE.check {
        assert_ne!(what(f), "a valid value", "{f}");
        assert!(!what(f).contains("{{"), "{f}");
    }
}

#[test]
fn serialised_shapes_are_stable() {
    let r = check_call(&json!({"action": "dial", "number": "12"})).unwrap_err();
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["kind"], "bad");
    assert_eq!(v["field"], "number");
    let o = serde_json::to_value(outcome(None)).unwrap();
    assert_eq!(o["status"], "no_answer");
}
