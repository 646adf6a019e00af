//! One-pass reading of `event.phoneline.dial` frames, the one message a phone sends by the
//! thousand.
//!
//! The general path validates a frame into an [`switchboard_wire::ifp::Envelope`] (a `serde_json::Value`
//! tree), applies the receiver rules to it, types the payload ([`super::DialEvent`]) and re-writes
//! the request and response as compact text ([`crate::dial::JsonText`]). For a dial that is four
//! passes over the request and response and an allocation per JSON node. [`DialFrame::parse`]
//! reads the same frame once, straight into the envelope fields the receiver needs and the
//! [`Dial`] record, keeping the request and response as the text they arrived as when that text
//! is already compact ([`switchboard_wire::js_json::is_stringify_form`]).
//!
//! It is a shortcut, never a second set of rules: it accepts a frame only when every rule of the
//! general path holds (`ifp1-notes.md`, "Envelope"; the event rules; [`super::DialEvent`]'s
//! payload rules) and it produces the same record; anything else, including anything merely
//! unusual (an `ext` object, a `parent`, an escaped id, a repeated key, a provenance chain, an
//! unknown payload key, an array where an object belongs), gives `None` and the frame takes the
//! general path, which accepts it or names what is wrong. The tests in `tests/protocol/dial_frame.rs` hold
//! it to that: for every frame they make, `parse` either declines or agrees with the general path
//! field for field.

use std::borrow::Cow;
use std::sync::Arc;

use serde::de::Visitor;
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::dial_event::epoch_ms;
use super::DIAL_EVENT;
use crate::dial::{Dial, DialOutcome, JsonText, Retention};
use switchboard_wire::ifp::envelope::{Consent, IFP_VERSION};
use switchboard_wire::ifp::validate::{is_device, is_entity, is_message_id, is_session};
use switchboard_wire::ifp::Timestamp;

/// A validated `event.phoneline.dial` frame: what the receiver rules and the hub need of the
/// envelope, and the dial as the dial log keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct DialFrame {
    /// The envelope `id` (`msg_...`), acknowledged to the phone once applied.
    pub id: String,
    /// The envelope `session` (`ses_...`): the scope of `seq` and `dedup`.
    pub session: Arc<str>,
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
    #[serde(borrow, deserialize_with = "object")]
    provenance: WireProvenance<'a>,
    #[serde(borrow, deserialize_with = "object")]
    labels: WireLabels<'a>,
    #[serde(borrow, deserialize_with = "object")]
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

/// The payload as [`super::DialEvent`] reads it (`call_id` defaulting to empty, `response` and
/// `error` optional), except that an unknown key declines: serde_json skips the value of a key it
/// does not keep without the checks of the general path's parse (nesting limit, lone surrogate
/// escapes, numbers out of range).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
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

/// Deepest nesting of arrays and objects in the request or the response: serde_json parses at
/// most 127 levels (the general path's parse of the whole frame fails beyond), but skips a
/// [`RawValue`] without counting them; the request and response sit two levels down (frame,
/// payload).
const MAX_RAW_NESTING: usize = 127 - 2;

/// Reads a struct only from a JSON object: serde's derived `Deserialize` also takes a struct from
/// an array of its field values in order, which the general path refuses (the frame,
/// `provenance`, `labels` and `payload` are objects).
struct ObjectOnly<D>(D);

impl<'de, D: Deserializer<'de>> Deserializer<'de> for ObjectOnly<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_any(visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_map(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

/// `deserialize_with` for a struct field that must be a JSON object ([`ObjectOnly`]).
fn object<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<T, D::Error> {
    T::deserialize(ObjectOnly(d))
}

/// The request or the response as [`JsonText`]: kept as received when it is already compact
/// (one scan), otherwise parsed and re-written; `None` when it nests deeper than
/// [`MAX_RAW_NESTING`].
fn json_text(raw: &RawValue) -> Option<JsonText> {
    let text = raw.get();
    if switchboard_wire::js_json::is_stringify_form_within(text, MAX_RAW_NESTING) {
        return Some(JsonText::from_compact(text));
    }
    if !nesting_within(text, MAX_RAW_NESTING) {
        return None;
    }
    JsonText::parse(text).ok()
}

