//! Typed payloads of the ifp/1 messages the notes define, and [`IncomingMessage`], the typed view
//! of a validated message.
//!
//! Why: routing, the receiver and the UI read fields by name, not by poking at JSON. Spec:
//! `ifp1-notes.md`, "Envelope" (event `seq`/`dedup`), "Pairing and identity" (`pair.request`,
//! `control.hello`), "Action lifecycle" (`action.*`), "Error classes" (`error`).
//!
//! The action payloads ([`ActionPropose`], [`ActionApprove`], [`ActionReject`], [`ActionResult`],
//! [`ActionCancel`]) and [`IncomingMessage`] are **receive-only**: they implement `Deserialize`
//! but not `Serialize`, and [`crate::ifp::outgoing`] has no variant that carries them. Only the
//! payloads Switchboard itself may send ([`ControlHello`], [`ErrorPayload`], [`Capability`]) are
//! `Serialize`.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use ts_rs::TS;

use super::envelope::{Envelope, Timestamp};
use super::error_class::ErrorClass;
use super::validate::{js_u64, Rejection};

/// One capability: `{type, properties?}` (e.g. `{"type": "tool:messages.send"}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct Capability {
    /// Capability name, e.g. `console` or `tool:messages.send` (non-empty).
    #[serde(rename = "type")]
    pub capability_type: String,
    /// Free-form properties; omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(type = "Record<string, unknown> | null", optional)]
    pub properties: Option<Map<String, Value>>,
}

/// `control.hello` `protocol {min, max}`: inclusive ifp versions, `1 <= min <= max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ProtocolVersions {
    /// Lowest version spoken (>= 1).
    #[serde(deserialize_with = "de_js_u64")]
    pub min: u64,
    /// Highest version spoken (>= `min`).
    #[serde(deserialize_with = "de_js_u64")]
    pub max: u64,
}

/// `control.hello` payload (`ifp1-notes.md`, "Pairing and identity"); both sides send one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ControlHello {
    /// The sender's device id, `^dev_[A-Za-z0-9_]{4,64}$`.
    pub device_id: String,
    /// Unpadded base64url Ed25519 signature over the connection nonce (`x-ifp-nonce`).
    pub proof: String,
    /// What the sender can do.
    pub capabilities: Vec<Capability>,
    /// Versions the sender speaks.
    pub protocol: ProtocolVersions,
}

/// `pair.request` payload (`ifp1-notes.md`, "Pairing and identity"). Receive-only.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PairRequest {
    /// The code the person reads off the other screen (>= 6 characters, e.g. `483-921`).
    pub pairing_code: String,
    /// The requester's Ed25519 public key, unpadded base64url (43 characters, 32 bytes).
    pub public_key: String,
    /// What the requester can do.
    pub capabilities: Vec<Capability>,
    /// Optional human label (`kitchen mac`).
    #[serde(default)]
    pub label: Option<String>,
}

/// `error` payload: `{class, detail?, current_generation?}` (`ifp1-notes.md`, "Error classes").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ErrorPayload {
    /// One of the 14 classes.
    pub class: ErrorClass,
    /// Readable detail; omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub detail: Option<String>,
    /// The receiver's current home generation (with `stale_generation`); omitted when `None`.
    #[serde(
        default,
        deserialize_with = "de_opt_js_u64",
        skip_serializing_if = "Option::is_none"
    )]
    #[ts(optional)]
    pub current_generation: Option<u64>,
}

/// The fields every `event.*` payload carries: `seq` (integer >= 0, per session) and `dedup`
/// (non-empty key; a repeat is acknowledged, not stored).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct EventCommon {
    /// Per-session sequence number.
    #[serde(deserialize_with = "de_js_u64")]
    pub seq: u64,
    /// Deduplication key, e.g. `dev_d100:ses_r10000:0`.
    pub dedup: String,
}

/// `action.propose` `risk`, also the risk of a tool in OpenPhone's commands manifest and ifp/1
/// tool list (`high` = the old `confirmation: always`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum Risk {
    /// Low risk.
    Low,
    /// Medium risk.
    Medium,
    /// High risk (the old `confirmation: always`).
    High,
}

impl std::fmt::Display for Risk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Risk {
    /// Parses `low`, `medium` or `high`; anything else is `None`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "low" => Some(Self::Low),
            "medium" => Some(Self::Medium),
            "high" => Some(Self::High),
            _ => None,
        }
    }

    /// The wire name (`low`, `medium`, `high`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

/// `action.propose` payload (runtime to surface). Receive-only.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ActionPropose {
    /// The action's id (key of the lifecycle).
    pub action_id: String,
    /// Tool name, e.g. `messages.send`.
    pub tool: String,
    /// The tool's parameters.
    pub params: Map<String, Value>,
    /// `sha256:` + hex of the canonical JSON of `params` (see [`crate::ifp::params_hash()`]).
    pub params_hash: String,
    /// How risky the action is.
    pub risk: Risk,
    /// Key that makes execution idempotent.
    pub idempotency_key: String,
    /// After this instant an approval expires the action.
    pub expires_at: Timestamp,
    /// Why the runtime proposes it, for the person.
    #[serde(default)]
    pub reason: Option<String>,
}

/// `action.approve` `confirmation.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfirmationMode {
    /// The person confirmed on the surface.
    UserConfirmed,
    /// The surface's own policy approved (the old `trusted_actions`).
    PolicyAuto,
}

