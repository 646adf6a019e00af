//! The request and response shapes of the eight ops (`phone-line.md`, "Request and response
//! shapes"), as tables of `(name, type, required)` fields with the spec line each follows, so
//! the check itself is one walk over a table, not code per op.

use serde_json::Value;

use super::{refs, SpecRef};

/// A field's expected type.
#[derive(Clone, Copy)]
pub(super) enum Ty {
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
    pub(super) fn accepts(self, v: &Value) -> bool {
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

    pub(super) fn words(self) -> &'static str {
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
pub(super) type Field = (&'static str, Ty, bool);

pub(super) fn request_shape(op: &str) -> Option<(&'static [Field], SpecRef)> {
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

pub(super) fn response_shape(op: &str) -> Option<(&'static [Field], SpecRef)> {
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

pub(super) const LISTED_ITEM: &[Field] = &[
    ("id", Ty::Id, true),
    ("label", Ty::Str, true),
    ("brief", Ty::Str, false),
];

pub(super) const GREP_HIT: &[Field] = &[
    ("itemId", Ty::Str, true),
    ("itemLabel", Ty::Str, false),
    ("fieldPath", Ty::Str, true),
    ("line", Ty::Num, true),
    ("match", Ty::Str, true),
    ("preview", Ty::Str, true),
];
