//! Conformance of dials of every op, against the spec files in `../shared/specs` and the corpus.

#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::scope_book::LUMIREALM_DESCRIBE;
use super::shapes::{request_shape, response_shape, Ty};
use super::*;
use crate::phone_line::manifest::{SurfaceManifest, SurfaceScope};
use serde_json::json;

fn parts<'a>(op: &'a str, callee: &'a str) -> DialParts<'a> {
    DialParts {
        op,
        callee,
        call_id: "",
        outcome: DialOutcome::Ok,
    }
}

fn kinds(c: &DialConformance) -> Vec<(FindingKind, String)> {
    c.findings
        .iter()
        .map(|f| (f.kind, f.path.clone()))
        .collect()
}

/// Every line a finding cites says, in the spec file, the words the finding quotes.
#[test]
fn cited_spec_lines_hold_the_quoted_words() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/specs/");
    let all = [
        refs::REQ_SYSTEM_PROMPT,
        refs::REQ_CHECK_WRITE,
        refs::REQ_CHECK_READ,
        refs::REQ_LIST_ITEMS,
        refs::REQ_READ_ITEM,
        refs::REQ_WRITE_FIELD,
        refs::REQ_GREP_ITEMS,
        refs::REQ_DESCRIBE,
        refs::REQ_CALL_ID,
        refs::RES_DESCRIBE,
        refs::RES_SYSTEM_PROMPT,
        refs::RES_CHECK_WRITE,
        refs::RES_CHECK_READ,
        refs::RES_LIST_ITEMS,
        refs::RES_READ_ITEM,
        refs::RES_WRITE_FIELD,
        refs::RES_GREP_ITEMS,
        refs::CHARACTER_SCOPE,
        refs::UNKNOWN_OP,
        refs::EXTENSION_OPS,
        refs::MISSING_USER_ID,
    ];
    for r in all {
        let text = std::fs::read_to_string(format!("{dir}{}", r.file))
            .unwrap_or_else(|e| panic!("{dir}{}: {e} (the specs must be there)", r.file));
        let line = text.lines().nth(r.line as usize - 1).unwrap();
        assert!(
            line.contains(r.words),
            "{} line {}: {line:?} lacks {:?}",
            r.file,
            r.line,
            r.words
        );
    }
}

#[test]
fn the_embedded_manifest_is_the_corpus_file() {
    let corpus = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/corpus/lumiverse/lumirealm.describe.json"
    ))
    .unwrap();
    assert_eq!(corpus, LUMIREALM_DESCRIBE);
    assert_eq!(
        ScopeBook::builtin().scope("lumirealm", "module_envelope"),
        Some(SurfaceScope::PerCharacter)
    );
}

/// One conforming request and response per op (on LumiRealm's real surface).
fn conforming() -> Vec<(&'static str, Value, Value)> {
    let manifest: Value = serde_json::from_str(LUMIREALM_DESCRIBE).unwrap();
    vec![
        ("describe", json!({"op": "describe"}), manifest),
        (
            "system_prompt",
            json!({"op": "system_prompt", "userId": "u1", "characterId": "char_aria"}),
            json!({"text": null}),
        ),
        (
            "check_write",
            json!({"op": "check_write", "userId": "u1", "characterId": "c", "extPath": "lumirealm.source"}),
            json!({"ok": false, "message": "edit the authoring layer"}),
        ),
        (
            "check_read",
            json!({"op": "check_read", "userId": "u1", "characterId": "c", "extPath": "lumirealm.payload"}),
            json!({"ok": true}),
        ),
        (
            "list_items",
            json!({"op": "list_items", "userId": "u1", "surfaceId": "module_envelope", "characterId": "c"}),
            json!({"items": [{"id": "mod_1", "label": "Lore", "brief": "b"}, {"id": 2, "label": "X"}], "total": 2}),
        ),
        (
            "read_item",
            json!({"op": "read_item", "userId": "u1", "surfaceId": "module_envelope", "itemId": "mod_1", "field": "lua"}),
            json!({"value": {"any": [1]}, "meta": {}}),
        ),
        (
            "write_field",
            json!({"op": "write_field", "userId": "u1", "surfaceId": "module_envelope", "itemId": "mod_1", "field": "lua", "value": null}),
            json!({"ok": true}),
        ),
        (
            "grep_items",
            json!({"op": "grep_items", "userId": "u1", "surfaceId": "module_envelope", "pattern": "a.c", "characterId": "c", "ignoreCase": true, "fieldPrefix": "payload", "head": 20, "callId": "pl_x_1"}),
            json!({"hits": [{"itemId": "mod_1", "itemLabel": "Lore", "fieldPath": "payload.lua", "line": 3, "match": "abc", "preview": "x abc y"}], "truncated": false}),
        ),
    ]
}