/// `action.approve` `confirmation {mode, ref}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Confirmation {
    /// How the approval was given.
    pub mode: ConfirmationMode,
    /// The surface's audit reference, if any.
    #[serde(rename = "ref", default)]
    pub reference: Option<String>,
}

/// `action.approve` payload (surface only). Receive-only: Switchboard never sends it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ActionApprove {
    /// The approved action.
    pub action_id: String,
    /// Must equal the proposal's `params_hash` (else `binding_mismatch`).
    pub params_hash: String,
    /// How it was confirmed.
    pub confirmation: Confirmation,
}

/// `action.reject` `reason_class`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RejectReasonClass {
    /// The surface lacks a needed capability.
    CapabilityMissing,
    /// The surface's policy refused.
    PolicyDenied,
    /// The person refused.
    UserDenied,
    /// It expired before a decision.
    Expired,
    /// Any other reason.
    Other,
}

/// `action.reject` payload (surface only; terminal). Receive-only: Switchboard never sends it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ActionReject {
    /// The rejected action.
    pub action_id: String,
    /// Why.
    pub reason_class: RejectReasonClass,
}

/// `action.result` `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultStatus {
    /// The action ran.
    Executed,
    /// The action was attempted and failed.
    Failed,
}

/// `action.result` payload. Receive-only.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ActionResult {
    /// The action.
    pub action_id: String,
    /// Outcome.
    pub status: ResultStatus,
    /// Class of the failure, if any.
    #[serde(default)]
    pub error_class: Option<ErrorClass>,
}

/// `action.cancel` payload. Receive-only: Switchboard never sends it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ActionCancel {
    /// The cancelled action.
    pub action_id: String,
}

/// An incoming `action.*` message, typed. Receive-only (no `Serialize`).
#[derive(Debug, Clone, PartialEq)]
pub enum IncomingAction {
    /// `action.propose`.
    Propose(ActionPropose),
    /// `action.approve`.
    Approve(ActionApprove),
    /// `action.reject`.
    Reject(ActionReject),
    /// `action.result`.
    Result(ActionResult),
    /// `action.cancel`.
    Cancel(ActionCancel),
}

impl IncomingAction {
    /// The `action_id` the message is about.
    pub fn action_id(&self) -> &str {
        match self {
            IncomingAction::Propose(p) => &p.action_id,
            IncomingAction::Approve(a) => &a.action_id,
            IncomingAction::Reject(r) => &r.action_id,
            IncomingAction::Result(r) => &r.action_id,
            IncomingAction::Cancel(c) => &c.action_id,
        }
    }
}

/// A validated message's payload, typed by its `type`. Receive-only (no `Serialize`).
#[derive(Debug, Clone, PartialEq)]
pub enum IncomingMessage {
    /// Any `event.*`: the common fields; the rest stays in [`Envelope::payload`].
    Event(EventCommon),
    /// `pair.request`.
    PairRequest(PairRequest),
    /// `pair.complete` (shape not pinned by the notes: read [`Envelope::payload`]).
    PairComplete,
    /// `control.hello`.
    Hello(ControlHello),
    /// `control.ping`.
    Ping,
    /// `control.pong`.
    Pong,
    /// `action.propose`, `action.approve`, `action.reject`, `action.result`, `action.cancel`.
    Action(IncomingAction),
    /// `error`.
    Error(ErrorPayload),
    /// Any other type: valid, ignored by routing (the notes: unknown types are never rejected).
    Other,
}

impl IncomingMessage {
    /// Types the payload of a validated envelope.
    ///
    /// Errors: `invalid_envelope` naming the payload if it does not fit its type; cannot happen
    /// for an envelope produced by [`crate::ifp::validate()`], whose rules are stricter.
    pub fn from_envelope(env: &Envelope) -> Result<Self, Rejection> {
        fn typed<T: serde::de::DeserializeOwned>(env: &Envelope) -> Result<T, Rejection> {
            // Deserialised from the borrowed payload: no copy of the whole payload.
            T::deserialize(&env.payload).map_err(|e| {
                Rejection::invalid(format!("payload: does not fit {}: {e}", env.r#type))
            })
        }
        if env.is_event() {
            return Ok(IncomingMessage::Event(typed(env)?));
        }
        Ok(match env.r#type.as_str() {
            "pair.request" => IncomingMessage::PairRequest(typed(env)?),
            "pair.complete" => IncomingMessage::PairComplete,
            "control.hello" => IncomingMessage::Hello(typed(env)?),
            "control.ping" => IncomingMessage::Ping,
            "control.pong" => IncomingMessage::Pong,
            "action.propose" => IncomingMessage::Action(IncomingAction::Propose(typed(env)?)),
            "action.approve" => IncomingMessage::Action(IncomingAction::Approve(typed(env)?)),
            "action.reject" => IncomingMessage::Action(IncomingAction::Reject(typed(env)?)),
            "action.result" => IncomingMessage::Action(IncomingAction::Result(typed(env)?)),
            "action.cancel" => IncomingMessage::Action(IncomingAction::Cancel(typed(env)?)),
            "error" => IncomingMessage::Error(typed(env)?),
            _ => IncomingMessage::Other,
        })
    }
}

fn de_js_u64<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let v = Value::deserialize(d)?;
    js_u64(&v).ok_or_else(|| serde::de::Error::custom(format!("expected an integer >= 0, got {v}")))
}

fn de_opt_js_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let v = Value::deserialize(d)?;
    if v.is_null() {
        return Ok(None);
    }
    js_u64(&v)
        .map(Some)
        .ok_or_else(|| serde::de::Error::custom(format!("expected an integer >= 0, got {v}")))
}
