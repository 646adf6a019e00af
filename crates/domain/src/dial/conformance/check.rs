//! The check itself: walks a dial's request and response against its op's shape and collects
//! every [`SpecFinding`], in the order found (request first), with the JSON path and spec line.

use serde_json::{Map, Value};

use crate::dial::DialOutcome;
use crate::phone_line::json_path::{type_words, JsonPath};
use crate::phone_line::manifest::SurfaceScope;

use super::shapes::{request_shape, response_shape, Field, GREP_HIT, LISTED_ITEM};
use super::{
    refs, DialConformance, DialParts, FindingKind, OpClass, ScopeBook, SpecFinding, SpecRef,
    LUMIREALM, LUMIREALM_EXTENSION_OPS, UNREAD_OP,
};

struct Out(Vec<SpecFinding>);

impl Out {
    fn push(&mut self, kind: FindingKind, path: &JsonPath, problem: String, spec: SpecRef) {
        self.0.push(SpecFinding {
            kind,
            path: path.to_string(),
            problem,
            spec: spec.file.to_string(),
            spec_line: spec.line,
            spec_section: spec.section.to_string(),
            spec_words: spec.words.to_string(),
        });
    }
}

/// The spec's field a misspelt `key` most likely means, for the "did you mean" hint.
fn meant(key: &str, fields: &[Field]) -> Option<&'static str> {
    let candidates: &[&'static str] = match key {
        "surface" | "surface_id" => &["surfaceId"],
        "id" | "item_id" => &["itemId"],
        "item" => &["itemId", "value"],
        "user" | "user_id" => &["userId"],
        "character" | "character_id" => &["characterId"],
        "path" | "ext_path" => &["extPath", "fieldPath"],
        "query" | "regex" => &["pattern"],
        "ignore_case" => &["ignoreCase"],
        "field_prefix" => &["fieldPrefix"],
        "limit" => &["head"],
        "call_id" => &["callId"],
        "data" | "result" => &["value"],
        "field_path" => &["fieldPath"],
        "item_label" => &["itemLabel"],
        "count" => &["total"],
        _ => return None,
    };
    candidates
        .iter()
        .copied()
        .find(|c| fields.iter().any(|f| f.0 == *c))
}

/// Checks `obj`'s fields against `fields`: missing required ones, wrong types, and keys not in
/// the list (`extra_ok` keys are allowed besides).
fn check_fields(
    out: &mut Out,
    obj: &Map<String, Value>,
    at: &JsonPath,
    fields: &[Field],
    extra_ok: &[&str],
    spec: SpecRef,
) {
    for &(name, ty, required) in fields {
        match obj.get(name) {
            None if required => out.push(
                FindingKind::MissingField,
                &at.key(name),
                format!("missing `{name}` ({})", ty.words()),
                spec,
            ),
            None => {}
            Some(v) if !ty.accepts(v) => out.push(
                FindingKind::WrongType,
                &at.key(name),
                format!("`{name}` is {}, expected {}", type_words(v), ty.words()),
                spec,
            ),
            Some(_) => {}
        }
    }
    for key in obj.keys() {
        if fields.iter().any(|f| f.0 == key) || extra_ok.contains(&key.as_str()) {
            continue;
        }
        let hint = meant(key, fields)
            .filter(|m| !obj.contains_key(*m))
            .map(|m| format!(" (did you mean `{m}`?)"))
            .unwrap_or_default();
        out.push(
            FindingKind::UnexpectedField,
            &at.key(key),
            format!("`{key}` is not a field of this shape{hint}"),
            spec,
        );
    }
}

