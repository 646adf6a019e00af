//! The messages Switchboard (the desktop) may send, and the only way to turn them into frames.
//!
//! Why: THE CENTRAL PROMISE. Nothing in Switchboard can approve, reject or cancel an action on
//! the phone; confirmation is local to the surface (`ifp1-notes.md`, "Action lifecycle
//! (confirmation is local to the surface)"). This module makes that a property of the types:
//!
//! - [`OutgoingMessage`] has no variant for `action.approve`, `action.reject`, `action.cancel`
//!   (nor any other `action.*`), and its [`OutgoingType`] list is closed.
//! - An [`OutgoingFrame`] (the bytes a link may write) has private fields: the only constructor is
//!   [`OutgoingMessage::to_frame`]. A link's send API takes an `OutgoingFrame`, so no other bytes
//!   reach the wire through it.
//! - The incoming action payloads ([`crate::ifp::payload::ActionApprove`], ...) do not implement
//!   `Serialize`, so they cannot be re-encoded and sent back.
//! - [`OutgoingMessage::to_frame`] runs every frame through [`crate::ifp::validate()`] and refuses
//!   any `action.*` type as a last line of defence.
//!
//! There is no approve variant to build:
//!
//! ```compile_fail,E0599
//! use switchboard::ifp::outgoing::OutgoingMessage;
//! let _ = OutgoingMessage::ActionApprove;
//! ```
//!
//! A received approval cannot be serialised into something to send:
//!
//! ```compile_fail,E0277
//! use switchboard::ifp::payload::ActionApprove;
//! fn encode(a: &ActionApprove) -> String {
//!     serde_json::to_string(a).unwrap()
//! }
//! ```
//!
//! And a frame cannot be made from hand-written bytes:
//!
//! ```compile_fail,E0451
//! use switchboard::ifp::outgoing::OutgoingFrame;
//! let _ = OutgoingFrame { text: String::from(r#"{"type":"action.approve"}"#) };
//! ```
//!
//! The closed set of desktop requests ([`DesktopRequestKind`]) is the same: it has no way to say
//! "approve".
//!
//! ```compile_fail,E0599
//! use switchboard::ifp::outgoing::DesktopRequestKind;
//! let _ = DesktopRequestKind::ApproveAction;
//! ```
//!
//! Shapes the notes do not pin (`pair.grant`, `desktop.request`) are Switchboard's choice and
//! documented on their types.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use ts_rs::TS;

use super::envelope::{Timestamp, IFP_VERSION};
use super::error_class::ErrorClass;
use super::payload::{Capability, ControlHello, ErrorPayload};
use super::validate::{validate, Rejection};

/// `desktop.request` `kind`: the closed set of things the desktop may ask the phone for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum DesktopRequestKind {
    /// Ask the phone to revoke one phone line (the `target`).
    RevokePhoneLine,
    /// Ask the phone to forget this desktop's pairing record.
    Unpair,
    /// Ask the phone for a snapshot of its settings (to mirror them).
    RequestSettingsSnapshot,
}

impl DesktopRequestKind {
    /// All kinds.
    pub const ALL: [DesktopRequestKind; 3] = [
        DesktopRequestKind::RevokePhoneLine,
        DesktopRequestKind::Unpair,
        DesktopRequestKind::RequestSettingsSnapshot,
    ];
}

/// `desktop.request` payload (Switchboard's own type, not pinned by ifp/1):
/// `{kind, target?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct DesktopRequest {
    /// What is asked.
    pub kind: DesktopRequestKind,
    /// What it is about (e.g. the phone line's id for `revoke_phone_line`); omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub target: Option<String>,
}

/// `pair.grant` payload (shape not pinned by ifp/1; Switchboard's choice):
/// `{device_id, public_key, challenge, commitment, capabilities, label?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct PairGrant {
    /// The **phone's** device id, the one the requester is paired as,
    /// `^dev_[A-Za-z0-9_]{4,64}$` (the desktop's own id is the envelope's `device`).
    pub device_id: String,
    /// Switchboard's Ed25519 public key, unpadded base64url (43 characters).
    pub public_key: String,
    /// Fresh random challenge the requester signs in `pair.complete`, unpadded base64url.
    pub challenge: String,
    /// The desktop's commitment to the nonce it reveals in `pair.reveal`, unpadded base64url of
    /// 32 bytes ([`switchboard_link::pairing::pairing_commitment`]).
    pub commitment: String,
    /// What Switchboard can do.
    pub capabilities: Vec<Capability>,
    /// Switchboard's human label (e.g. the computer's name); omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub label: Option<String>,
}

