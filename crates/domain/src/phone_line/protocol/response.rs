//! The responses of the eight ops, one shape an op, read knowing which op was asked (a response
//! does not name its op); unknown fields kept in `extra`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{PhoneLineOp, ProtocolError};
use crate::phone_line::manifest::SurfaceManifest;

/// `system_prompt` response: `{ text: string | null }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemPromptResponse {
    /// The prompt fragment, or `null` for none.
    #[serde(default)]
    pub text: Option<String>,
    /// Fields the protocol does not define, in the order read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `check_write` / `check_read` response: `{ ok: boolean; message?: string }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResponse {
    /// False vetoes the write or read.
    pub ok: bool,
    /// Why, for the user and the agent (e.g. where the authoring layer is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Fields the protocol does not define, in the order read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One item of a `list_items` response: `{ id, label, brief? }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListedItem {
    /// The item's id, as `read_item` / `write_field` take it.
    pub id: String,
    /// Display label.
    pub label: String,
    /// Short description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brief: Option<String>,
    /// Fields the protocol does not define, in the order read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `list_items` response: `{ items: { id, label, brief? }[]; total }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListItemsResponse {
    /// The items.
    pub items: Vec<ListedItem>,
    /// How many items there are in all.
    pub total: u64,
    /// Fields the protocol does not define, in the order read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `read_item` response: `{ value: unknown; meta?: object }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadItemResponse {
    /// The item or field's value (any JSON; absent reads as `null`).
    #[serde(default)]
    pub value: Value,
    /// Extra information about the value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Fields the protocol does not define, in the order read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `write_field` response: `{ ok: boolean; error?: string }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WriteFieldResponse {
    /// Whether the write happened.
    pub ok: bool,
    /// Why not, shown to the user and the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Fields the protocol does not define, in the order read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One hit of a `grep_items` response: `{ itemId, itemLabel?, fieldPath, line, match, preview }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrepHit {
    /// The item the hit is in.
    pub item_id: String,
    /// The item's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_label: Option<String>,
    /// The path of the string leaf inside the item.
    pub field_path: String,
    /// The line number inside the leaf's text.
    pub line: u64,
    /// The matched text.
    #[serde(rename = "match")]
    pub matched: String,
    /// Context around the match.
    pub preview: String,
    /// Fields the protocol does not define, in the order read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `grep_items` response: `{ hits: GrepHit[]; truncated }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrepItemsResponse {
    /// The hits.
    pub hits: Vec<GrepHit>,
    /// True when more hits exist than were returned.
    pub truncated: bool,
    /// Fields the protocol does not define, in the order read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A response, read according to the op it answers.
#[derive(Debug, Clone, PartialEq)]
pub enum PhoneLineResponse {
    /// `describe` → SurfaceManifest.
    Describe(Box<SurfaceManifest>),
    /// `system_prompt` → `{ text }`.
    SystemPrompt(SystemPromptResponse),
    /// `check_write` → `{ ok, message? }`.
    CheckWrite(CheckResponse),
    /// `check_read` → `{ ok, message? }`.
    CheckRead(CheckResponse),
    /// `list_items` → `{ items, total }`.
    ListItems(ListItemsResponse),
    /// `read_item` → `{ value, meta? }`.
    ReadItem(ReadItemResponse),
    /// `write_field` → `{ ok, error? }`.
    WriteField(WriteFieldResponse),
    /// `grep_items` → `{ hits, truncated }`.
    GrepItems(GrepItemsResponse),
}

impl PhoneLineResponse {
    /// Reads `value` as the response to `op`. Errors with [`ProtocolError::BadResponse`] naming
    /// the op and the missing or mistyped field.
    pub fn from_value(op: PhoneLineOp, value: Value) -> Result<Self, ProtocolError> {
        fn read<T: serde::de::DeserializeOwned>(
            op: PhoneLineOp,
            value: Value,
        ) -> Result<T, ProtocolError> {
            serde_json::from_value(value).map_err(|e| ProtocolError::BadResponse {
                op,
                message: e.to_string(),
            })
        }
        Ok(match op {
            PhoneLineOp::Describe => PhoneLineResponse::Describe(Box::new(
                SurfaceManifest::from_value(value).map_err(|e| ProtocolError::BadResponse {
                    op,
                    message: e.to_string(),
                })?,
            )),
            PhoneLineOp::SystemPrompt => PhoneLineResponse::SystemPrompt(read(op, value)?),
            PhoneLineOp::CheckWrite => PhoneLineResponse::CheckWrite(read(op, value)?),
            PhoneLineOp::CheckRead => PhoneLineResponse::CheckRead(read(op, value)?),
            PhoneLineOp::ListItems => PhoneLineResponse::ListItems(read(op, value)?),
            PhoneLineOp::ReadItem => PhoneLineResponse::ReadItem(read(op, value)?),
            PhoneLineOp::WriteField => PhoneLineResponse::WriteField(read(op, value)?),
            PhoneLineOp::GrepItems => PhoneLineResponse::GrepItems(read(op, value)?),
        })
    }
}
