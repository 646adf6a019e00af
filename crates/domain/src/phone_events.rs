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
//! forwarded unchanged (see [`switchboard_app::hub`]).
//!
//! [`PhoneEvent::from_envelope`] types a validated [`Envelope`]; a payload that does not fit gives
//! a [`PhoneEventError`] naming the event type and the payload field (`payload.lines[1].permissions`).

use serde::Deserialize;
use serde_json::{Map, Value};

mod dial_frame;
pub use dial_frame::{DialFrame, SharedStrings};

use crate::dial::{Dial, DialOutcome, JsonText, Retention};
use crate::phone_line::pairing::DescribeOutcome;
use crate::phone_line::pairings::{read_as_lumiagent, LumiAgentRead, PairingsFile};
use crate::phone_line::registry::PhoneLineRegistry;
use crate::runtime::autonomy::Autonomy;
use switchboard_wire::ifp::{Envelope, Timestamp};

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
// Settings

/// One extension the phone knows: its declared permissions and, for a phone line, its last
/// describe (`docs/protocol.md`, "event.phoneline.settings").
#[derive(Debug, Clone, PartialEq)]
pub struct LineSettings {
    /// The host-attested extension id (`lumirealm`).
    pub identifier: String,
    /// The name its `spindle.json` declares (`LumiRealm`), when the phone knows it.
    pub name: Option<String>,
    /// The permissions its `spindle.json` declares (`permissions`), in manifest order; `None`
    /// when the phone does not know them. Used to judge which missing permissions a banner may
    /// ask for (unknown: all are treated as grantable, unchecked).
    pub permissions: Option<Vec<String>>,
    /// The outcome of its last `describe`, when it was dialed.
    pub last_describe: Option<LastDescribe>,
}

/// The last `describe` of a phone line.
#[derive(Debug, Clone, PartialEq)]
pub struct LastDescribe {
    /// When the describe ended.
    pub at: Timestamp,
    /// What it gave: the manifest JSON it answered, or the error text.
    pub outcome: DescribeOutcome,
}

/// `event.phoneline.settings` payload: the phone's phone-line settings.
#[derive(Debug, Clone, PartialEq)]
pub struct PhoneSettings {
    /// The registry of known phone lines (the settings file `{version: 1, phoneLines: [...]}`).
    pub registry: PhoneLineRegistry,
    /// The pairing records: the `phoneline-pairings.json` content read as LumiAgent reads it
    /// ([`read_as_lumiagent`]: records of the wrong shape kept with their problems, never
    /// refused); `None` when the phone has no such file yet; empty when LumiAgent treats the
    /// content as empty.
    pub pairings: Option<PairingsFile>,
    /// Why LumiAgent treats the phone's pairings content as empty (`its version is 2, not 1`);
    /// `None` when it reads its records (or there are none).
    pub pairings_treated_as_empty: Option<String>,
    /// Every extension the phone knows, phone lines and callers alike.
    pub lines: Vec<LineSettings>,
}

#[derive(Deserialize)]
struct WireSettings {
    registry: Value,
    #[serde(default)]
    pairings: Option<Value>,
    lines: Vec<WireLine>,
}