/// `pair.reveal` payload (Switchboard's own type): `{nonce}`, the desktop's nonce committed
/// to in `pair.grant`, sent once the phone's `pair.complete` (with its own nonce) verified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct PairReveal {
    /// 32 random bytes, unpadded base64url (43 characters).
    pub nonce: String,
}

/// `pair.done` payload (Switchboard's own type): `{device_id}`, sent when both people
/// confirmed that the verification codes match and the phone's key is pinned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct PairDone {
    /// The phone's device id, as pinned.
    pub device_id: String,
}

/// `control.ack` payload (Switchboard's own type, not pinned by ifp/1): `{last_id, applied}`.
///
/// The desktop's acknowledgement of what it has applied from one phone (`docs/protocol.md`,
/// "Acknowledgement"): every message the phone sent, in send order, up to and including the one
/// whose id is `last_id`, has been applied (or recognised as a replay) and need not be sent
/// again. It confirms nothing on the phone: it is a delivery receipt, not an approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ControlAck {
    /// Id of the last message applied from this phone (`^[a-z]+_[A-Za-z0-9]{6,64}$`).
    pub last_id: String,
    /// How many messages the desktop has applied from this phone since it started (replays
    /// included), for diagnostics.
    pub applied: u64,
}

/// Every message Switchboard may send. There is deliberately no `action.*` variant.
#[derive(Debug, Clone, PartialEq)]
pub enum OutgoingMessage {
    /// `pair.grant`: accept a `pair.request`.
    PairGrant(PairGrant),
    /// `pair.reveal`: the desktop's committed nonce.
    PairReveal(PairReveal),
    /// `pair.done`: both sides confirmed the codes; the phone is paired.
    PairDone(PairDone),
    /// `control.hello`: Switchboard's hello, sent first or in answer to the phone's.
    Hello(ControlHello),
    /// `control.ping` (empty payload).
    Ping,
    /// `control.pong` (empty payload), the answer to a ping.
    Pong,
    /// `error`: Switchboard refused a message (see [`OutgoingMessage::error_for`]).
    Error(ErrorPayload),
    /// `desktop.request`: a request from the closed [`DesktopRequestKind`] set.
    DesktopRequest(DesktopRequest),
    /// `control.ack`: what the desktop has applied from the phone (a delivery receipt).
    Ack(ControlAck),
}

/// The `type` of each [`OutgoingMessage`] variant; the closed list of types Switchboard sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, TS)]
#[ts(export)]
pub enum OutgoingType {
    /// `pair.grant`.
    #[serde(rename = "pair.grant")]
    PairGrant,
    /// `pair.reveal`.
    #[serde(rename = "pair.reveal")]
    PairReveal,
    /// `pair.done`.
    #[serde(rename = "pair.done")]
    PairDone,
    /// `control.hello`.
    #[serde(rename = "control.hello")]
    ControlHello,
    /// `control.ping`.
    #[serde(rename = "control.ping")]
    ControlPing,
    /// `control.pong`.
    #[serde(rename = "control.pong")]
    ControlPong,
    /// `error`.
    #[serde(rename = "error")]
    Error,
    /// `desktop.request`.
    #[serde(rename = "desktop.request")]
    DesktopRequest,
    /// `control.ack`.
    #[serde(rename = "control.ack")]
    ControlAck,
}

impl OutgoingType {
    /// Every type Switchboard can send.
    pub const ALL: [OutgoingType; 9] = [
        OutgoingType::PairGrant,
        OutgoingType::PairReveal,
        OutgoingType::PairDone,
        OutgoingType::ControlHello,
        OutgoingType::ControlPing,
        OutgoingType::ControlPong,
        OutgoingType::Error,
        OutgoingType::DesktopRequest,
        OutgoingType::ControlAck,
    ];

