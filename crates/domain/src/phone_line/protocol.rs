//! The phone-line protocol's typed requests and responses, and what happens when a line does not
//! support an op (phone-line.md, "Operations" and "Request and response shapes").
//!
//! A request is `{ op, ...fields, callId? }` with camelCase field names; each op has its own
//! response shape. Every type keeps the fields it does not know in `extra` (order kept), so
//! nothing a phone line sends is lost when Switchboard reads and writes it back.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

mod request;
mod response;

pub use request::{
    CheckPathRequest, GrepItemsRequest, ListItemsRequest, PhoneLineRequest, ReadItemRequest,
    RequestBody, SystemPromptRequest, WriteFieldRequest,
};
pub use response::{
    CheckResponse, GrepHit, GrepItemsResponse, ListItemsResponse, ListedItem, PhoneLineResponse,
    ReadItemResponse, SystemPromptResponse, WriteFieldResponse,
};

/// Errors reading phone-line requests and responses.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// The `op` string is not one of the eight ops of the protocol.
    #[error("unknown phone-line op {0:?} (known: describe, system_prompt, check_write, check_read, list_items, read_item, write_field, grep_items)")]
    UnknownOp(String),
    /// A request did not have the shape its op requires.
    #[error("bad phone-line request: {0}")]
    BadRequest(String),
    /// A response did not have the shape the op requires.
    #[error("bad {op} response: {message}")]
    BadResponse {
        /// The op the response answers.
        op: PhoneLineOp,
        /// What was wrong (serde's words: the missing field or wrong type).
        message: String,
    },
}

impl From<ProtocolError> for switchboard_wire::error::IpcError {
    /// Always `invalid_input`: the request or response came from a peer.
    fn from(e: ProtocolError) -> Self {
        Self::invalid_input(e.to_string())
    }
}

/// The eight ops of the phone-line protocol ("Operations").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum PhoneLineOp {
    /// Required: returns the line's [`SurfaceManifest`](super::manifest::SurfaceManifest).
    Describe,
    /// Optional: a per-character prompt fragment for LumiAgent's system prompt.
    SystemPrompt,
    /// Optional: veto direct writes to `char/extensions/<extId>.*` paths.
    CheckWrite,
    /// Optional: veto direct reads of `char/extensions/<extId>.*` paths.
    CheckRead,
    /// Optional data op: list a surface's items (backs `list_external`).
    ListItems,
    /// Optional data op: read one item or one field of it (backs `read_external`).
    ReadItem,
    /// Optional mutation op: write one field (backs `edit_external` / `update_external`).
    WriteField,
    /// Optional data op: regex search over every item's string leaves (backs `grep_external`).
    GrepItems,
}

impl PhoneLineOp {
    /// All ops in the spec's order.
    pub const ALL: [PhoneLineOp; 8] = [
        PhoneLineOp::Describe,
        PhoneLineOp::SystemPrompt,
        PhoneLineOp::CheckWrite,
        PhoneLineOp::CheckRead,
        PhoneLineOp::ListItems,
        PhoneLineOp::ReadItem,
        PhoneLineOp::WriteField,
        PhoneLineOp::GrepItems,
    ];

    /// The op's wire name (`"describe"`, `"system_prompt"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            PhoneLineOp::Describe => "describe",
            PhoneLineOp::SystemPrompt => "system_prompt",
            PhoneLineOp::CheckWrite => "check_write",
            PhoneLineOp::CheckRead => "check_read",
            PhoneLineOp::ListItems => "list_items",
            PhoneLineOp::ReadItem => "read_item",
            PhoneLineOp::WriteField => "write_field",
            PhoneLineOp::GrepItems => "grep_items",
        }
    }

    /// Whether every phone line must answer this op (only `describe`).
    pub fn is_required(self) -> bool {
        self == PhoneLineOp::Describe
    }

    /// What LumiAgent does when a line answers this op ("Operations"): when `supported` is
    /// true the line's answer is used; otherwise `describe` fails the pairing,
    /// `system_prompt` contributes nothing, `check_read` / `check_write` allow, and data and
    /// mutation ops are tool errors.
    pub fn outcome(self, supported: bool) -> OpOutcome {
        if supported {
            return OpOutcome::UseResponse;
        }
        match self {
            PhoneLineOp::Describe => OpOutcome::PairingFails,
            PhoneLineOp::SystemPrompt => OpOutcome::ContributesNothing,
            PhoneLineOp::CheckWrite | PhoneLineOp::CheckRead => OpOutcome::Allow,
            PhoneLineOp::ListItems
            | PhoneLineOp::ReadItem
            | PhoneLineOp::WriteField
            | PhoneLineOp::GrepItems => OpOutcome::ToolError,
        }
    }
}