#[derive(Deserialize)]
struct WireLine {
    identifier: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    permissions: Option<Vec<String>>,
    #[serde(default)]
    describe: Option<WireDescribe>,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum DescribeStatus {
    Answered,
    Failed,
}

#[derive(Deserialize)]
struct WireDescribe {
    at: Timestamp,
    status: DescribeStatus,
    #[serde(default)]
    manifest: Option<Value>,
    #[serde(default)]
    error: Option<String>,
}

impl PhoneSettings {
    /// Types an `event.phoneline.settings` payload. Errors name the field
    /// (`payload.registry.phoneLines`, `payload.lines[0].describe.manifest`). The `pairings`
    /// content is never refused for its shape: it is read as LumiAgent reads its file.
    pub fn from_payload(payload: &Map<String, Value>) -> Result<Self, PhoneEventError> {
        let ev = SETTINGS_EVENT;
        let wire: WireSettings = typed(ev, payload)?;
        let registry = PhoneLineRegistry::parse(&wire.registry.to_string())
            .map_err(|e| field_err(ev, "payload.registry", e.to_string()))?;
        // Read as LumiAgent reads its file (upstream-behaviour.md): never refused for its shape.
        let (pairings, pairings_treated_as_empty) = match wire.pairings {
            None | Some(Value::Null) => (None, None),
            Some(v) => match read_as_lumiagent(&v.to_string())
                .map_err(|e| field_err(ev, "payload.pairings", e.to_string()))?
            {
                LumiAgentRead::Records(file) => (Some(file), None),
                LumiAgentRead::TreatedAsEmpty { reason } => {
                    (Some(PairingsFile::new()), Some(reason))
                }
            },
        };
        let mut lines = Vec::with_capacity(wire.lines.len());
        for (i, l) in wire.lines.into_iter().enumerate() {
            if l.identifier.trim().is_empty() {
                return Err(field_err(
                    ev,
                    format!("payload.lines[{i}].identifier"),
                    "empty: name the extension id",
                ));
            }
            let last_describe = match l.describe {
                None => None,
                Some(d) => {
                    let at = format!("payload.lines[{i}].describe");
                    let outcome = match d.status {
                        DescribeStatus::Answered => DescribeOutcome::Answered(d.manifest.ok_or_else(
                            || field_err(ev, format!("{at}.manifest"), "missing: an answered describe carries the manifest it answered"),
                        )?),
                        DescribeStatus::Failed => {
                            let text = d.error.filter(|t| !t.trim().is_empty()).ok_or_else(|| {
                                field_err(ev, format!("{at}.error"), "missing: a failed describe carries the error text")
                            })?;
                            DescribeOutcome::Failed(text)
                        }
                    };
                    Some(LastDescribe { at: d.at, outcome })
                }
            };
            lines.push(LineSettings {
                identifier: l.identifier,
                name: l.name,
                permissions: l.permissions,
                last_describe,
            });
        }
        Ok(PhoneSettings {
            registry,
            pairings,
            pairings_treated_as_empty,
            lines,
        })
    }

    /// The line with this extension id, if listed.
    pub fn line(&self, identifier: &str) -> Option<&LineSettings> {
        self.lines.iter().find(|l| l.identifier == identifier)
    }
}

// ---------------------------------------------------------------------------------------------
// Dial

/// `event.phoneline.dial` payload: one dial as the phone saw it (`phone-line.md`, "Operations",
/// "Request and response shapes").
#[derive(Debug, Clone, PartialEq)]
pub struct DialEvent {
    /// The event's `dedup` key; becomes the dial id.
    pub dedup: String,
    /// The event's `seq`.
    pub seq: u64,
    /// The request's `callId` (empty when the caller sent none).
    pub call_id: String,
    /// The caller's extension id (the requester, e.g. `lumiagent`).
    pub caller: String,
    /// The callee's extension id (the owner, e.g. `lumirealm`).
    pub callee: String,
    /// The endpoint dialed (`lumirealm.phoneline`).
    pub endpoint: String,
    /// The op (`describe`, `list_items`, `read_item`, `grep_items`, ...).
    pub op: String,
    /// The request as sent.
    pub request: Value,
    /// When the dial started.
    pub started_at: Timestamp,
    /// How long it took, in milliseconds.
    pub duration_ms: u64,
    /// How it ended.
    pub outcome: DialOutcome,
    /// The handler's response, when it answered.
    pub response: Option<Value>,
    /// The error text (required for `error` and `timed_out`).
    pub error: Option<String>,
}

#[derive(Deserialize)]
struct WireDial {
    seq: u64,
    dedup: String,
    #[serde(default)]
    call_id: String,
    caller: String,
    callee: String,
    endpoint: String,
    op: String,
    request: Value,
    started_at: Timestamp,
    duration_ms: u64,
    outcome: DialOutcome,
    #[serde(default)]
    response: Option<Value>,
    #[serde(default)]
    error: Option<String>,
}

impl DialEvent {
    /// Types an `event.phoneline.dial` payload.
    ///
    /// Errors: a missing or mistyped field (named); an empty `caller`, `callee`, `endpoint` or
    /// `op`; `outcome` `error` or `timed_out` without an `error` text.
    pub fn from_payload(payload: &Map<String, Value>) -> Result<Self, PhoneEventError> {
        let ev = DIAL_EVENT;
        let w: WireDial = typed(ev, payload)?;
        for (name, v) in [
            ("caller", &w.caller),
            ("callee", &w.callee),
            ("endpoint", &w.endpoint),
            ("op", &w.op),
        ] {
            if v.trim().is_empty() {
                return Err(field_err(ev, format!("payload.{name}"), "empty"));
            }
        }
        let error = w.error.filter(|e| !e.is_empty());
        if matches!(w.outcome, DialOutcome::Error | DialOutcome::TimedOut) && error.is_none() {
            return Err(field_err(
                ev,
                "payload.error",
                format!(
                    "missing: a dial with outcome {} carries its error text",
                    w.outcome.as_str()
                ),
            ));
        }
        Ok(DialEvent {
            dedup: w.dedup,
            seq: w.seq,
            call_id: w.call_id,
            caller: w.caller,
            callee: w.callee,
            endpoint: w.endpoint,
            op: w.op,
            request: w.request,
            started_at: w.started_at,
            duration_ms: w.duration_ms,
            outcome: w.outcome,
            response: w.response,
            error,
        })
    }

