//! The phone-line event types: what a paired phone mirrors to the desktop, as ifp/1 `event.*`
//! messages.
//!
//! Why: the desktop mirrors the phone's phone-line settings, its dials, the bridge failures it
//! sees outside a dial and its autonomy per runtime session. Carried as ifp/1 events, they get
//! provenance, consent and retention labels, and `seq`/`dedup` (`ifp1-notes.md`, "Envelope",
//! "Events: dedup, generation fence, ordering"), so a replay after a reconnect is recognised and
//! never counted twice. The payload shapes are Switchboard's own (ifp/1 does not pin them) and are
//! documented field by field in `docs/protocol.md`, "Phone-line events"; the phone-line terms come
//! from `phone-line.md` ("Discovery and pairing", "Operations", "Failure modes and the bridge
//! banner") and autonomy from `openphone-runtime-protocol.md`, "Autonomy".
//!
//! | type | payload (besides `seq`, `dedup`) | typed as |
//! | --- | --- | --- |
//! | [`SETTINGS_EVENT`] `event.phoneline.settings` | `registry`, `pairings`, `lines[]` | [`PhoneSettings`] |
//! | [`DIAL_EVENT`] `event.phoneline.dial` | `call_id, caller, callee, endpoint, op, request, started_at, duration_ms, outcome, response?, error?` | [`DialEvent`] |
//! | [`BRIDGE_EVENT`] `event.bridge.status` | `source, caller, endpoint, outcome, error?` | [`BridgeEvent`] |
//! | [`AUTONOMY_EVENT`] `event.runtime.autonomy` | `autonomy` (for the envelope's `session`) | [`AutonomyEvent`] |
//!
//! Action proposals are not events: they travel as the ifp/1 `action.*` messages the phone saw,
//! forwarded unchanged (see the app's hub, `switchboard_app::hub`, a layer above this crate).
//!
//! [`PhoneEvent::from_envelope`] types a validated [`Envelope`]; a payload that does not fit gives
//! a [`PhoneEventError`] naming the event type and the payload field (`payload.lines[1].permissions`).

use serde::Deserialize;
use serde_json::{Map, Value};

mod dial_frame;
pub use dial_frame::{DialFrame, FrameId, SharedStrings};

mod bridge_event;
mod dial_event;
mod settings;

pub use bridge_event::{BridgeEvent, BridgeOutcome, BridgeSource};
pub use dial_event::{timestamp_ms, DialEvent};
pub use settings::{LastDescribe, LineSettings, PhoneSettings};

use crate::runtime::autonomy::Autonomy;
use switchboard_wire::ifp::Envelope;

/// `event.phoneline.settings`: a full snapshot of the phone's phone-line settings.
pub const SETTINGS_EVENT: &str = "event.phoneline.settings";
/// `event.phoneline.dial`: one dial (phone-line call) the phone saw.
pub const DIAL_EVENT: &str = "event.phoneline.dial";
/// `event.bridge.status`: a bridge result seen outside a dial (a probe read, a permission change).
pub const BRIDGE_EVENT: &str = "event.bridge.status";
/// `event.runtime.autonomy`: the phone's autonomy setting for one runtime session.
pub const AUTONOMY_EVENT: &str = "event.runtime.autonomy";

/// Every phone-line event type, in the order of `docs/protocol.md`.
pub const PHONE_EVENT_TYPES: [&str; 4] = [SETTINGS_EVENT, DIAL_EVENT, BRIDGE_EVENT, AUTONOMY_EVENT];

/// Why an envelope is not a usable phone event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PhoneEventError {
    /// A payload field is missing or has the wrong shape or value.
    #[error("{event}: {field}: {problem}")]
    Field {
        /// The event type (`event.phoneline.dial`).
        event: String,
        /// The field, as a path from the envelope (`payload.duration_ms`, `payload.lines[0].describe`).
        field: String,
        /// What is wrong, in words.
        problem: String,
    },
    /// The envelope is not one of the [`PHONE_EVENT_TYPES`].
    #[error("{0} is not a phone-line event type")]
    NotPhoneEvent(String),
}

fn field_err(event: &str, field: impl Into<String>, problem: impl Into<String>) -> PhoneEventError {
    PhoneEventError::Field {
        event: event.to_string(),
        field: field.into(),
        problem: problem.into(),
    }
}

/// Deserialises the payload, naming the failing field as `payload.<path>`.
fn typed<T: serde::de::DeserializeOwned>(
    event: &str,
    payload: &Map<String, Value>,
) -> Result<T, PhoneEventError> {
    // Deserialised from the borrowed payload: no copy of the whole payload.
    serde_path_to_error::deserialize::<_, T>(payload).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." || path.is_empty() {
            "payload".to_string()
        } else {
            format!("payload.{path}")
        };
        field_err(event, field, e.into_inner().to_string())
    })
}

