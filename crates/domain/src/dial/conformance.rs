//! Spec conformance of one dial: its request and response checked against its op in
//! `phone-line.md` ("Operations", "Request and response shapes"), with LumiRealm's extension ops
//! named as such (`phone-line.md` line 59, `upstream-behaviour.md`, "LumiRealm's handler errors").
//!
//! Not to be confused with [`switchboard_wire::ifp::conformance`], which replays ifp/1 *sequence files*
//! against the envelope receiver. This module looks inside a dial.
//!
//! What is checked, all as pure functions of the dial and a [`ScopeBook`]:
//! - the request is an object whose `op` is the dial's op; each op's fields are present with
//!   the spec's types (`userId`, `characterId`, `surfaceId`, `itemId`, `field`, `value`,
//!   `extPath`, `pattern`, `ignoreCase`, `fieldPrefix`, `head`), `callId` a string equal to the
//!   dial's `call_id`, and no field the op does not take (e.g. `surface` or `id`);
//! - `characterId` on `list_items` / `grep_items`: present for a `per_character` surface,
//!   absent for a `global` one, **only when the line's manifest is known** (in the book);
//! - the response of an answered dial (outcome `ok`, or `tool_error` with a response): each
//!   op's keys and types (`grep_items` hits with `itemId`/`fieldPath`/`line`/`match`/`preview`
//!   and `truncated`, `read_item` answering `value`, `list_items` with `total`, ...); a
//!   `describe` answer is checked as a manifest ([`crate::phone_line::check::check_manifest`]);
//! - an op that is neither one of the eight nor, on LumiRealm, one of its extension ops.
//!
//! Each [`SpecFinding`] says what is wrong, the JSON path where (`request.surfaceId`,
//! `response.hits[0].match`) and the spec's line and words. The line numbers are checked against
//! the spec file by a test, so they cannot drift silently.

use std::collections::HashMap;
use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};
use ts_rs::TS;

use crate::dial::{Dial, DialOutcome};
use crate::phone_line::json_path::{type_words, JsonPath};
use crate::phone_line::manifest::{SurfaceManifest, SurfaceScope};

/// Where in the specs a rule comes from: the file, the 1-based line, the section and the
/// spec's own words on that line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecRef {
    /// The spec file, e.g. `phone-line.md`.
    pub file: &'static str,
    /// 1-based line in that file.
    pub line: u32,
    /// The section heading.
    pub section: &'static str,
    /// The words on that line (a part of it), verbatim.
    pub words: &'static str,
}

macro_rules! spec {
    ($name:ident, $file:literal, $line:literal, $section:literal, $words:literal) => {
        #[doc = concat!("`", $file, "` line ", stringify!($line), " (\"", $section, "\"): `", $words, "`")]
        pub const $name: SpecRef = SpecRef {
            file: $file,
            line: $line,
            section: $section,
            words: $words,
        };
    };
}