#[test]
fn conforming_dials_of_every_op_have_no_findings() {
    for (op, req, resp) in conforming() {
        let mut p = parts(op, "lumirealm");
        let call_id = req.get("callId").and_then(Value::as_str).unwrap_or("");
        p.call_id = call_id;
        let c = check_parts(&p, &req, Some(&resp), ScopeBook::builtin());
        assert_eq!(c.op_class, OpClass::Core);
        assert!(c.to_spec(), "{op}: {:?}", c.findings);
    }
}

/// Each op: dropping each required request field, and each required response field, gives
/// exactly one missing-field finding at that path; a wrong type gives a wrong-type finding.
#[test]
fn every_required_field_of_every_op_is_checked() {
    for (op, req, resp) in conforming() {
        let p = DialParts {
            call_id: req.get("callId").and_then(Value::as_str).unwrap_or(""),
            ..parts(op, "lumirealm")
        };
        if let Some((fields, spec)) = request_shape(op) {
            for &(name, ty, required) in fields {
                let mut r = req.clone();
                let removed = r.as_object_mut().unwrap().remove(name).is_some();
                let c = check_parts(&p, &r, Some(&resp), ScopeBook::builtin());
                if required && removed && name != "characterId" {
                    assert_eq!(
                        kinds(&c),
                        vec![(FindingKind::MissingField, format!("request.{name}"))],
                        "{op} without {name}"
                    );
                    assert_eq!(c.findings[0].spec_line, spec.line);
                }
                if !matches!(ty, Ty::Any) {
                    let mut r = req.clone();
                    r.as_object_mut().unwrap().insert(name.into(), json!([1]));
                    let c = check_parts(&p, &r, Some(&resp), ScopeBook::builtin());
                    assert_eq!(
                        kinds(&c),
                        vec![(FindingKind::WrongType, format!("request.{name}"))],
                        "{op} with {name} an array"
                    );
                }
            }
        }
        if let Some((fields, _)) = response_shape(op) {
            for &(name, _, required) in fields.iter().filter(|f| f.2) {
                let mut r = resp.clone();
                r.as_object_mut().unwrap().remove(name);
                let c = check_parts(&p, &req, Some(&r), ScopeBook::builtin());
                assert!(required);
                assert_eq!(
                    kinds(&c),
                    vec![(FindingKind::MissingField, format!("response.{name}"))],
                    "{op} response without {name}"
                );
            }
            let c = check_parts(&p, &req, Some(&json!("text")), ScopeBook::builtin());
            assert_eq!(
                kinds(&c),
                vec![(FindingKind::NotAnObject, "response".into())]
            );
        }
    }
}

/// The shapes an earlier demo phone line got wrong, so the check must catch each of them:
/// `surface`/`id` instead of `surfaceId`/`itemId`, no `userId`, `read_item` answering `item`,
/// `list_items` without `total`, hits without `itemId`/`fieldPath`/`match` and no `truncated`.
#[test]
fn the_wrong_shapes_of_the_old_demo_are_found() {
    let book = ScopeBook::builtin();
    let c = check_parts(
        &parts("read_item", "lumirealm"),
        &json!({"op": "read_item", "surface": "module_envelope", "id": "mod_1"}),
        Some(&json!({"item": {"id": "mod_1"}})),
        book,
    );
    let k = kinds(&c);
    for want in [
        (FindingKind::MissingField, "request.userId"),
        (FindingKind::MissingField, "request.surfaceId"),
        (FindingKind::MissingField, "request.itemId"),
        (FindingKind::UnexpectedField, "request.surface"),
        (FindingKind::UnexpectedField, "request.id"),
        (FindingKind::MissingField, "response.value"),
        (FindingKind::UnexpectedField, "response.item"),
    ] {
        assert!(
            k.contains(&(want.0, want.1.to_string())),
            "{want:?} in {k:?}"
        );
    }
    let hint = c
        .findings
        .iter()
        .find(|f| f.path == "request.surface")
        .unwrap();
    assert!(
        hint.problem.contains("did you mean `surfaceId`"),
        "{}",
        hint.problem
    );

    let c = check_parts(
        &parts("grep_items", "lumirealm"),
        &json!({"op": "grep_items", "userId": "u", "surfaceId": "module_envelope", "characterId": "c", "pattern": "x"}),
        Some(&json!({"hits": [{"item": "mod_1", "path": "a", "line": 1, "preview": "x"}]})),
        book,
    );
    let k = kinds(&c);
    for want in [
        "response.truncated",
        "response.hits[0].itemId",
        "response.hits[0].fieldPath",
        "response.hits[0].match",
    ] {
        assert!(
            k.contains(&(FindingKind::MissingField, want.to_string())),
            "{want} in {k:?}"
        );
    }
    let c = check_parts(
        &parts("list_items", "lumirealm"),
        &json!({"op": "list_items", "userId": "u", "surfaceId": "module_envelope", "characterId": "c"}),
        Some(&json!({"items": [{"id": "a"}, 3]})),
        book,
    );
    assert_eq!(
        kinds(&c),
        vec![
            (FindingKind::MissingField, "response.total".into()),
            (FindingKind::MissingField, "response.items[0].label".into()),
            (FindingKind::NotAnObject, "response.items[1]".into()),
        ]
    );
}