    /// The start time in epoch milliseconds.
    pub fn start_ms(&self) -> i64 {
        timestamp_ms(&self.started_at)
    }

    /// The [`Dial`] record for the dial log: id = `dedup`, `phone` = the reporting phone's device
    /// id, `session` = the envelope's `session` (`""` when none), `retention` = the event's
    /// `labels.retention`.
    pub fn to_dial(&self, phone: &str, session: &str, retention: Retention) -> Dial {
        let mut d = Dial {
            id: self.dedup.as_str().into(),
            phone: phone.into(),
            call_id: self.call_id.as_str().into(),
            caller: self.caller.as_str().into(),
            callee: self.callee.as_str().into(),
            endpoint: self.endpoint.as_str().into(),
            op: self.op.as_str().into(),
            request: JsonText::from_value(&self.request),
            start_ms: self.start_ms(),
            duration_ms: self.duration_ms,
            outcome: self.outcome,
            response: self.response.as_ref().map(JsonText::from_value),
            error: self.error.as_deref().map(Into::into),
            retention,
            slow: false,
            spec: Default::default(),
            session: session.into(),
            seq: Default::default(),
        };
        d.normalise();
        d
    }

    /// Whether the dial failed in a way the bridge status judges (`error` or `timed_out`).
    pub fn failed(&self) -> bool {
        matches!(self.outcome, DialOutcome::Error | DialOutcome::TimedOut)
    }
}

/// Epoch milliseconds of an ifp/1 timestamp (sub-millisecond digits dropped).
pub fn timestamp_ms(t: &Timestamp) -> i64 {
    epoch_ms(t.unix_seconds(), t.nanos())
}

/// Epoch milliseconds of `(unix seconds, nanoseconds)` (sub-millisecond digits dropped).
fn epoch_ms(unix_seconds: i64, nanos: u32) -> i64 {
    unix_seconds
        .saturating_mul(1000)
        .saturating_add(i64::from(nanos / 1_000_000))
}

// ---------------------------------------------------------------------------------------------
// Bridge

/// Where a bridge result outside a dial came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BridgeSource {
    /// The caller's probe read (`lumiagent.phoneline_probe`, `lumiagent.phoneline_request`).
    Probe,
    /// The person changed an extension's permissions.
    PermissionChange,
}

/// Whether the bridge call worked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BridgeOutcome {
    /// It worked: clears the path's banner.
    Ok,
    /// It failed with `error`: may raise a banner.
    Error,
}

/// `event.bridge.status` payload.
#[derive(Debug, Clone, PartialEq)]
pub struct BridgeEvent {
    /// The event's `dedup` key.
    pub dedup: String,
    /// What produced it.
    pub source: BridgeSource,
    /// The calling extension id (e.g. `lumirealm` reading LumiAgent's probe).
    pub caller: String,
    /// The endpoint called (e.g. `lumiagent.phoneline_probe`).
    pub endpoint: String,
    /// How it went.
    pub outcome: BridgeOutcome,
    /// The error text (required when `outcome` is `error`).
    pub error: Option<String>,
}

#[derive(Deserialize)]
struct WireBridge {
    #[allow(dead_code)]
    seq: u64,
    dedup: String,
    source: BridgeSource,
    caller: String,
    endpoint: String,
    outcome: BridgeOutcome,
    #[serde(default)]
    error: Option<String>,
}

impl BridgeEvent {
    /// Types an `event.bridge.status` payload. Errors: a missing or mistyped field (named), an
    /// empty `endpoint`, `outcome: error` without an `error` text.
    pub fn from_payload(payload: &Map<String, Value>) -> Result<Self, PhoneEventError> {
        let ev = BRIDGE_EVENT;
        let w: WireBridge = typed(ev, payload)?;
        if w.endpoint.trim().is_empty() {
            return Err(field_err(ev, "payload.endpoint", "empty"));
        }
        let error = w.error.filter(|e| !e.is_empty());
        if w.outcome == BridgeOutcome::Error && error.is_none() {
            return Err(field_err(
                ev,
                "payload.error",
                "missing: outcome error carries the error text",
            ));
        }
        Ok(BridgeEvent {
            dedup: w.dedup,
            source: w.source,
            caller: w.caller,
            endpoint: w.endpoint,
            outcome: w.outcome,
            error,
        })
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