/// One typed phone-line event (see the module table).
#[derive(Debug, Clone, PartialEq)]
pub enum PhoneEvent {
    /// `event.phoneline.settings` (boxed: much larger than the others).
    Settings(Box<PhoneSettings>),
    /// `event.phoneline.dial` (boxed: much larger than the others).
    Dial(Box<DialEvent>),
    /// `event.bridge.status`.
    Bridge(BridgeEvent),
    /// `event.runtime.autonomy`.
    Autonomy(AutonomyEvent),
}

impl PhoneEvent {
    /// Types a validated envelope.
    ///
    /// Errors: [`PhoneEventError::NotPhoneEvent`] for any other type (an `event.*` of another
    /// family is valid ifp/1 and simply not ours); [`PhoneEventError::Field`] naming the payload
    /// field that does not fit.
    pub fn from_envelope(env: &Envelope) -> Result<Self, PhoneEventError> {
        match env.r#type.as_str() {
            SETTINGS_EVENT => {
                PhoneSettings::from_payload(&env.payload).map(|s| PhoneEvent::Settings(Box::new(s)))
            }
            DIAL_EVENT => {
                DialEvent::from_payload(&env.payload).map(|d| PhoneEvent::Dial(Box::new(d)))
            }
            BRIDGE_EVENT => BridgeEvent::from_payload(&env.payload).map(PhoneEvent::Bridge),
            AUTONOMY_EVENT => {
                let session = env.session.clone().ok_or_else(|| {
                    field_err(
                        AUTONOMY_EVENT,
                        "session",
                        "missing: autonomy is per runtime session",
                    )
                })?;
                AutonomyEvent::from_payload(session, &env.payload).map(PhoneEvent::Autonomy)
            }
            other => Err(PhoneEventError::NotPhoneEvent(other.to_string())),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Autonomy

/// `event.runtime.autonomy` payload, with the runtime session it is for (the envelope's
/// `session`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutonomyEvent {
    /// The runtime session (`ses_...`).
    pub session: String,
    /// The phone's autonomy for that session.
    pub autonomy: Autonomy,
}

#[derive(Deserialize)]
struct WireAutonomy {
    #[allow(dead_code)]
    seq: u64,
    autonomy: Autonomy,
}

impl AutonomyEvent {
    /// Types an `event.runtime.autonomy` payload for `session`. Errors: `autonomy` missing or not
    /// one of `observe_only`, `ask_before_action`, `trusted_actions`.
    pub fn from_payload(
        session: String,
        payload: &Map<String, Value>,
    ) -> Result<Self, PhoneEventError> {
        let w: WireAutonomy = typed(AUTONOMY_EVENT, payload)?;
        Ok(AutonomyEvent {
            session,
            autonomy: w.autonomy,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::dial::Retention;
    use crate::phone_line::pairing::DescribeOutcome;
    use serde_json::json;

    fn env(kind: &str, payload: Value) -> Envelope {
        let v = json!({
            "ifp": "1", "id": "msg_test000001", "ts": "2026-07-21T01:00:00Z", "type": kind,
            "entity": "ent_phone0001", "session": "ses_mirror0001", "device": "dev_phone0001",
            "generation": 1,
            "provenance": {"sensor": "dev_phone0001:phoneline", "captured_at": "2026-07-21T01:00:00Z"},
            "labels": {"consent": "product_operation", "retention": "standard"},
            "payload": payload,
        });
        switchboard_wire::ifp::validate(&v).unwrap()
    }

    fn dial_payload() -> Value {
        json!({
            "seq": 3, "dedup": "dial_a1", "call_id": "c1", "caller": "lumiagent",
            "callee": "lumirealm", "endpoint": "lumirealm.phoneline", "op": "read_item",
            "request": {"op": "read_item", "surface": "module_envelope", "id": "m1"},
            "started_at": "2026-07-21T01:00:00.250Z", "duration_ms": 1200, "outcome": "ok",
            "response": {"item": {"id": "m1"}}
        })
    }

    #[test]
    fn dial_event_becomes_a_dial_record() {
        let e = PhoneEvent::from_envelope(&env(DIAL_EVENT, dial_payload())).unwrap();
        let PhoneEvent::Dial(d) = e else {
            panic!("not a dial")
        };
        let rec = d.to_dial("dev_phone0001", "", Retention::Extended);
        assert_eq!(&*rec.id, "dial_a1");
        assert_eq!(&*rec.endpoint, "lumirealm.phoneline");
        assert_eq!(rec.start_ms, 1_784_595_600_250);
        assert!(rec.slow, "1200 ms is slow");
        assert_eq!(rec.retention, Retention::Extended);
        assert_eq!(
            rec.request.as_str(),
            r#"{"op":"read_item","surface":"module_envelope","id":"m1"}"#
        );
    }

    #[test]
    fn dial_errors_name_the_field() {
        let mut p = dial_payload();
        p["duration_ms"] = json!("slow");
        let err = PhoneEvent::from_envelope(&env(DIAL_EVENT, p)).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("event.phoneline.dial: payload.duration_ms:"),
            "{err}"
        );
        let mut p = dial_payload();
        p.as_object_mut().unwrap().remove("caller");
        let err = PhoneEvent::from_envelope(&env(DIAL_EVENT, p))
            .unwrap_err()
            .to_string();
        assert!(err.contains("caller"), "{err}");
        let mut p = dial_payload();
        p["outcome"] = json!("error");
        let err = PhoneEvent::from_envelope(&env(DIAL_EVENT, p))
            .unwrap_err()
            .to_string();
        assert!(err.contains("payload.error: missing"), "{err}");
        let mut p = dial_payload();
        p["outcome"] = json!("exploded");
        let err = PhoneEvent::from_envelope(&env(DIAL_EVENT, p))
            .unwrap_err()
            .to_string();
        assert!(err.contains("payload.outcome"), "{err}");
    }

    #[test]
    fn settings_parse_registry_pairings_and_describes() {
        let manifest: Value = serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/corpus/lumiverse/lumirealm.describe.json"
        )))
        .unwrap();
        let p = json!({
            "seq": 0, "dedup": "settings_1",
            "registry": {"version": 1, "phoneLines": [{"identifier": "lumirealm", "name": "LumiRealm"}]},
            "pairings": {"version": 1, "pairings": {"lumirealm": {"identifier": "lumirealm",
                "displayName": "LumiRealm", "allowed": true, "manifestHash": "abc", "decidedAt": 5}}},
            "lines": [
                {"identifier": "lumirealm", "name": "LumiRealm", "permissions": ["characters"],
                 "describe": {"at": "2026-07-21T01:00:00Z", "status": "answered", "manifest": manifest}},
                {"identifier": "lumiagent", "permissions": ["push_notification"]}
            ]
        });
        let PhoneEvent::Settings(s) =
            PhoneEvent::from_envelope(&env(SETTINGS_EVENT, p.clone())).unwrap()
        else {
            panic!()
        };
        assert_eq!(s.registry.lines().len(), 1);
        assert!(s
            .pairings
            .as_ref()
            .unwrap()
            .get("lumirealm")
            .unwrap()
            .allowed());
        assert!(matches!(
            s.line("lumirealm")
                .unwrap()
                .last_describe
                .as_ref()
                .unwrap()
                .outcome,
            DescribeOutcome::Answered(_)
        ));
        // A record of the wrong shape is read as LumiAgent reads it, not refused.
        let mut odd = p.clone();
        odd["pairings"]["pairings"]["lumirealm"]["allowed"] = json!("yes");
        let PhoneEvent::Settings(s) = PhoneEvent::from_envelope(&env(SETTINGS_EVENT, odd)).unwrap()
        else {
            panic!()
        };
        let rec = s.pairings.as_ref().unwrap().get("lumirealm").unwrap();
        assert!(!rec.is_decision());
        assert!(
            rec.problems()[0].contains("pairings.lumirealm.allowed"),
            "{:?}",
            rec.problems()
        );
        let mut odd = p.clone();
        odd["pairings"]["version"] = json!(2);
        let PhoneEvent::Settings(s) = PhoneEvent::from_envelope(&env(SETTINGS_EVENT, odd)).unwrap()
        else {
            panic!()
        };
        assert_eq!(s.pairings.unwrap().records().count(), 0);
        assert_eq!(
            s.pairings_treated_as_empty.as_deref(),
            Some("its version is 2, not 1")
        );
        let mut bad = p;
        bad["lines"][0]["describe"]["status"] = json!("failed");
        let err = PhoneEvent::from_envelope(&env(SETTINGS_EVENT, bad))
            .unwrap_err()
            .to_string();
        assert!(err.contains("payload.lines[0].describe.error"), "{err}");
    }