/// The spec lines findings cite.
pub mod refs {
    use super::SpecRef;
    spec!(
        REQ_SYSTEM_PROMPT,
        "phone-line.md",
        65,
        "Request and response shapes",
        "{ op: \"system_prompt\"; userId: string; characterId: string }"
    );
    spec!(
        REQ_CHECK_WRITE,
        "phone-line.md",
        66,
        "Request and response shapes",
        "{ op: \"check_write\";   userId: string; characterId: string; extPath: string }"
    );
    spec!(
        REQ_CHECK_READ,
        "phone-line.md",
        67,
        "Request and response shapes",
        "{ op: \"check_read\";    userId: string; characterId: string; extPath: string }"
    );
    spec!(
        REQ_LIST_ITEMS,
        "phone-line.md",
        68,
        "Request and response shapes",
        "{ op: \"list_items\";    userId: string; surfaceId: string; characterId?: string }"
    );
    spec!(REQ_READ_ITEM, "phone-line.md", 69, "Request and response shapes", "{ op: \"read_item\";     userId: string; surfaceId: string; itemId: string; field?: string }");
    spec!(REQ_WRITE_FIELD, "phone-line.md", 70, "Request and response shapes", "{ op: \"write_field\";   userId: string; surfaceId: string; itemId: string; field: string; value: unknown }");
    spec!(REQ_GREP_ITEMS, "phone-line.md", 71, "Request and response shapes", "{ op: \"grep_items\";    userId: string; surfaceId: string; pattern: string; characterId?: string; ignoreCase?: boolean; fieldPrefix?: string; head?: number }");
    spec!(
        REQ_DESCRIBE,
        "phone-line.md",
        64,
        "Request and response shapes",
        "{ op: \"describe\" }"
    );
    spec!(
        REQ_CALL_ID,
        "phone-line.md",
        72,
        "Request and response shapes",
        ") & { callId?: string };"
    );
    spec!(
        RES_DESCRIBE,
        "phone-line.md",
        74,
        "Request and response shapes",
        "// describe       -> SurfaceManifest"
    );
    spec!(
        RES_SYSTEM_PROMPT,
        "phone-line.md",
        75,
        "Request and response shapes",
        "// system_prompt  -> { text: string | null }"
    );
    spec!(
        RES_CHECK_WRITE,
        "phone-line.md",
        76,
        "Request and response shapes",
        "// check_write    -> { ok: boolean; message?: string }"
    );
    spec!(
        RES_CHECK_READ,
        "phone-line.md",
        77,
        "Request and response shapes",
        "// check_read     -> { ok: boolean; message?: string }"
    );
    spec!(
        RES_LIST_ITEMS,
        "phone-line.md",
        78,
        "Request and response shapes",
        "// list_items     -> { items: { id, label, brief? }[]; total }"
    );
    spec!(
        RES_READ_ITEM,
        "phone-line.md",
        79,
        "Request and response shapes",
        "// read_item      -> { value: unknown; meta?: object }"
    );
    spec!(
        RES_WRITE_FIELD,
        "phone-line.md",
        80,
        "Request and response shapes",
        "// write_field    -> { ok: boolean; error?: string }"
    );
    spec!(RES_GREP_ITEMS, "phone-line.md", 81, "Request and response shapes", "// grep_items     -> { hits: { itemId, itemLabel?, fieldPath, line, match, preview }[]; truncated }");
    spec!(CHARACTER_SCOPE, "phone-line.md", 83, "Request and response shapes", "characterId on list_items / grep_items is present only when the surface is per_character-scoped.");
    spec!(
        UNKNOWN_OP,
        "phone-line.md",
        29,
        "How it works",
        "default: throw new Error(`unknown op: ${(req as { op: string }).op}`);"
    );
    spec!(EXTENSION_OPS, "phone-line.md", 59, "Operations", "LumiRealm exposes additional WS-op mutation ops (asset_mutate, attach_module, detach_module, set_toggle, set_chat_variable, set_default_variables_text)");
    spec!(
        MISSING_USER_ID,
        "upstream-behaviour.md",
        40,
        "LumiRealm's handler errors",
        "`request missing userId` (every op but `describe`)"
    );
}

/// What kind of rule a finding breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum FindingKind {
    /// The request or response is not a JSON object.
    NotAnObject,
    /// A field the op requires is absent.
    MissingField,
    /// A field has the wrong JSON type.
    WrongType,
    /// A field the op does not take (often a misspelling: `surface` for `surfaceId`).
    UnexpectedField,
    /// `request.op` differs from the dial's op, or `callId` from the dial's `call_id`.
    Mismatch,
    /// `characterId` present for a global surface, or absent for a per-character one.
    CharacterScope,
    /// The dial answered (`ok`) without a response.
    MissingResponse,
    /// The op is neither one of the spec's eight nor an extension op of the line dialed.
    UnknownOp,
    /// The `describe` answer is not a good manifest.
    BadManifest,
}

/// One way a dial breaks the spec.
///
/// Shape: `{ kind, path, problem, spec, spec_line, spec_section, spec_words }`; `path` is a
/// JavaScript-style path from the dial (`request.surfaceId`, `response.hits[0].match`, `op`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct SpecFinding {
    /// The kind of rule broken.
    pub kind: FindingKind,
    /// Where in the dial's JSON.
    pub path: String,
    /// What is wrong, in words.
    pub problem: String,
    /// The spec file cited (`phone-line.md`, `upstream-behaviour.md`).
    pub spec: String,
    /// 1-based line in that file.
    pub spec_line: u32,
    /// Its section.
    pub spec_section: String,
    /// The spec's words on that line.
    pub spec_words: String,
}

impl fmt::Display for SpecFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} ({} line {}, \"{}\")",
            self.path, self.problem, self.spec, self.spec_line, self.spec_section
        )
    }
}

/// What the dial's op is, as the spec sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum OpClass {
    /// One of the eight ops of `phone-line.md`, "Operations".
    Core,
    /// One of LumiRealm's extension ops (`asset_mutate`, ...) dialed on LumiRealm: not part of
    /// the core protocol and not an error (`phone-line.md` line 59).
    LumiRealmExtension,
    /// Anything else: the reference handler answers `unknown op: <op>`.
    Unknown,
    /// A dial refused before the line read its request (`op: "unknown"`, `request: null`,
    /// outcome `error` or `timed_out`: the host's `not authorised`, a failed read): there is no
    /// request or response to check (`docs/protocol.md`, "Answers for phone-app authors", 6).
    NotRead,
}

