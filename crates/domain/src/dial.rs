//! The [`Dial`] record: one phone-line call as the phone reported it.
//!
//! A dial is one call of a phone line (`phone-line.md`, "Operations" and "Request and response
//! shapes"): the caller (usually `lumiagent`) dials the callee's endpoint
//! (`<calleeExtId>.phoneline`) with an op and a request, and gets a response or an error. The
//! phone forwards each dial to the desktop as an ifp/1 `event.*` message (`ifp1-notes.md`,
//! "Envelope" and "Events"), whose payload `dedup` key becomes the dial id and whose
//! `labels.retention` decides how long the dial is kept.
//!
//! The record is built to be held by the hundred thousand: the strings that repeat (phone, caller,
//! callee, endpoint, op) are `Arc<str>` shared through the log's interner, the request and
//! response are compact JSON text ([`JsonText`]) rather than `serde_json::Value` trees, and the
//! log shares each dial with queries and subscribers as an `Arc<Dial>` instead of copying it.

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use ts_rs::TS;

pub mod conformance;
pub mod sample;

/// A dial slower than this many milliseconds is `slow` (`phone-line.md`, "Good neighbour notes":
/// "Keep each handler call under a second").
pub const SLOW_DIAL_MS: u64 = 1000;

/// How a dial ended.
///
/// Serialised as `"ok"`, `"tool_error"`, `"error"`, `"timed_out"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum DialOutcome {
    /// The handler answered with a response.
    Ok,
    /// The handler answered, but with a tool error for the agent (e.g. `write_field` returned
    /// `{ ok: false, error }`, or an unsupported data op: `phone-line.md`, "How it works").
    ToolError,
    /// The dial failed: the handler threw, or the host refused it (permission errors, see
    /// `phone-line.md`, "Failure modes and the bridge banner").
    Error,
    /// The caller gave up waiting (15 s) before the handler answered.
    TimedOut,
}

impl DialOutcome {
    /// Every outcome, in the order of the stats columns.
    pub const ALL: [DialOutcome; 4] = [
        DialOutcome::Ok,
        DialOutcome::ToolError,
        DialOutcome::Error,
        DialOutcome::TimedOut,
    ];

    /// The wire name (`"ok"`, `"tool_error"`, `"error"`, `"timed_out"`).
    pub fn as_str(self) -> &'static str {
        match self {
            DialOutcome::Ok => "ok",
            DialOutcome::ToolError => "tool_error",
            DialOutcome::Error => "error",
            DialOutcome::TimedOut => "timed_out",
        }
    }

    /// Parses a wire name; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.as_str() == s)
    }
}

/// ifp/1's retention label (one type, [`switchboard_wire::ifp::envelope::Retention`]): the label of the event that carried the dial (`ifp1-notes.md`, "Envelope":
/// `labels.retention`). It decides what the dial log keeps:
///
/// | label | in memory | in SQLite |
/// | --- | --- | --- |
/// | `transient` | until evicted from the ring or the app stops | never |
/// | `standard` | 7 days from the dial's start | 7 days from the dial's start |
/// | `extended` | 90 days | 90 days |
/// | `permanent` | until cleared | until cleared |
pub use switchboard_wire::ifp::envelope::Retention;

/// Errors building a [`JsonText`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JsonTextError {
    /// The text is not one valid JSON value.
    #[error("not valid JSON: {0}")]
    Invalid(#[from] serde_json::Error),
}

/// One JSON value held as compact text (no whitespace, keys in the order received, written as
/// `JSON.stringify` writes it: [`switchboard_wire::js_json::stringify`]).
///
/// It serialises as the JSON value itself (not as a string), so a [`Dial`] crosses to the UI and
/// into JSON Lines exports as real JSON. On the TypeScript side its fields are `unknown`. Only valid JSON
/// can be put in one: build it with [`JsonText::from_value`] or [`JsonText::parse`].
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct JsonText(Box<str>);