#[test]
fn character_id_follows_the_known_manifest_only() {
    let req = |with: bool| {
        let mut r = json!({"op": "list_items", "userId": "u", "surfaceId": "module_envelope"});
        if with {
            r["characterId"] = json!("char_aria");
        }
        r
    };
    let resp = json!({"items": [], "total": 0});
    let book = ScopeBook::builtin();
    let c = check_parts(
        &parts("list_items", "lumirealm"),
        &req(false),
        Some(&resp),
        book,
    );
    assert_eq!(
        kinds(&c),
        vec![(FindingKind::CharacterScope, "request.characterId".into())]
    );
    assert_eq!(c.findings[0].spec_line, 83);
    // Unknown line (no manifest): either is fine.
    for with in [true, false] {
        let c = check_parts(
            &parts("list_items", "otherline"),
            &req(with),
            Some(&resp),
            book,
        );
        assert!(c.to_spec(), "{:?}", c.findings);
    }
    // A global surface must not get characterId.
    let mut book = ScopeBook::new();
    let m = SurfaceManifest::from_value(json!({
        "extension": {"id": "g", "name": "G"},
        "surfaces": [{"id": "module_envelope", "label": "L", "scope": "global"}]
    }))
    .unwrap();
    book.add_manifest("g", &m);
    let c = check_parts(&parts("list_items", "g"), &req(true), Some(&resp), &book);
    assert_eq!(
        kinds(&c),
        vec![(FindingKind::CharacterScope, "request.characterId".into())]
    );
    assert!(check_parts(&parts("list_items", "g"), &req(false), Some(&resp), &book).to_spec());
}

#[test]
fn extension_ops_are_named_and_unknown_ops_found() {
    let req = json!({"op": "attach_module", "userId": "u", "moduleId": "m"});
    let c = check_parts(
        &parts("attach_module", "lumirealm"),
        &req,
        Some(&json!({"ok": true})),
        ScopeBook::builtin(),
    );
    assert_eq!(c.op_class, OpClass::LumiRealmExtension);
    assert!(c.to_spec(), "{:?}", c.findings);
    let c = check_parts(
        &parts("attach_module", "lumirealm"),
        &json!({"op": "attach_module"}),
        None,
        ScopeBook::builtin(),
    );
    assert_eq!(
        kinds(&c),
        vec![(FindingKind::MissingField, "request.userId".into())]
    );
    assert_eq!(c.findings[0].spec, "upstream-behaviour.md");
    // On another line it is an unknown op.
    let c = check_parts(
        &parts("attach_module", "otherline"),
        &req,
        None,
        ScopeBook::builtin(),
    );
    assert_eq!(c.op_class, OpClass::Unknown);
    assert_eq!(kinds(&c), vec![(FindingKind::UnknownOp, "op".into())]);
    let c = check_parts(
        &parts("teleport", "lumirealm"),
        &json!({"op": "teleport"}),
        None,
        ScopeBook::builtin(),
    );
    assert_eq!(kinds(&c), vec![(FindingKind::UnknownOp, "op".into())]);
    assert!(c.findings[0].problem.contains("unknown op: teleport"));
}