impl fmt::Display for PhoneLineOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PhoneLineOp {
    type Err = ProtocolError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PhoneLineOp::ALL
            .into_iter()
            .find(|op| op.as_str() == s)
            .ok_or_else(|| ProtocolError::UnknownOp(s.to_string()))
    }
}

/// What an op's call amounts to, given whether the line supports it ("Operations").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum OpOutcome {
    /// The line supports the op: its response is used.
    UseResponse,
    /// `describe` unsupported: the line cannot be paired.
    PairingFails,
    /// `system_prompt` unsupported: no prompt fragment from this line.
    ContributesNothing,
    /// `check_read` / `check_write` unsupported: the read or write is allowed.
    Allow,
    /// A data or mutation op unsupported: the agent tool call fails with a tool error.
    ToolError,
}

/// The op a line's thrown error says it does not support, when the error is the reference
/// handler's `unknown op: <op>` (possibly wrapped in other text), e.g. `"unknown op: grep_items"`.
pub fn unsupported_op_in_error(message: &str) -> Option<PhoneLineOp> {
    let (_, rest) = message.split_once("unknown op: ")?;
    let name: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    name.parse().ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::phone_line::manifest::SurfaceManifest;
    use serde_json::{json, Value};

    #[test]
    fn every_op_round_trips_with_call_id_and_unknown_fields() {
        let requests = [
            json!({"op": "describe", "callId": "c0"}),
            json!({"op": "system_prompt", "userId": "u", "characterId": "ch", "callId": "c1"}),
            json!({"op": "check_write", "userId": "u", "characterId": "ch", "extPath": "lumirealm.source"}),
            json!({"op": "check_read", "userId": "u", "characterId": "ch", "extPath": "lumirealm.payload.lua_scripts", "zz": [1], "aa": 2}),
            json!({"op": "list_items", "userId": "u", "surfaceId": "module_envelope", "characterId": "ch"}),
            json!({"op": "read_item", "userId": "u", "surfaceId": "s", "itemId": "i", "field": "triggers"}),
            json!({"op": "write_field", "userId": "u", "surfaceId": "s", "itemId": "i", "field": "f", "value": {"b": 1, "a": [null]}}),
            json!({"op": "grep_items", "userId": "u", "surfaceId": "s", "pattern": "ル+", "characterId": "c", "ignoreCase": true, "fieldPrefix": "lua", "head": 20, "callId": "c7"}),
        ];
        for (want_op, value) in PhoneLineOp::ALL.into_iter().zip(requests) {
            let req = PhoneLineRequest::from_value(value.clone()).unwrap();
            assert_eq!(req.op(), want_op);
            assert_eq!(
                switchboard_wire::js_json::stringify(&req.to_value()),
                switchboard_wire::js_json::stringify(&value),
                "{want_op}"
            );
        }
    }

    #[test]
    fn bad_requests_name_the_problem() {
        let e = PhoneLineRequest::from_value(json!({"op": "dial_out"})).unwrap_err();
        assert!(
            matches!(e, ProtocolError::UnknownOp(ref s) if s == "dial_out"),
            "{e}"
        );
        let e = PhoneLineRequest::from_value(
            json!({"op": "check_write", "userId": "u", "characterId": "c"}),
        )
        .unwrap_err();
        assert!(e.to_string().contains("extPath"), "{e}");
        let e = PhoneLineRequest::from_value(json!({"op": "describe", "callId": 7})).unwrap_err();
        assert!(
            e.to_string()
                .contains("callId: expected a string, found a number"),
            "{e}"
        );
    }

    #[test]
    fn responses_parse_per_op() {
        let r = PhoneLineResponse::from_value(PhoneLineOp::SystemPrompt, json!({"text": null}))
            .unwrap();
        assert!(matches!(
            r,
            PhoneLineResponse::SystemPrompt(SystemPromptResponse { text: None, .. })
        ));
        let r = PhoneLineResponse::from_value(
            PhoneLineOp::GrepItems,
            json!({"hits": [{"itemId": "m1", "fieldPath": "lua[0]", "line": 3, "match": "x", "preview": "a x b"}], "truncated": false}),
        )
        .unwrap();
        match r {
            PhoneLineResponse::GrepItems(g) => {
                assert_eq!(g.hits.len(), 1);
                assert_eq!(g.hits[0].matched, "x");
                assert_eq!(g.hits[0].field_path, "lua[0]");
            }
            other => panic!("{other:?}"),
        }
        let e = PhoneLineResponse::from_value(PhoneLineOp::CheckWrite, json!({"ok": "yes"}))
            .unwrap_err();
        assert!(e.to_string().starts_with("bad check_write response"), "{e}");
        let r = PhoneLineResponse::from_value(
            PhoneLineOp::ListItems,
            json!({"items": [{"id": "a", "label": "A", "brief": "b", "x": 1}], "total": 1}),
        )
        .unwrap();
        match r {
            PhoneLineResponse::ListItems(l) => {
                assert_eq!(l.items[0].extra.get("x"), Some(&json!(1)))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unsupported_ops_have_the_spec_outcomes() {
        use OpOutcome::*;
        let want = [
            PairingFails,
            ContributesNothing,
            Allow,
            Allow,
            ToolError,
            ToolError,
            ToolError,
            ToolError,
        ];
        for (op, want) in PhoneLineOp::ALL.into_iter().zip(want) {
            assert_eq!(op.outcome(false), want, "{op}");
            assert_eq!(op.outcome(true), UseResponse, "{op}");
            assert_eq!(op.is_required(), op == PhoneLineOp::Describe);
            assert_eq!(op.as_str().parse::<PhoneLineOp>().unwrap(), op);
            assert_eq!(serde_json::to_value(op).unwrap(), json!(op.as_str()));
        }
    }

    #[test]
    fn character_id_follows_the_surface_scope() {
        let m = SurfaceManifest::from_value(json!({
            "extension": {"id": "x", "name": "X"},
            "surfaces": [
                {"id": "per", "label": "P", "scope": "per_character"},
                {"id": "glob", "label": "G", "scope": {"kind": "global"}}
            ]
        }))
        .unwrap();
        let req = |v: Value| PhoneLineRequest::from_value(v).unwrap();
        let ok =
            req(json!({"op": "list_items", "userId": "u", "surfaceId": "per", "characterId": "c"}));
        assert_eq!(ok.surface_problem(&m), None);
        let missing =
            req(json!({"op": "grep_items", "userId": "u", "surfaceId": "per", "pattern": "x"}));
        assert!(missing
            .surface_problem(&m)
            .unwrap()
            .contains("characterId is required"));
        let extra = req(
            json!({"op": "list_items", "userId": "u", "surfaceId": "glob", "characterId": "c"}),
        );
        assert!(extra
            .surface_problem(&m)
            .unwrap()
            .contains("must be absent"));
        let nosuch =
            req(json!({"op": "read_item", "userId": "u", "surfaceId": "nope", "itemId": "i"}));
        assert!(nosuch
            .surface_problem(&m)
            .unwrap()
            .contains("no surface \"nope\""));
        let describe = req(json!({"op": "describe"}));
        assert_eq!(describe.surface_problem(&m), None);
    }

    #[test]
    fn recognises_unknown_op_errors() {
        assert_eq!(
            unsupported_op_in_error("Error: unknown op: grep_items"),
            Some(PhoneLineOp::GrepItems)
        );
        assert_eq!(
            unsupported_op_in_error("rpc failed: unknown op: check_read (lumirealm)"),
            Some(PhoneLineOp::CheckRead)
        );
        assert_eq!(unsupported_op_in_error("not authorised"), None);
        assert_eq!(unsupported_op_in_error("unknown op: frobnicate"), None);
    }
}
