//! `event.phoneline.dial`: one dial as the phone saw it, typed from the payload and turned into
//! the desktop's [`Dial`] record (`docs/protocol.md`, "event.phoneline.dial").

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{field_err, typed, PhoneEventError, DIAL_EVENT};
use crate::dial::{Dial, DialOutcome, JsonText, Retention};
use switchboard_wire::ifp::Timestamp;

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
            arrived: Default::default(),
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
pub(super) fn epoch_ms(unix_seconds: i64, nanos: u32) -> i64 {
    unix_seconds
        .saturating_mul(1000)
        .saturating_add(i64::from(nanos / 1_000_000))
}