    #[test]
    fn autonomy_and_bridge_events() {
        let PhoneEvent::Autonomy(a) = PhoneEvent::from_envelope(&env(
            AUTONOMY_EVENT,
            json!({"seq": 1, "dedup": "a1", "autonomy": "trusted_actions"}),
        ))
        .unwrap() else {
            panic!()
        };
        assert_eq!(a.autonomy, Autonomy::TrustedActions);
        assert_eq!(a.session, "ses_mirror0001");
        let err = PhoneEvent::from_envelope(&env(
            AUTONOMY_EVENT,
            json!({"seq": 1, "dedup": "a1", "autonomy": "yolo"}),
        ))
        .unwrap_err()
        .to_string();
        assert!(err.contains("payload.autonomy"), "{err}");
        let err = PhoneEvent::from_envelope(&env(
            BRIDGE_EVENT,
            json!({"seq": 1, "dedup": "b1", "source": "probe", "caller": "lumirealm",
                   "endpoint": "lumiagent.phoneline_probe", "outcome": "error"}),
        ))
        .unwrap_err()
        .to_string();
        assert!(err.contains("payload.error"), "{err}");
        assert!(matches!(
            PhoneEvent::from_envelope(&env("event.text.message", json!({"seq": 1, "dedup": "x"}))),
            Err(PhoneEventError::NotPhoneEvent(_))
        ));
    }
}
