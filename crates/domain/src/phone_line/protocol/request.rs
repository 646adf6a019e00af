//! The requests of the eight ops: `{ op, ...fields, callId? }` with camelCase names, each op's
//! fields typed and unknown ones kept in `extra`, plus the surface check a request must pass
//! against the line's manifest before it is sent.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{PhoneLineOp, ProtocolError};
use crate::phone_line::manifest::SurfaceManifest;

/// `system_prompt` request fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemPromptRequest {
    /// The Lumiverse user.
    pub user_id: String,
    /// The active character.
    pub character_id: String,
    /// Fields the protocol does not define, in the order read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `check_write` / `check_read` request fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckPathRequest {
    /// The Lumiverse user.
    pub user_id: String,
    /// The character whose extension data is touched.
    pub character_id: String,
    /// The path under `char/extensions/` being written or read.
    pub ext_path: String,
    /// Fields the protocol does not define, in the order read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `list_items` request fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListItemsRequest {
    /// The Lumiverse user.
    pub user_id: String,
    /// Which surface of the manifest.
    pub surface_id: String,
    /// Present only when the surface is `per_character`-scoped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub character_id: Option<String>,
    /// Fields the protocol does not define, in the order read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `read_item` request fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadItemRequest {
    /// The Lumiverse user.
    pub user_id: String,
    /// Which surface of the manifest.
    pub surface_id: String,
    /// The item's id as `list_items` gave it.
    pub item_id: String,
    /// One field of the item; the whole item when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Fields the protocol does not define, in the order read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `write_field` request fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteFieldRequest {
    /// The Lumiverse user.
    pub user_id: String,
    /// Which surface of the manifest.
    pub surface_id: String,
    /// The item's id as `list_items` gave it.
    pub item_id: String,
    /// The field to write.
    pub field: String,
    /// The new value (any JSON; absent reads as `null`).
    #[serde(default)]
    pub value: Value,
    /// Fields the protocol does not define, in the order read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `grep_items` request fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrepItemsRequest {
    /// The Lumiverse user.
    pub user_id: String,
    /// Which surface of the manifest.
    pub surface_id: String,
    /// The regular expression searched for in every item's string leaves.
    pub pattern: String,
    /// Present only when the surface is `per_character`-scoped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub character_id: Option<String>,
    /// Case-insensitive search when true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_case: Option<bool>,
    /// Search only fields whose path starts with this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_prefix: Option<String>,
    /// At most this many hits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<u64>,
    /// Fields the protocol does not define, in the order read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The op-specific part of a [`PhoneLineRequest`], tagged by `op`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum RequestBody {
    /// `{ op: "describe" }`.
    Describe {
        /// Fields the protocol does not define, in the order read.
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    /// `{ op: "system_prompt", userId, characterId }`.
    SystemPrompt(SystemPromptRequest),
    /// `{ op: "check_write", userId, characterId, extPath }`.
    CheckWrite(CheckPathRequest),
    /// `{ op: "check_read", userId, characterId, extPath }`.
    CheckRead(CheckPathRequest),
    /// `{ op: "list_items", userId, surfaceId, characterId? }`.
    ListItems(ListItemsRequest),
    /// `{ op: "read_item", userId, surfaceId, itemId, field? }`.
    ReadItem(ReadItemRequest),
    /// `{ op: "write_field", userId, surfaceId, itemId, field, value }`.
    WriteField(WriteFieldRequest),
    /// `{ op: "grep_items", userId, surfaceId, pattern, characterId?, ignoreCase?, fieldPrefix?, head? }`.
    GrepItems(GrepItemsRequest),
}

/// A phone-line request envelope: the op with its fields, and an optional `callId`
/// ("Request and response shapes").
#[derive(Debug, Clone, PartialEq)]
pub struct PhoneLineRequest {
    /// The op and its fields.
    pub body: RequestBody,
    /// The caller's correlation id, when given.
    pub call_id: Option<String>,
}