impl JsonText {
    /// Compact text of `value`.
    pub fn from_value(value: &serde_json::Value) -> Self {
        Self(switchboard_wire::js_json::stringify(value).into_boxed_str())
    }

    /// Parses `text` (any whitespace) and keeps it compact.
    ///
    /// # Errors
    /// [`JsonTextError::Invalid`] when `text` is not exactly one JSON value.
    pub fn parse(text: &str) -> Result<Self, JsonTextError> {
        let v: serde_json::Value = serde_json::from_str(text)?;
        Ok(Self::from_value(&v))
    }

    /// Wraps text already proven compact by [`switchboard_wire::js_json::is_stringify_form`] (one copy).
    pub(crate) fn from_compact(text: &str) -> Self {
        debug_assert!(switchboard_wire::js_json::is_stringify_form(text));
        Self(text.into())
    }

    /// The compact JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The value as a `serde_json::Value` tree (parsed on each call).
    ///
    /// # Errors
    /// Never in practice: the text was valid JSON when the value was built.
    pub fn to_value(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::from_str(&self.0)
    }

    /// Wraps text already known to be compact valid JSON (read back from our own SQLite file,
    /// which only ever receives [`JsonText`]s). Checked in debug builds.
    pub fn from_trusted(text: String) -> Self {
        debug_assert!(serde_json::from_str::<serde_json::Value>(&text).is_ok());
        Self(text.into_boxed_str())
    }
}

impl fmt::Debug for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for JsonText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match serde_json::from_str::<&RawValue>(&self.0) {
            Ok(raw) => raw.serialize(serializer),
            Err(e) => Err(serde::ser::Error::custom(e)),
        }
    }
}

impl<'de> Deserialize<'de> for JsonText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(deserializer)?;
        Ok(Self::from_value(&v))
    }
}

/// One dial: one phone-line call the phone reported (`phone-line.md`, "Operations").
///
/// JSON shape (snake_case keys; `response` and `error` are omitted when absent):
/// `{ id, phone, call_id, caller, callee, endpoint, op, request, start_ms, duration_ms, outcome,
/// response?, error?, retention, slow }`.
///
/// `slow` is derived: `duration_ms > 1000` ([`SLOW_DIAL_MS`]). The log recomputes it on ingest
/// and on import, so a value given on input is ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct Dial {
    /// Dial id: the ifp/1 event's payload `dedup` key (`ifp1-notes.md`, "Events"). Unique in a
    /// log; a second dial with the same id is a replay and is not stored.
    pub id: Arc<str>,
    /// The phone that reported the dial: its ifp/1 `device` id (`dev_...`).
    pub phone: Arc<str>,
    /// The request's `callId` (`phone-line.md`, "Request and response shapes"); empty when the
    /// caller sent none.
    pub call_id: Arc<str>,
    /// The ifp/1 `session` (`ses_...`) of the event that carried the dial (`ifp1-notes.md`,
    /// "Envelope"); empty when unknown (files exported before it was kept).
    #[serde(default)]
    pub session: Arc<str>,
    /// The caller's extension id (the requester, usually `lumiagent`).
    pub caller: Arc<str>,
    /// The callee's extension id (the owner of the endpoint, e.g. `lumirealm`).
    pub callee: Arc<str>,
    /// The endpoint dialed, e.g. `lumirealm.phoneline`.
    pub endpoint: Arc<str>,
    /// The op (`describe`, `read_item`, ...; any string, extension ops included).
    pub op: Arc<str>,
    /// The request envelope as sent.
    #[ts(type = "unknown")]
    pub request: JsonText,
    /// When the dial started, in milliseconds since the Unix epoch (UTC).
    #[ts(type = "number")]
    pub start_ms: i64,
    /// How long the dial took, in milliseconds.
    #[ts(type = "number")]
    pub duration_ms: u64,
    /// How the dial ended.
    pub outcome: DialOutcome,
    /// The handler's response, when it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "unknown")]
    pub response: Option<JsonText>,
    /// The error text, when the dial failed, timed out or gave a tool error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub error: Option<Arc<str>>,
    /// The retention label the event carried.
    pub retention: Retention,
    /// Derived: `duration_ms > 1000`.
    #[serde(default)]
    pub slow: bool,
    /// Derived, cached: how many ways the dial breaks `phone-line.md`
    /// ([`Dial::spec_findings`]). Not serialised; build it with `Default::default()`.
    #[serde(skip)]
    #[ts(skip)]
    pub spec: SpecMark,
    /// The log's sequence number of the dial (its place in the timeline, the SQLite rowid),
    /// set when the log holds it; 0 for a dial not (yet) in a log. Not serialised; equality
    /// ignores it.
    #[serde(skip)]
    #[ts(skip)]
    pub seq: Seq,
    /// When the dial reached this desktop, in milliseconds since the Unix epoch (UTC) by the
    /// desktop's clock: set by the dial log when it holds the dial, `None` for a dial not (yet)
    /// in a log or stored before the time was kept. Dials are ordered by arrival (their
    /// [`Seq`]) and the filter's time terms judge it ([`Dial::arrived_or_started_ms`]), so a
    /// phone whose clock is wrong still has its dials where they happened for the person at
    /// the desktop; `start_ms` stays the phone's own. Written as `arrived_ms` when known.
    /// Equality ignores it (two records of one dial are equal whenever each arrived).
    #[serde(
        default,
        rename = "arrived_ms",
        skip_serializing_if = "Arrival::is_unknown"
    )]
    #[ts(optional, rename = "arrived_ms", as = "Option<f64>")]
    pub arrived: Arrival,
}