    /// The wire `type` string.
    pub const fn as_str(self) -> &'static str {
        match self {
            OutgoingType::PairGrant => "pair.grant",
            OutgoingType::PairReveal => "pair.reveal",
            OutgoingType::PairDone => "pair.done",
            OutgoingType::ControlHello => "control.hello",
            OutgoingType::ControlPing => "control.ping",
            OutgoingType::ControlPong => "control.pong",
            OutgoingType::Error => "error",
            OutgoingType::DesktopRequest => "desktop.request",
            OutgoingType::ControlAck => "control.ack",
        }
    }
}

/// The envelope fields of a message to send, besides `ifp` (always `"1"`), `type` and
/// `payload` (from the [`OutgoingMessage`]). Checked by the validator in
/// [`OutgoingMessage::to_frame`].
#[derive(Debug, Clone, PartialEq)]
pub struct OutgoingHeader {
    /// Message id, `^[a-z]+_[A-Za-z0-9]{6,64}$`, unique per message.
    pub id: String,
    /// Send time.
    pub ts: Timestamp,
    /// Entity; required except on `control.hello` and `error`.
    pub entity: Option<String>,
    /// Session, `^ses_[A-Za-z0-9]{6,64}$`.
    pub session: Option<String>,
    /// Switchboard's device id, `^dev_[A-Za-z0-9_]{4,64}$`.
    pub device: Option<String>,
    /// Home generation (>= 1).
    pub generation: Option<u64>,
    /// Id of the message answered (e.g. the refused message for an `error`).
    pub parent: Option<String>,
    /// Correlation token.
    pub correlation: Option<String>,
    /// Extensions; every key must start with `x-` (e.g. `x-ifp-nonce`).
    pub ext: Map<String, Value>,
}

impl OutgoingHeader {
    /// A header with only `id` and `ts`; set the other fields directly.
    pub fn new(id: impl Into<String>, ts: Timestamp) -> Self {
        OutgoingHeader {
            id: id.into(),
            ts,
            entity: None,
            session: None,
            device: None,
            generation: None,
            parent: None,
            correlation: None,
            ext: Map::new(),
        }
    }
}

/// One encoded, validated ifp/1 frame ready for the wire (JSON text, UTF-8).
///
/// Only [`OutgoingMessage::to_frame`] makes one, so a link that sends only `OutgoingFrame`s
/// can never send `action.approve`, `action.reject` or `action.cancel`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutgoingFrame {
    text: String,
    message_type: OutgoingType,
}

impl OutgoingFrame {
    /// The frame as JSON text (for a WebSocket text message).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The frame's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.text.as_bytes()
    }

    /// Consumes the frame into its JSON text.
    pub fn into_string(self) -> String {
        self.text
    }

    /// The frame's `type`.
    pub fn message_type(&self) -> OutgoingType {
        self.message_type
    }
}

/// Why an outgoing message could not be framed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum OutgoingError {
    /// The header or payload breaks an ifp/1 rule (e.g. a bad `id`, a missing `entity`).
    #[error("outgoing {message_type} is not a valid ifp/1 message: {rejection}")]
    Invalid {
        /// The type that was being framed.
        message_type: &'static str,
        /// The validator's verdict.
        rejection: Rejection,
    },
    /// The payload could not be encoded as JSON.
    #[error("outgoing {message_type}: payload could not be encoded: {detail}")]
    Encode {
        /// The type that was being framed.
        message_type: &'static str,
        /// The encoder's message.
        detail: String,
    },
    /// The type is an `action.*` type: Switchboard never sends those (the central promise).
    #[error("outgoing {0}: Switchboard never sends action messages")]
    ActionForbidden(&'static str),
}

impl OutgoingMessage {
    /// The message's type.
    pub fn kind(&self) -> OutgoingType {
        match self {
            OutgoingMessage::PairGrant(_) => OutgoingType::PairGrant,
            OutgoingMessage::PairReveal(_) => OutgoingType::PairReveal,
            OutgoingMessage::PairDone(_) => OutgoingType::PairDone,
            OutgoingMessage::Hello(_) => OutgoingType::ControlHello,
            OutgoingMessage::Ping => OutgoingType::ControlPing,
            OutgoingMessage::Pong => OutgoingType::ControlPong,
            OutgoingMessage::Error(_) => OutgoingType::Error,
            OutgoingMessage::DesktopRequest(_) => OutgoingType::DesktopRequest,
            OutgoingMessage::Ack(_) => OutgoingType::ControlAck,
        }
    }