/// Whether the JSON value `text` nests arrays and objects at most `max` levels deep.
fn nesting_within(text: &str, max: usize) -> bool {
    let b = text.as_bytes();
    // Cheap bound first: no more opening brackets than `max` anywhere (strings included).
    if memchr::memchr2_iter(b'[', b'{', b).count() <= max {
        return true;
    }
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &c in b {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_string = false;
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return false;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    true
}

/// The strings a connection's dials repeat (caller, callee, endpoint, op, session), shared: a dial reuses
/// the `Arc<str>` of an earlier one instead of allocating its own (the dial log interns them to
/// the same value anyway). At most [`SharedStrings::MAX`] strings; then it starts over.
#[derive(Debug, Default)]
pub struct SharedStrings {
    set: foldhash::HashSet<Arc<str>>,
}

impl SharedStrings {
    /// Most strings kept.
    pub const MAX: usize = 256;

    /// The shared `Arc<str>` equal to `s`.
    pub fn get(&mut self, s: &str) -> Arc<str> {
        if let Some(found) = self.set.get(s) {
            return Arc::clone(found);
        }
        if self.set.len() >= Self::MAX {
            self.set.clear();
        }
        let a: Arc<str> = Arc::from(s);
        self.set.insert(Arc::clone(&a));
        a
    }
}

impl DialFrame {
    /// [`DialFrame::parse_shared`] with strings of its own.
    pub fn parse(frame: &str, phone: &Arc<str>) -> Option<DialFrame> {
        DialFrame::parse_shared(frame, phone, &mut SharedStrings::default())
    }

    /// Reads `frame` (one WebSocket text message) from the phone whose device id is `phone`,
    /// taking the repeated strings from `shared`.
    ///
    /// `Some` only when the frame is an `event.phoneline.dial` that the general path
    /// ([`switchboard_wire::ifp::validate_frame`], the event rules, [`super::DialEvent::from_payload`])
    /// accepts, with a `device` that is absent or `phone`; the record then equals
    /// [`super::DialEvent::to_dial`]'s. `None` means "take the general path", never "invalid".
    pub fn parse_shared(
        frame: &str,
        phone: &Arc<str>,
        shared: &mut SharedStrings,
    ) -> Option<DialFrame> {
        if frame.len() > switchboard_wire::ifp::MAX_FRAME_BYTES {
            return None;
        }
        let mut de = serde_json::Deserializer::from_str(frame);
        let w = WireFrame::deserialize(ObjectOnly(&mut de)).ok()?;
        de.end().ok()?;
        let p = &w.payload;
        let retention = Retention::from_wire(w.labels.retention)?;
        let checks = w.ifp == IFP_VERSION
            && w.kind == DIAL_EVENT
            && is_message_id(w.id)
            && Timestamp::unix_parts(w.ts).is_ok()
            && is_entity(w.entity)
            && is_session(w.session)
            && w.device.map_or(true, |d| is_device(d) && d == &**phone)
            && (1..=MAX_SAFE).contains(&w.generation)
            && !w.provenance.sensor.is_empty()
            && Timestamp::unix_parts(w.provenance.captured_at).is_ok()
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
        let (start_s, start_ns) = Timestamp::unix_parts(p.started_at).ok()?;
        let response = match p.response {
            Some(r) => Some(json_text(r)?),
            None => None,
        };
        let mut dial = Dial {
            id: Arc::from(&*p.dedup),
            phone: Arc::clone(phone),
            call_id: Arc::from(&*p.call_id),
            caller: shared.get(&p.caller),
            callee: shared.get(&p.callee),
            endpoint: shared.get(&p.endpoint),
            op: shared.get(&p.op),
            request: json_text(p.request)?,
            start_ms: epoch_ms(start_s, start_ns),
            duration_ms: p.duration_ms,
            outcome: p.outcome,
            response,
            error: error.map(Arc::from),
            retention,
            slow: false,
            spec: Default::default(),
            session: shared.get(w.session),
            seq: Default::default(),
            arrived: Default::default(),
        };
        dial.normalise();
        Some(DialFrame {
            id: w.id.to_string(),
            session: Arc::clone(&dial.session),
            generation: w.generation,
            seq: p.seq,
            dial,
        })
    }
}