/// When a dial reached this desktop ([`Dial::arrived`]): milliseconds since the Unix epoch (UTC)
/// by the desktop's clock, `None` when unknown. Serialised as the number or omitted; equality
/// ignores it.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Arrival(pub Option<i64>);

impl Arrival {
    /// Whether the arrival time is unknown (the field is then omitted from JSON).
    pub fn is_unknown(&self) -> bool {
        self.0.is_none()
    }
}

impl PartialEq for Arrival {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Arrival {}

/// A row's place in the dial log's timeline ([`Dial::seq`]): dials and connection events share
/// one increasing sequence, which is also the SQLite rowid of a stored row. Equality ignores it
/// (two records of one dial are equal whatever log holds them).
#[derive(Debug, Clone, Copy, Default)]
pub struct Seq(pub u64);

impl PartialEq for Seq {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Seq {}

/// The cached count of a dial's spec findings: computed once, the first time something asks
/// ([`Dial::spec_findings`]: the live table's row, a "not to spec" filter, the stats), never
/// at ingest. Equality ignores it (it is derived from the rest of the dial).
pub struct SpecMark(AtomicU32);

const SPEC_UNKNOWN: u32 = u32::MAX;

impl SpecMark {
    /// A mark already known: `n` findings (read back from the store).
    pub fn known(n: u32) -> Self {
        Self(AtomicU32::new(n.min(SPEC_UNKNOWN - 1)))
    }
}

impl Default for SpecMark {
    fn default() -> Self {
        Self(AtomicU32::new(SPEC_UNKNOWN))
    }
}

impl Clone for SpecMark {
    fn clone(&self) -> Self {
        Self(AtomicU32::new(self.0.load(Ordering::Relaxed)))
    }
}

impl PartialEq for SpecMark {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for SpecMark {}

impl SpecMark {
    /// The count when it is already known (checked, read back from the store or preset), else
    /// `None`; never runs the check.
    pub fn get(&self) -> Option<u32> {
        match self.0.load(Ordering::Relaxed) {
            SPEC_UNKNOWN => None,
            n => Some(n),
        }
    }