impl PhoneLineRequest {
    /// The request's op.
    pub fn op(&self) -> PhoneLineOp {
        match &self.body {
            RequestBody::Describe { .. } => PhoneLineOp::Describe,
            RequestBody::SystemPrompt(_) => PhoneLineOp::SystemPrompt,
            RequestBody::CheckWrite(_) => PhoneLineOp::CheckWrite,
            RequestBody::CheckRead(_) => PhoneLineOp::CheckRead,
            RequestBody::ListItems(_) => PhoneLineOp::ListItems,
            RequestBody::ReadItem(_) => PhoneLineOp::ReadItem,
            RequestBody::WriteField(_) => PhoneLineOp::WriteField,
            RequestBody::GrepItems(_) => PhoneLineOp::GrepItems,
        }
    }

    /// Checks the request against the line's manifest ("Request and response shapes"): a
    /// data or mutation op must name a surface the manifest has, and `list_items` /
    /// `grep_items` carry `characterId` exactly when that surface is `per_character`-scoped.
    /// Returns the problem in words, or `None` when the request fits.
    pub fn surface_problem(&self, manifest: &SurfaceManifest) -> Option<String> {
        let (surface_id, character_id) = match &self.body {
            RequestBody::ListItems(r) => (&r.surface_id, Some(&r.character_id)),
            RequestBody::GrepItems(r) => (&r.surface_id, Some(&r.character_id)),
            RequestBody::ReadItem(r) => (&r.surface_id, None),
            RequestBody::WriteField(r) => (&r.surface_id, None),
            _ => return None,
        };
        let Some(surface) = manifest.surface(surface_id) else {
            return Some(format!(
                "{}: the manifest has no surface {surface_id:?}",
                self.op()
            ));
        };
        let per_character =
            surface.scope == crate::phone_line::manifest::SurfaceScope::PerCharacter;
        match character_id {
            Some(None) if per_character => Some(format!(
                "{}: surface {surface_id:?} is per_character-scoped, so characterId is required",
                self.op()
            )),
            Some(Some(_)) if !per_character => Some(format!(
                "{}: surface {surface_id:?} is global, so characterId must be absent",
                self.op()
            )),
            _ => None,
        }
    }

    /// Reads a request envelope. Errors: not an object, unknown `op`
    /// ([`ProtocolError::UnknownOp`]), a missing or mistyped field, or a non-string `callId`
    /// ([`ProtocolError::BadRequest`]).
    pub fn from_value(value: Value) -> Result<Self, ProtocolError> {
        let Value::Object(mut map) = value else {
            return Err(ProtocolError::BadRequest(
                "a request must be a JSON object".into(),
            ));
        };
        match map.get("op") {
            Some(Value::String(op)) => {
                op.parse::<PhoneLineOp>()?;
            }
            Some(other) => {
                return Err(ProtocolError::BadRequest(format!(
                    "op: expected a string, found {}",
                    crate::phone_line::json_path::type_words(other)
                )))
            }
            None => return Err(ProtocolError::BadRequest("op: missing".into())),
        }
        let call_id = match map.shift_remove("callId") {
            None => None,
            Some(Value::String(s)) => Some(s),
            Some(other) => {
                return Err(ProtocolError::BadRequest(format!(
                    "callId: expected a string, found {}",
                    crate::phone_line::json_path::type_words(&other)
                )))
            }
        };
        let body = serde_json::from_value(Value::Object(map))
            .map_err(|e| ProtocolError::BadRequest(e.to_string()))?;
        Ok(Self { body, call_id })
    }

    /// The request as JSON: `op` first, then its fields, then `callId` when set.
    pub fn to_value(&self) -> Value {
        let mut value = serde_json::to_value(&self.body).unwrap_or(Value::Null);
        if let (Value::Object(map), Some(id)) = (&mut value, &self.call_id) {
            map.insert("callId".into(), Value::String(id.clone()));
        }
        value
    }
}