    /// An `error` answering a refused message: its class and reason (as `detail`), plus the
    /// receiver's `current_generation` for `stale_generation`.
    pub fn error_for(rejection: &Rejection, current_generation: Option<u64>) -> Self {
        OutgoingMessage::Error(ErrorPayload {
            class: rejection.class,
            detail: Some(rejection.reason.clone()),
            current_generation: current_generation
                .filter(|_| rejection.class == ErrorClass::StaleGeneration),
        })
    }

    fn payload(&self) -> Result<Value, serde_json::Error> {
        match self {
            OutgoingMessage::PairGrant(p) => serde_json::to_value(p),
            OutgoingMessage::PairReveal(p) => serde_json::to_value(p),
            OutgoingMessage::PairDone(p) => serde_json::to_value(p),
            OutgoingMessage::Hello(h) => serde_json::to_value(h),
            OutgoingMessage::Ping | OutgoingMessage::Pong => Ok(Value::Object(Map::new())),
            OutgoingMessage::Error(e) => serde_json::to_value(e),
            OutgoingMessage::DesktopRequest(d) => serde_json::to_value(d),
            OutgoingMessage::Ack(a) => serde_json::to_value(a),
        }
    }

    /// Encodes the message with `header` into a frame, after checking the result with
    /// [`crate::ifp::validate()`] (so Switchboard never sends what it would itself refuse).
    ///
    /// Field order on the wire: `ifp, id, ts, type, entity, session, device, generation, parent,
    /// correlation, payload, ext` (absent optional fields omitted).
    ///
    /// Errors: [`OutgoingError::Invalid`] when the header or payload breaks a rule,
    /// [`OutgoingError::ActionForbidden`] for an `action.*` type (unreachable by construction).
    pub fn to_frame(&self, header: &OutgoingHeader) -> Result<OutgoingFrame, OutgoingError> {
        let message_type = self.kind().as_str();
        if message_type.starts_with("action.") {
            return Err(OutgoingError::ActionForbidden(message_type));
        }
        let payload = self.payload().map_err(|e| OutgoingError::Encode {
            message_type,
            detail: e.to_string(),
        })?;
        let mut obj = Map::new();
        obj.insert("ifp".into(), Value::from(IFP_VERSION));
        obj.insert("id".into(), Value::from(header.id.clone()));
        obj.insert("ts".into(), Value::from(header.ts.as_str()));
        obj.insert("type".into(), Value::from(message_type));
        let optional = [
            ("entity", header.entity.clone()),
            ("session", header.session.clone()),
            ("device", header.device.clone()),
        ];
        for (key, val) in optional {
            if let Some(v) = val {
                obj.insert(key.into(), Value::from(v));
            }
        }
        if let Some(g) = header.generation {
            obj.insert("generation".into(), Value::from(g));
        }
        for (key, val) in [
            ("parent", header.parent.clone()),
            ("correlation", header.correlation.clone()),
        ] {
            if let Some(v) = val {
                obj.insert(key.into(), Value::from(v));
            }
        }
        obj.insert("payload".into(), payload);
        if !header.ext.is_empty() {
            obj.insert("ext".into(), Value::Object(header.ext.clone()));
        }
        let value = Value::Object(obj);
        validate(&value).map_err(|rejection| OutgoingError::Invalid {
            message_type,
            rejection,
        })?;
        Ok(OutgoingFrame {
            text: crate::js_json::stringify(&value),
            message_type: self.kind(),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::ifp::payload::ProtocolVersions;
    use crate::ifp::validate_frame;

    /// One example of every variant. The exhaustive match makes this fail to compile when a
    /// variant is added without being listed here (and so without being checked below).
    fn examples() -> Vec<OutgoingMessage> {
        let all = vec![
            OutgoingMessage::PairGrant(PairGrant {
                device_id: "dev_phone_01".into(),
                public_key: "JDInBjWvZbYAt-lFQxZbV0jkyDrkejNzq5zA5PJ07UE".into(),
                challenge: "Y2hhbGxlbmdl".into(),
                commitment: "Y29tbWl0bWVudA".into(),
                capabilities: vec![Capability {
                    capability_type: "console".into(),
                    properties: None,
                }],
                label: Some("desk".into()),
            }),
            OutgoingMessage::PairReveal(PairReveal {
                nonce: "bm9uY2U".into(),
            }),
            OutgoingMessage::PairDone(PairDone {
                device_id: "dev_phone_01".into(),
            }),
            OutgoingMessage::Hello(ControlHello {
                device_id: "dev_mac_a1b2".into(),
                proof: "c2lnbmF0dXJl".into(),
                capabilities: vec![],
                protocol: ProtocolVersions { min: 1, max: 1 },
            }),
            OutgoingMessage::Ping,
            OutgoingMessage::Pong,
            OutgoingMessage::Error(ErrorPayload {
                class: ErrorClass::StaleGeneration,
                detail: Some("home moved".into()),
                current_generation: Some(4),
            }),
            OutgoingMessage::DesktopRequest(DesktopRequest {
                kind: DesktopRequestKind::RevokePhoneLine,
                target: Some("pl_1".into()),
            }),
            OutgoingMessage::Ack(ControlAck {
                last_id: "msg_phone00001".into(),
                applied: 1,
            }),
        ];
        for m in &all {
            match m {
                OutgoingMessage::PairGrant(_)
                | OutgoingMessage::PairReveal(_)
                | OutgoingMessage::PairDone(_)
                | OutgoingMessage::Hello(_)
                | OutgoingMessage::Ping
                | OutgoingMessage::Pong
                | OutgoingMessage::Error(_)
                | OutgoingMessage::DesktopRequest(_)
                | OutgoingMessage::Ack(_) => {}
            }
        }
        all
    }

    fn header() -> OutgoingHeader {
        let mut h = OutgoingHeader::new(
            "msg_out000001",
            Timestamp::parse("2026-07-21T00:00:00Z").unwrap(),
        );
        h.entity = Some("ent_abc123".into());
        h
    }

    #[test]
    fn no_outgoing_type_is_an_action_message() {
        for t in OutgoingType::ALL {
            let s = t.as_str();
            assert!(
                !matches!(s, "action.approve" | "action.reject" | "action.cancel"),
                "{s}"
            );
            assert!(!s.starts_with("action."), "{s}");
            assert_eq!(serde_json::to_value(t).unwrap(), Value::from(s));
        }
        let kinds: Vec<OutgoingType> = examples().iter().map(OutgoingMessage::kind).collect();
        assert_eq!(
            kinds,
            OutgoingType::ALL.to_vec(),
            "every type has a variant"
        );
    }

    #[test]
    fn every_variant_frames_into_a_message_the_validator_accepts() {
        for m in examples() {
            let frame = m.to_frame(&header()).unwrap();
            let env = validate_frame(frame.as_bytes()).unwrap();
            assert_eq!(env.r#type, m.kind().as_str());
            assert_eq!(frame.message_type(), m.kind());
            assert!(!env.r#type.starts_with("action."));
        }
    }

    #[test]
    fn invalid_headers_are_refused_not_sent() {
        let mut h = header();
        h.id = "bad id".into();
        let err = OutgoingMessage::Ping.to_frame(&h).unwrap_err();
        assert!(
            matches!(err, OutgoingError::Invalid { ref rejection, .. } if rejection.reason.starts_with("id:"))
        );
        let mut h = header();
        h.entity = None;
        assert!(OutgoingMessage::Ping.to_frame(&h).is_err());
        // control.hello and error may go without an entity.
        let err = OutgoingMessage::error_for(&Rejection::invalid("x"), None);
        assert!(err.to_frame(&h).is_ok());
        let mut h = header();
        h.ext.insert("vendor".into(), Value::from(1));
        assert!(OutgoingMessage::Pong.to_frame(&h).is_err());
    }

    #[test]
    fn error_for_carries_current_generation_only_when_stale() {
        let stale = Rejection::new(ErrorClass::StaleGeneration, "generation 2 < 3");
        let m = OutgoingMessage::error_for(&stale, Some(3));
        let text = m.to_frame(&header()).unwrap().into_string();
        assert!(text.contains("\"current_generation\":3"), "{text}");
        let m = OutgoingMessage::error_for(&Rejection::invalid("bad"), Some(3));
        let text = m.to_frame(&header()).unwrap().into_string();
        assert!(!text.contains("current_generation"), "{text}");
    }
}