/// The op a reporter beside the line (switchboard-tap) gives a dial whose request it never
/// saw (`docs/protocol.md`, "Answers for phone-app authors", 6).
pub const UNREAD_OP: &str = "unknown";

/// A dial's conformance: `{ op_class, findings }` (no findings: to spec).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct DialConformance {
    /// How the spec classes the op.
    pub op_class: OpClass,
    /// Every way the dial breaks the spec, in the order found (request first).
    pub findings: Vec<SpecFinding>,
}

impl DialConformance {
    /// Whether the dial follows the spec (no findings).
    pub fn to_spec(&self) -> bool {
        self.findings.is_empty()
    }
}

/// LumiRealm's extension ops (`phone-line.md` line 59).
pub const LUMIREALM_EXTENSION_OPS: [&str; 6] = [
    "asset_mutate",
    "attach_module",
    "detach_module",
    "set_toggle",
    "set_chat_variable",
    "set_default_variables_text",
];

/// The extension id of the reference line whose extension ops are known.
pub const LUMIREALM: &str = "lumirealm";

/// The surfaces' scopes of the lines whose manifest is known: callee extension id → surface id →
/// scope. The `characterId` rule is checked only for surfaces found here.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScopeBook {
    lines: HashMap<String, HashMap<String, SurfaceScope>>,
}

impl ScopeBook {
    /// An empty book: no line's manifest known.
    pub fn new() -> Self {
        Self::default()
    }

    /// A book knowing LumiRealm's published manifest (the corpus's
    /// `lumiverse/lumirealm.describe.json`, embedded): `module_envelope` is `per_character`.
    pub fn builtin() -> &'static ScopeBook {
        static BOOK: std::sync::OnceLock<ScopeBook> = std::sync::OnceLock::new();
        BOOK.get_or_init(|| {
            let mut book = ScopeBook::new();
            match SurfaceManifest::from_text(LUMIREALM_DESCRIBE) {
                Ok(m) => book.add_manifest(LUMIREALM, &m),
                Err(e) => tracing::error!("embedded LumiRealm manifest not used: {e}"),
            }
            book
        })
    }

    /// Records `manifest` as the manifest of line `callee` (replacing what was known).
    pub fn add_manifest(&mut self, callee: &str, manifest: &SurfaceManifest) {
        let surfaces = manifest
            .surfaces
            .iter()
            .map(|s| (s.id.clone(), s.scope))
            .collect();
        self.lines.insert(callee.to_string(), surfaces);
    }

    /// The scope of `surface` on line `callee`, when that line's manifest is known and has it.
    pub fn scope(&self, callee: &str, surface: &str) -> Option<SurfaceScope> {
        self.lines.get(callee)?.get(surface).copied()
    }
}

/// LumiRealm's describe answer as published (a copy of the corpus file, embedded).
const LUMIREALM_DESCRIBE: &str = include_str!("../../../../data/lumirealm.describe.json");

/// Checks a whole [`Dial`] (its request and response JSON text) against the spec. A request or
/// response text that does not parse (never for a [`Dial`] built by the log) counts as not an
/// object.
pub fn check_dial(dial: &Dial, book: &ScopeBook) -> DialConformance {
    let request = dial.request.to_value().unwrap_or(Value::Null);
    let response = dial
        .response
        .as_ref()
        .map(|r| r.to_value().unwrap_or(Value::Null));
    check_parts(
        &DialParts {
            op: &dial.op,
            callee: &dial.callee,
            call_id: &dial.call_id,
            outcome: dial.outcome,
        },
        &request,
        response.as_ref(),
        book,
    )
}

/// Whether `dial` follows the spec (a [`check_dial`] with no findings).
pub fn dial_to_spec(dial: &Dial, book: &ScopeBook) -> bool {
    check_dial(dial, book).to_spec()
}

/// The parts of a dial besides its request and response that the check uses.
#[derive(Debug, Clone, Copy)]
pub struct DialParts<'a> {
    /// The dial's op.
    pub op: &'a str,
    /// The callee's extension id.
    pub callee: &'a str,
    /// The dial's call id (empty when none).
    pub call_id: &'a str,
    /// How the dial ended.
    pub outcome: DialOutcome,
}