/// Checks a dial given as its parts, its request and its response (when it has one).
pub fn check_parts(
    parts: &DialParts<'_>,
    request: &Value,
    response: Option<&Value>,
    book: &ScopeBook,
) -> DialConformance {
    let mut out = Out(Vec::new());
    let op = parts.op;
    if op == UNREAD_OP
        && request.is_null()
        && response.is_none()
        && matches!(parts.outcome, DialOutcome::Error | DialOutcome::TimedOut)
    {
        return DialConformance {
            op_class: OpClass::NotRead,
            findings: Vec::new(),
        };
    }
    let extension_op = parts.callee == LUMIREALM && LUMIREALM_EXTENSION_OPS.contains(&op);
    let shape = request_shape(op);
    let op_class = if shape.is_some() {
        OpClass::Core
    } else if extension_op {
        OpClass::LumiRealmExtension
    } else {
        OpClass::Unknown
    };
    if op_class == OpClass::Unknown {
        let also = if LUMIREALM_EXTENSION_OPS.contains(&op) {
            format!(
                " (it is a LumiRealm extension op, but the line dialed is {:?})",
                parts.callee
            )
        } else {
            String::new()
        };
        out.push(
            FindingKind::UnknownOp,
            &JsonPath::root().key("op"),
            format!("{op:?} is not an op of phone-line.md{also}: the handler answers `unknown op: {op}`"),
            refs::UNKNOWN_OP,
        );
    }

    let req_at = JsonPath::root().key("request");
    let spec = shape.map_or(refs::EXTENSION_OPS, |s| s.1);
    match request.as_object() {
        None => out.push(
            FindingKind::NotAnObject,
            &req_at,
            format!("the request is {}, expected an object", type_words(request)),
            spec,
        ),
        Some(req) => {
            match req.get("op") {
                None => out.push(
                    FindingKind::MissingField,
                    &req_at.key("op"),
                    "missing `op` (a string)".to_string(),
                    spec,
                ),
                Some(Value::String(s)) if s == op => {}
                Some(v) => out.push(
                    FindingKind::Mismatch,
                    &req_at.key("op"),
                    format!("`op` is {}, but the dial's op is {op:?}", short(v)),
                    spec,
                ),
            }
            match req.get("callId") {
                Some(Value::String(c)) if c == parts.call_id => {}
                Some(Value::String(c)) => out.push(
                    FindingKind::Mismatch,
                    &req_at.key("callId"),
                    format!(
                        "`callId` is {c:?}, but the dial's call_id is {:?}",
                        parts.call_id
                    ),
                    refs::REQ_CALL_ID,
                ),
                Some(v) => out.push(
                    FindingKind::WrongType,
                    &req_at.key("callId"),
                    format!("`callId` is {}, expected a string", type_words(v)),
                    refs::REQ_CALL_ID,
                ),
                None if !parts.call_id.is_empty() => out.push(
                    FindingKind::Mismatch,
                    &req_at.key("callId"),
                    format!("no `callId`, but the dial's call_id is {:?}", parts.call_id),
                    refs::REQ_CALL_ID,
                ),
                None => {}
            }
            if let Some((fields, spec)) = shape {
                check_fields(&mut out, req, &req_at, fields, &["op", "callId"], spec);
                if op == "list_items" || op == "grep_items" {
                    check_character_scope(&mut out, req, &req_at, parts.callee, book);
                }
            } else if extension_op && !req.get("userId").is_some_and(Value::is_string) {
                out.push(
                    FindingKind::MissingField,
                    &req_at.key("userId"),
                    "missing `userId` (a string): LumiRealm answers `request missing userId`"
                        .to_string(),
                    refs::MISSING_USER_ID,
                );
            }
        }
    }

    if op_class == OpClass::Core {
        check_response(&mut out, parts, response);
    }
    DialConformance {
        op_class,
        findings: out.0,
    }
}

fn short(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => type_words(other).to_string(),
    }
}

fn check_character_scope(
    out: &mut Out,
    req: &Map<String, Value>,
    at: &JsonPath,
    callee: &str,
    book: &ScopeBook,
) {
    let Some(surface) = req.get("surfaceId").and_then(Value::as_str) else {
        return;
    };
    let Some(scope) = book.scope(callee, surface) else {
        return;
    };
    let has = req.contains_key("characterId");
    match (scope, has) {
        (SurfaceScope::PerCharacter, false) => out.push(
            FindingKind::CharacterScope,
            &at.key("characterId"),
            format!("missing `characterId`: surface {surface:?} of {callee:?} is per_character"),
            refs::CHARACTER_SCOPE,
        ),
        (SurfaceScope::Global, true) => out.push(
            FindingKind::CharacterScope,
            &at.key("characterId"),
            format!("`characterId` given, but surface {surface:?} of {callee:?} is global"),
            refs::CHARACTER_SCOPE,
        ),
        _ => {}
    }
}

fn check_response(out: &mut Out, parts: &DialParts<'_>, response: Option<&Value>) {
    let op = parts.op;
    let at = JsonPath::root().key("response");
    let Some(resp) = response else {
        if parts.outcome == DialOutcome::Ok {
            let spec = response_shape(op).map_or(refs::RES_DESCRIBE, |s| s.1);
            out.push(
                FindingKind::MissingResponse,
                &at,
                "outcome ok but no response: the op answers with a response".to_string(),
                spec,
            );
        }
        return;
    };
    if op == "describe" {
        for p in crate::phone_line::check::check_manifest(resp, Some(parts.callee)) {
            let path = if p.at == "(top level)" {
                at.to_string()
            } else {
                format!("{at}.{}", p.at)
            };
            out.0.push(SpecFinding {
                kind: FindingKind::BadManifest,
                path,
                problem: p.message,
                spec: refs::RES_DESCRIBE.file.to_string(),
                spec_line: refs::RES_DESCRIBE.line,
                spec_section: refs::RES_DESCRIBE.section.to_string(),
                spec_words: refs::RES_DESCRIBE.words.to_string(),
            });
        }
        return;
    }
    let Some((fields, spec)) = response_shape(op) else {
        return;
    };
    let Some(obj) = resp.as_object() else {
        out.push(
            FindingKind::NotAnObject,
            &at,
            format!("the response is {}, expected an object", type_words(resp)),
            spec,
        );
        return;
    };
    check_fields(out, obj, &at, fields, &[], spec);
    let (list_key, item_fields, what) = match op {
        "list_items" => ("items", LISTED_ITEM, "an item"),
        "grep_items" => ("hits", GREP_HIT, "a hit"),
        _ => return,
    };
    match obj.get(list_key) {
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let item_at = at.key(list_key).index(i);
                match item.as_object() {
                    Some(o) => check_fields(out, o, &item_at, item_fields, &[], spec),
                    None => out.push(
                        FindingKind::NotAnObject,
                        &item_at,
                        format!("{what} is {}, expected an object", type_words(item)),
                        spec,
                    ),
                }
            }
        }
        Some(v) => out.push(
            FindingKind::WrongType,
            &at.key(list_key),
            format!("`{list_key}` is {}, expected an array", type_words(v)),
            spec,
        ),
        None => {}
    }
}