    /// Sets the count as checked elsewhere: for dials whose values were redacted (a support
    /// bundle), whose own check would judge the type markers instead of the values the phone
    /// sent.
    pub fn preset(&self, findings: u32) {
        self.0
            .store(findings.min(SPEC_UNKNOWN - 1), Ordering::Relaxed);
    }
}

impl fmt::Debug for SpecMark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.load(Ordering::Relaxed) {
            SPEC_UNKNOWN => f.write_str("SpecMark(unchecked)"),
            n => write!(f, "SpecMark({n})"),
        }
    }
}

impl Dial {
    /// Recomputes the derived `slow` flag from `duration_ms`.
    pub fn normalise(&mut self) {
        self.slow = self.duration_ms > SLOW_DIAL_MS;
    }

    /// How many ways the dial breaks `phone-line.md`
    /// ([`crate::dial::conformance::check_dial`] with the built-in
    /// [`ScopeBook`](crate::dial::conformance::ScopeBook): LumiRealm's published manifest);
    /// 0 when it follows the spec. Checked on the first call, then cached in [`Dial::spec`].
    pub fn spec_findings(&self) -> u32 {
        let cached = self.spec.0.load(Ordering::Relaxed);
        if cached != SPEC_UNKNOWN {
            return cached;
        }
        let c = crate::dial::conformance::check_dial(
            self,
            crate::dial::conformance::ScopeBook::builtin(),
        );
        let n = u32::try_from(c.findings.len())
            .unwrap_or(SPEC_UNKNOWN - 1)
            .min(SPEC_UNKNOWN - 1);
        self.spec.0.store(n, Ordering::Relaxed);
        n
    }

    /// The time the filter's `after:`/`before:` judge (epoch ms): when the dial reached this
    /// desktop ([`Dial::arrived`]), or its start by the phone's clock when that is unknown (a
    /// dial stored before arrival times were kept, or read from a file without them).
    pub fn arrived_or_started_ms(&self) -> i64 {
        self.arrived.0.unwrap_or(self.start_ms)
    }

    /// Whether the dial has outlived its retention label at `now_ms` (epoch ms): its start plus
    /// [`Retention::max_age_ms`] is at or before `now_ms`.
    pub fn expired_at(&self, now_ms: i64) -> bool {
        match self.retention.max_age_ms() {
            Some(age) => self.start_ms.saturating_add(age) <= now_ms,
            None => false,
        }
    }

    /// The moment the dial expires (epoch ms), `None` when age never removes it.
    pub fn expires_ms(&self) -> Option<i64> {
        self.retention
            .max_age_ms()
            .map(|age| self.start_ms.saturating_add(age))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn json_text_compacts_and_serialises_as_value() {
        let t = JsonText::parse("{ \"op\" : \"read_item\", \"b\": [1, 2.5, \"é\"] }").unwrap();
        assert_eq!(t.as_str(), r#"{"op":"read_item","b":[1,2.5,"é"]}"#);
        let wrapped = serde_json::to_string(&vec![t.clone()]).unwrap();
        assert_eq!(wrapped, r#"[{"op":"read_item","b":[1,2.5,"é"]}]"#);
        let back: JsonText = serde_json::from_str(&wrapped[1..wrapped.len() - 1]).unwrap();
        assert_eq!(back, t);
        assert!(JsonText::parse("{").is_err());
        assert!(JsonText::parse("1 2").is_err());
    }

    #[test]
    fn outcome_and_retention_names_round_trip() {
        for o in DialOutcome::ALL {
            assert_eq!(DialOutcome::parse(o.as_str()), Some(o));
            assert_eq!(serde_json::to_value(o).unwrap(), o.as_str());
        }
        assert_eq!(Retention::parse("extended"), Some(Retention::Extended));
        assert_eq!(Retention::parse("forever"), None);
        assert!(!Retention::Transient.persists());
        assert_eq!(
            Retention::Standard.max_age_ms(),
            Some(7 * 24 * 60 * 60 * 1000)
        );
    }
}
