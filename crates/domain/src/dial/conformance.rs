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
//!
//! Parts: [`refs`] (the spec lines cited), `shapes` (each op's request and response fields),
//! `check` (the walk producing findings), `scope_book` (which lines' manifests are known).

use std::fmt;

use serde::Serialize;
use serde_json::Value;
use ts_rs::TS;

use crate::dial::{Dial, DialOutcome};

mod check;
pub mod refs;
mod scope_book;
mod shapes;
#[cfg(test)]
mod tests;

pub use check::check_parts;
pub use scope_book::ScopeBook;

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