/// A field's expected type.
#[derive(Clone, Copy)]
enum Ty {
    Str,
    Bool,
    Num,
    Any,
    Obj,
    StrOrNull,
    /// `id` of a listed item: the spec gives no type; a string or a number.
    Id,
}

impl Ty {
    fn accepts(self, v: &Value) -> bool {
        match self {
            Ty::Str => v.is_string(),
            Ty::Bool => v.is_boolean(),
            Ty::Num => v.is_number(),
            Ty::Any => true,
            Ty::Obj => v.is_object(),
            Ty::StrOrNull => v.is_string() || v.is_null(),
            Ty::Id => v.is_string() || v.is_number(),
        }
    }

    fn words(self) -> &'static str {
        match self {
            Ty::Str => "a string",
            Ty::Bool => "a boolean",
            Ty::Num => "a number",
            Ty::Any => "any value",
            Ty::Obj => "an object",
            Ty::StrOrNull => "a string or null",
            Ty::Id => "a string or a number",
        }
    }
}

/// `(name, type, required)`.
type Field = (&'static str, Ty, bool);

fn request_shape(op: &str) -> Option<(&'static [Field], SpecRef)> {
    const U: Field = ("userId", Ty::Str, true);
    const C: Field = ("characterId", Ty::Str, true);
    const C_OPT: Field = ("characterId", Ty::Str, false);
    const S: Field = ("surfaceId", Ty::Str, true);
    Some(match op {
        "describe" => (&[], refs::REQ_DESCRIBE),
        "system_prompt" => (&[U, C], refs::REQ_SYSTEM_PROMPT),
        "check_write" => (&[U, C, ("extPath", Ty::Str, true)], refs::REQ_CHECK_WRITE),
        "check_read" => (&[U, C, ("extPath", Ty::Str, true)], refs::REQ_CHECK_READ),
        "list_items" => (&[U, S, C_OPT], refs::REQ_LIST_ITEMS),
        "read_item" => (
            &[U, S, ("itemId", Ty::Str, true), ("field", Ty::Str, false)],
            refs::REQ_READ_ITEM,
        ),
        "write_field" => (
            &[
                U,
                S,
                ("itemId", Ty::Str, true),
                ("field", Ty::Str, true),
                ("value", Ty::Any, true),
            ],
            refs::REQ_WRITE_FIELD,
        ),
        "grep_items" => (
            &[
                U,
                S,
                ("pattern", Ty::Str, true),
                C_OPT,
                ("ignoreCase", Ty::Bool, false),
                ("fieldPrefix", Ty::Str, false),
                ("head", Ty::Num, false),
            ],
            refs::REQ_GREP_ITEMS,
        ),
        _ => return None,
    })
}

fn response_shape(op: &str) -> Option<(&'static [Field], SpecRef)> {
    Some(match op {
        "system_prompt" => (&[("text", Ty::StrOrNull, true)], refs::RES_SYSTEM_PROMPT),
        "check_write" => (
            &[("ok", Ty::Bool, true), ("message", Ty::Str, false)],
            refs::RES_CHECK_WRITE,
        ),
        "check_read" => (
            &[("ok", Ty::Bool, true), ("message", Ty::Str, false)],
            refs::RES_CHECK_READ,
        ),
        "list_items" => (
            &[("items", Ty::Any, true), ("total", Ty::Num, true)],
            refs::RES_LIST_ITEMS,
        ),
        "read_item" => (
            &[("value", Ty::Any, true), ("meta", Ty::Obj, false)],
            refs::RES_READ_ITEM,
        ),
        "write_field" => (
            &[("ok", Ty::Bool, true), ("error", Ty::Str, false)],
            refs::RES_WRITE_FIELD,
        ),
        "grep_items" => (
            &[("hits", Ty::Any, true), ("truncated", Ty::Bool, true)],
            refs::RES_GREP_ITEMS,
        ),
        _ => return None,
    })
}

const LISTED_ITEM: &[Field] = &[
    ("id", Ty::Id, true),
    ("label", Ty::Str, true),
    ("brief", Ty::Str, false),
];

const GREP_HIT: &[Field] = &[
    ("itemId", Ty::Str, true),
    ("itemLabel", Ty::Str, false),
    ("fieldPath", Ty::Str, true),
    ("line", Ty::Num, true),
    ("match", Ty::Str, true),
    ("preview", Ty::Str, true),
];

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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
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

    /// The examples: `surface`/`id` instead of `surfaceId`/`itemId`, no `userId`,
    /// `read_item` answering `item`, `list_items` without `total`, hits without
    /// `itemId`/`fieldPath`/`match` and no `truncated`.
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
}
