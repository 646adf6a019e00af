//! One-pass reading of `event.phoneline.dial` frames, the one message a phone sends by the
//! thousand.
//!
//! The general path validates a frame into an [`crate::ifp::Envelope`] (a `serde_json::Value`
//! tree), applies the receiver rules to it, types the payload ([`super::DialEvent`]) and re-writes
//! the request and response as compact text ([`crate::dials::JsonText`]). For a dial that is four
//! passes over the request and response and an allocation per JSON node. [`DialFrame::parse`]
//! reads the same frame once, straight into the envelope fields the receiver needs and the
//! [`Dial`] record, keeping the request and response as the text they arrived as when that text
//! is already compact ([`crate::js_json::is_stringify_form`]).
//!
//! It is a shortcut, never a second set of rules: it accepts a frame only when every rule of the
//! general path holds (`ifp1-notes.md`, "Envelope"; the event rules; [`super::DialEvent`]'s
//! payload rules) and it produces the same record; anything else, including anything merely
//! unusual (an `ext` object, a `parent`, an escaped id, a repeated key, a provenance chain), gives
//! `None` and the frame takes the general path, which accepts it or names what is wrong. The
//! tests in `tests/dial_frame.rs` hold it to that: for every frame they make, `parse` either
//! declines or agrees with the general path field for field.

use std::borrow::Cow;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{timestamp_ms, DIAL_EVENT};
use crate::dials::{Dial, DialOutcome, JsonText, Retention};
use crate::ifp::envelope::{Consent, IFP_VERSION};
use crate::ifp::validate::{is_device, is_entity, is_message_id, is_session};
use crate::ifp::Timestamp;

/// A validated `event.phoneline.dial` frame: what the receiver rules and the hub need of the
/// envelope, and the dial as the dial log keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct DialFrame {
    /// The envelope `id` (`msg_...`), acknowledged to the phone once applied.
    pub id: String,
    /// The envelope `session` (`ses_...`): the scope of `seq` and `dedup`.
    pub session: String,
    /// The envelope `generation` (>= 1), checked against the home generation.
    pub generation: u64,
    /// The payload `seq`.
    pub seq: u64,
    /// The dial: `id` = the payload `dedup`, `phone` = the connection's device id, `retention` =
    /// `labels.retention`, `slow` derived.
    pub dial: Dial,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WireFrame<'a> {
    #[serde(borrow)]
    ifp: &'a str,
    #[serde(borrow)]
    id: &'a str,
    #[serde(borrow)]
    ts: &'a str,
    #[serde(borrow, rename = "type")]
    kind: &'a str,
    #[serde(borrow)]
    entity: &'a str,
    #[serde(borrow)]
    session: &'a str,
    #[serde(borrow, default)]
    device: Option<&'a str>,
    generation: u64,
    #[serde(borrow)]
    provenance: WireProvenance<'a>,
    #[serde(borrow)]
    labels: WireLabels<'a>,
    #[serde(borrow)]
    payload: WirePayload<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WireProvenance<'a> {
    #[serde(borrow)]
    sensor: Cow<'a, str>,
    #[serde(borrow)]
    captured_at: &'a str,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WireLabels<'a> {
    #[serde(borrow)]
    consent: &'a str,
    #[serde(borrow)]
    retention: &'a str,
}

/// The payload as [`super::DialEvent`] reads it (unknown keys ignored, `call_id` defaulting to
/// empty, `response` and `error` optional).
#[derive(Deserialize)]
struct WirePayload<'a> {
    seq: u64,
    #[serde(borrow)]
    dedup: Cow<'a, str>,
    #[serde(borrow, default)]
    call_id: Cow<'a, str>,
    #[serde(borrow)]
    caller: Cow<'a, str>,
    #[serde(borrow)]
    callee: Cow<'a, str>,
    #[serde(borrow)]
    endpoint: Cow<'a, str>,
    #[serde(borrow)]
    op: Cow<'a, str>,
    #[serde(borrow)]
    request: &'a RawValue,
    #[serde(borrow)]
    started_at: &'a str,
    duration_ms: u64,
    outcome: DialOutcome,
    #[serde(borrow, default)]
    response: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<Cow<'a, str>>,
}

/// Largest integer JavaScript holds exactly; `generation` and `seq` above it take the general
/// path.
const MAX_SAFE: u64 = 1 << 53;

impl DialFrame {
    /// Reads `frame` (one WebSocket text message) from the phone whose device id is `phone`.
    ///
    /// `Some` only when the frame is an `event.phoneline.dial` that the general path
    /// ([`crate::ifp::validate_frame`], the event rules, [`super::DialEvent::from_payload`])
    /// accepts, with a `device` that is absent or `phone`; the record then equals
    /// [`super::DialEvent::to_dial`]'s. `None` means "take the general path", never "invalid".
    pub fn parse(frame: &str, phone: &Arc<str>) -> Option<DialFrame> {
        if frame.len() > crate::ifp::MAX_FRAME_BYTES {
            return None;
        }
        let w: WireFrame<'_> = serde_json::from_str(frame).ok()?;
        let p = &w.payload;
        let retention = Retention::from_wire(w.labels.retention)?;
        let checks = w.ifp == IFP_VERSION
            && w.kind == DIAL_EVENT
            && is_message_id(w.id)
            && Timestamp::parse(w.ts).is_ok()
            && is_entity(w.entity)
            && is_session(w.session)
            && w.device.map_or(true, |d| is_device(d) && d == &**phone)
            && (1..=MAX_SAFE).contains(&w.generation)
            && !w.provenance.sensor.is_empty()
            && Timestamp::parse(w.provenance.captured_at).is_ok()
            && Consent::from_wire(w.labels.consent).is_some()
            && p.seq <= MAX_SAFE
            && !p.dedup.is_empty()
            && [&p.caller, &p.callee, &p.endpoint, &p.op]
                .iter()
                .all(|v| !v.trim().is_empty());
        if !checks {
            return None;
        }
        let error = p.error.as_deref().filter(|e| !e.is_empty());
        if matches!(p.outcome, DialOutcome::Error | DialOutcome::TimedOut) && error.is_none() {
            return None;
        }
        let started_at = Timestamp::parse(p.started_at).ok()?;
        let response = match p.response {
            Some(r) => Some(JsonText::from_raw(r).ok()?),
            None => None,
        };
        let mut dial = Dial {
            id: Arc::from(&*p.dedup),
            phone: Arc::clone(phone),
            call_id: Arc::from(&*p.call_id),
            caller: Arc::from(&*p.caller),
            callee: Arc::from(&*p.callee),
            endpoint: Arc::from(&*p.endpoint),
            op: Arc::from(&*p.op),
            request: JsonText::from_raw(p.request).ok()?,
            start_ms: timestamp_ms(&started_at),
            duration_ms: p.duration_ms,
            outcome: p.outcome,
            response,
            error: error.map(Arc::from),
            retention,
            slow: false,
        };
        dial.normalise();
        Some(DialFrame {
            id: w.id.to_string(),
            session: w.session.to_string(),
            generation: w.generation,
            seq: p.seq,
            dial,
        })
    }
}