#[test]
fn a_dial_refused_before_its_request_was_read_is_not_checked() {
    let book = ScopeBook::builtin();
    let refused = DialParts {
        outcome: DialOutcome::Error,
        ..parts(UNREAD_OP, "weather")
    };
    let c = check_parts(&refused, &Value::Null, None, book);
    assert_eq!(c.op_class, OpClass::NotRead);
    assert!(c.to_spec());
    // Only that exact form: an answered "unknown" op, or one with a request, is checked.
    let answered = parts(UNREAD_OP, "weather");
    let c = check_parts(&answered, &Value::Null, Some(&json!({})), book);
    assert_eq!(c.op_class, OpClass::Unknown);
    assert!(!c.to_spec());
    let c = check_parts(&refused, &json!({"op": "unknown"}), None, book);
    assert_eq!(kinds(&c), vec![(FindingKind::UnknownOp, "op".into())]);
}

#[test]
fn op_and_call_id_agree_with_the_dial() {
    let book = ScopeBook::builtin();
    let p = DialParts {
        call_id: "pl_1",
        ..parts("describe", "lumirealm")
    };
    let manifest: Value = serde_json::from_str(LUMIREALM_DESCRIBE).unwrap();
    let c = check_parts(
        &p,
        &json!({"op": "read_item", "callId": "pl_2"}),
        Some(&manifest),
        book,
    );
    assert_eq!(
        kinds(&c),
        vec![
            (FindingKind::Mismatch, "request.op".into()),
            (FindingKind::Mismatch, "request.callId".into()),
        ]
    );
    let c = check_parts(&p, &json!({"op": "describe"}), Some(&manifest), book);
    assert_eq!(
        kinds(&c),
        vec![(FindingKind::Mismatch, "request.callId".into())]
    );
    let c = check_parts(
        &parts("describe", "lumirealm"),
        &json!({"op": "describe", "callId": 7}),
        Some(&manifest),
        book,
    );
    assert_eq!(
        kinds(&c),
        vec![(FindingKind::WrongType, "request.callId".into())]
    );
    let c = check_parts(
        &parts("describe", "lumirealm"),
        &json!(["describe"]),
        Some(&manifest),
        book,
    );
    assert_eq!(
        kinds(&c),
        vec![(FindingKind::NotAnObject, "request".into())]
    );
}

#[test]
fn responses_by_outcome_and_bad_manifests() {
    let book = ScopeBook::builtin();
    let req = json!({"op": "describe"});
    // ok without a response: a finding; an error without one: fine.
    let c = check_parts(&parts("describe", "lumirealm"), &req, None, book);
    assert_eq!(
        kinds(&c),
        vec![(FindingKind::MissingResponse, "response".into())]
    );
    let p = DialParts {
        outcome: DialOutcome::Error,
        ..parts("describe", "lumirealm")
    };
    assert!(check_parts(&p, &req, None, book).to_spec());
    // A tool error's {ok:false, error} is checked too.
    let p = DialParts {
        outcome: DialOutcome::ToolError,
        ..parts("write_field", "lumirealm")
    };
    let wreq = json!({"op": "write_field", "userId": "u", "surfaceId": "s", "itemId": "i", "field": "f", "value": 1});
    assert!(check_parts(&p, &wreq, Some(&json!({"ok": false, "error": "no"})), book).to_spec());
    let c = check_parts(&p, &wreq, Some(&json!({"ok": "no"})), book);
    assert_eq!(
        kinds(&c),
        vec![(FindingKind::WrongType, "response.ok".into())]
    );
    // A describe answer without surfaces is a bad manifest.
    let c = check_parts(
        &parts("describe", "lumirealm"),
        &req,
        Some(&json!({"extension": {"id": "lumirealm", "name": "LumiRealm"}})),
        book,
    );
    assert!(!c.to_spec());
    assert!(
        c.findings
            .iter()
            .all(|f| f.kind == FindingKind::BadManifest && f.path.starts_with("response")),
        "{:?}",
        c.findings
    );
}

proptest::proptest! {
    /// Any extra key the spec does not name is found, at its path, whatever the op.
    #[test]
    fn any_foreign_request_key_is_found(key in "[a-z]{1,8}X", i in 0usize..8) {
        let (op, mut req, resp) = conforming().swap_remove(i);
        let call_id = req.get("callId").and_then(Value::as_str).unwrap_or("").to_string();
        let p = DialParts { call_id: &call_id, ..parts(op, "lumirealm") };
        req.as_object_mut().unwrap().insert(key.clone(), json!(1));
        let c = check_parts(&p, &req, Some(&resp), ScopeBook::builtin());
        proptest::prop_assert_eq!(kinds(&c), vec![(FindingKind::UnexpectedField, format!("request.{key}"))]);
    }
}
