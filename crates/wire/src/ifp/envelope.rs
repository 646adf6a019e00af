//! The ifp/1 envelope: the typed view of one message that passed [`crate::ifp::validate()`].
//!
//! Why: every ifp/1 message is one JSON object with a closed set of top-level fields
//! (`ifp, id, ts, type, entity, session, device, generation, parent, correlation, provenance,
//! labels, payload, ext`; `ifp1-notes.md`, "Envelope"). An [`Envelope`] exists only for a message
//! that satisfied every envelope rule, so code downstream never re-checks shapes.
//!
//! [`Envelope`] is deliberately receive-only: it has no `Serialize`. Frames Switchboard sends are
//! built only through [`crate::ifp::outgoing`], which cannot express `action.approve`,
//! `action.reject` or `action.cancel` (the central promise; see [`crate::ifp`]).

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use ts_rs::TS;

/// Largest frame accepted, in bytes: 1 MiB (1 048 576). A bigger frame is rejected with
/// `invalid_envelope` before it is parsed.
pub const MAX_FRAME_BYTES: usize = 1024 * 1024;

/// The closed set of top-level envelope fields, in the notes' order (`ifp1-notes.md`,
/// "Envelope"). Any other top-level field is `invalid_envelope`.
pub const ENVELOPE_FIELDS: [&str; 14] = [
    "ifp",
    "id",
    "ts",
    "type",
    "entity",
    "session",
    "device",
    "generation",
    "parent",
    "correlation",
    "provenance",
    "labels",
    "payload",
    "ext",
];

/// The only protocol version string this crate accepts in `ifp`.
pub const IFP_VERSION: &str = "1";

/// Message types whose `entity` may be missing or `null` (`ifp1-notes.md`, "Envelope").
pub const ENTITY_OPTIONAL_TYPES: [&str; 4] =
    ["pair.request", "pair.complete", "control.hello", "error"];

/// One validated ifp/1 message (`ifp1-notes.md`, "Envelope").
///
/// Missing and `null` optional fields are both `None` (the notes: "Missing and `null` are the
/// same"). Build one with [`crate::ifp::validate()`] or [`crate::ifp::validate_frame`].
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// Message id, `^[a-z]+_[A-Za-z0-9]{6,64}$` (e.g. `msg_ping000001`).
    pub id: String,
    /// Send time: RFC 3339 in UTC with a literal `Z`.
    pub ts: Timestamp,
    /// Message type, `^[a-z][a-z0-9_.]*$` (e.g. `event.text.message`). Unknown types are valid.
    pub r#type: String,
    /// Entity, `^ent_[A-Za-z0-9]{6,64}$`; `None` only on the [`ENTITY_OPTIONAL_TYPES`].
    pub entity: Option<String>,
    /// Session, `^ses_[A-Za-z0-9]{6,64}$`; always present on `event.*` and `action.propose`.
    pub session: Option<String>,
    /// Sending device, `^dev_[A-Za-z0-9_]{4,64}$`.
    pub device: Option<String>,
    /// Home generation the sender writes under, integer >= 1; always present on `event.*`,
    /// `action.approve` and `action.result`.
    pub generation: Option<u64>,
    /// Id of the message this one answers (same pattern as `id`).
    pub parent: Option<String>,
    /// Free correlation token (non-empty string) tying messages of one exchange together.
    pub correlation: Option<String>,
    /// Where the content came from; always present on `event.*`, tolerated elsewhere.
    pub provenance: Option<Provenance>,
    /// Consent and retention labels; always present on `event.*`.
    pub labels: Option<Labels>,
    /// The type's payload object (always present; unknown keys kept as received).
    pub payload: Map<String, Value>,
    /// Extension object; every key starts with `x-`. Empty when absent.
    pub ext: Map<String, Value>,
}

impl Envelope {
    /// True for the `event.*` family.
    pub fn is_event(&self) -> bool {
        self.r#type.starts_with("event.")
    }
}

/// `provenance {sensor, captured_at, chain?[{stage}]}` (`ifp1-notes.md`, "Envelope").
#[derive(Debug, Clone, PartialEq)]
pub struct Provenance {
    /// The sensor that captured the content, e.g. `dev_mac_a1b2:keyboard` (non-empty).
    pub sensor: String,
    /// When the content was captured (RFC 3339 UTC).
    pub captured_at: Timestamp,
    /// Processing stages in order; empty when `chain` is absent.
    pub chain: Vec<ChainStage>,
}

/// One `provenance.chain` entry: `{stage, ...}`; other keys are kept as received.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainStage {
    /// Stage name, e.g. `capture` (non-empty).
    pub stage: String,
    /// The entry's other keys (e.g. `model`).
    pub extra: Map<String, Value>,
}

/// `labels {consent, retention}` (`ifp1-notes.md`, "Envelope").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Labels {
    /// What the content may be used for.
    pub consent: Consent,
    /// How long it may be kept.
    pub retention: Retention,
}

/// `labels.consent` values (`ifp1-notes.md`, "Envelope").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum Consent {
    /// Used for an inference and dropped.
    TransientInference,
    /// Used to operate the product.
    ProductOperation,
    /// Kept as the person's memory.
    UserMemory,
    /// Contributed to research.
    ResearchContribution,
    /// Used to train the person's own model.
    PersonalModelTraining,
    /// Used to train a shared model.
    SharedModelTraining,
    /// Kept for operational audit.
    OperationalAudit,
}

impl Consent {
    /// All values, in the notes' order.
    pub const ALL: [Consent; 7] = [
        Consent::TransientInference,
        Consent::ProductOperation,
        Consent::UserMemory,
        Consent::ResearchContribution,
        Consent::PersonalModelTraining,
        Consent::SharedModelTraining,
        Consent::OperationalAudit,
    ];

    /// Wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Consent::TransientInference => "transient_inference",
            Consent::ProductOperation => "product_operation",
            Consent::UserMemory => "user_memory",
            Consent::ResearchContribution => "research_contribution",
            Consent::PersonalModelTraining => "personal_model_training",
            Consent::SharedModelTraining => "shared_model_training",
            Consent::OperationalAudit => "operational_audit",
        }
    }

    /// Parses a wire name; `None` for anything else.
    pub fn from_wire(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// `labels.retention` values (`ifp1-notes.md`, "Envelope").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum Retention {
    /// Dropped after use.
    Transient,
    /// The default retention.
    Standard,
    /// Kept longer than standard.
    Extended,
    /// Kept until deleted.
    Permanent,
}

impl Retention {
    /// All values, in the notes' order.
    pub const ALL: [Retention; 4] = [
        Retention::Transient,
        Retention::Standard,
        Retention::Extended,
        Retention::Permanent,
    ];

    /// Wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Retention::Transient => "transient",
            Retention::Standard => "standard",
            Retention::Extended => "extended",
            Retention::Permanent => "permanent",
        }
    }

    /// Parses a wire name; `None` for anything else.
    pub fn from_wire(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// An ifp/1 timestamp: RFC 3339 in UTC with a literal `Z`, optional fraction, no numeric offset
/// (`YYYY-MM-DDTHH:MM:SS[.f+]Z`; `ifp1-notes.md`, "Envelope").
///
/// Ordered by instant (`unix_seconds`, then `nanos`); fraction digits beyond nine are kept in
/// [`Timestamp::as_str`] but ignored for ordering. Leap seconds (`:60`) are refused. Serialises as
/// its original text.
#[derive(Debug, Clone)]
pub struct Timestamp {
    text: String,
    unix_seconds: i64,
    nanos: u32,
}

/// Why a text is not an ifp/1 timestamp.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TimestampError {
    /// The text does not have the shape `YYYY-MM-DDTHH:MM:SS[.fraction]Z`.
    #[error(
        "expected RFC 3339 UTC time like 2026-07-21T00:00:00Z (literal Z, no offset), got {0:?}"
    )]
    Shape(String),
    /// A date or time component is out of range (month 13, 31 April, hour 24, ...).
    #[error("date or time out of range in {0:?}")]
    Range(String),
}

impl Timestamp {
    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction]Z` (uppercase `T` and `Z` only).
    ///
    /// Errors: [`TimestampError::Shape`] for any other shape (a numeric offset such as `+02:00`,
    /// a missing `Z`, an empty fraction), [`TimestampError::Range`] for impossible dates/times.
    pub fn parse(text: &str) -> Result<Self, TimestampError> {
        let (unix_seconds, nanos) = Timestamp::unix_parts(text)?;
        Ok(Timestamp {
            text: text.to_string(),
            unix_seconds,
            nanos,
        })
    }

    /// The checks of [`Timestamp::parse`] without keeping the text: `(unix seconds, nanoseconds)`.
    ///
    /// Errors: as [`Timestamp::parse`].
    pub fn unix_parts(text: &str) -> Result<(i64, u32), TimestampError> {
        let shape = || TimestampError::Shape(text.to_string());
        let b = text.as_bytes();
        if b.len() < 20 || b.last() != Some(&b'Z') {
            return Err(shape());
        }
        let digits = |range: std::ops::Range<usize>| -> Option<u32> {
            let part = b.get(range)?;
            if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
                return None;
            }
            part.iter().try_fold(0u32, |acc, d| {
                acc.checked_mul(10)?.checked_add(u32::from(d - b'0'))
            })
        };
        let sep = |i: usize, c: u8| b.get(i) == Some(&c);
        if !(sep(4, b'-') && sep(7, b'-') && sep(10, b'T') && sep(13, b':') && sep(16, b':')) {
            return Err(shape());
        }
        let year = digits(0..4).ok_or_else(shape)?;
        let month = digits(5..7).ok_or_else(shape)?;
        let day = digits(8..10).ok_or_else(shape)?;
        let hour = digits(11..13).ok_or_else(shape)?;
        let minute = digits(14..16).ok_or_else(shape)?;
        let second = digits(17..19).ok_or_else(shape)?;
        let rest = b.get(19..b.len() - 1).ok_or_else(shape)?;
        let nanos = match rest {
            [] => 0,
            [b'.', frac @ ..] if !frac.is_empty() && frac.iter().all(u8::is_ascii_digit) => {
                let mut n = 0u32;
                for i in 0..9 {
                    n = n * 10 + frac.get(i).map_or(0, |d| u32::from(d - b'0'));
                }
                n
            }
            _ => return Err(shape()),
        };
        let unix_seconds = crate::timefmt::unix_seconds(year, month, day, hour, minute, second)
            .ok_or_else(|| TimestampError::Range(text.to_string()))?;
        Ok((unix_seconds, nanos))
    }

    /// The timestamp of an instant, written with milliseconds (`2026-07-21T00:00:00.000Z`), as
    /// Switchboard stamps the messages it sends.
    ///
    /// Returns `None` when `nanos >= 1_000_000_000` or the year falls outside 0000-9999.
    /// Sub-millisecond precision is dropped from the text and from the value.
    pub fn from_unix(unix_seconds: i64, nanos: u32) -> Option<Self> {
        let text = crate::timefmt::utc_parts(unix_seconds, nanos)?.rfc3339();
        Timestamp::parse(&text).ok()
    }

    /// [`Timestamp::from_unix`] of a [`std::time::SystemTime`] (e.g. `SystemTime::now()`); `None`
    /// outside the years 1970-9999.
    pub fn from_system_time(t: std::time::SystemTime) -> Option<Self> {
        let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
        Timestamp::from_unix(i64::try_from(d.as_secs()).ok()?, d.subsec_nanos())
    }

    /// The text as received (e.g. `2026-07-21T00:00:00Z`).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whole seconds since 1970-01-01T00:00:00Z (negative before).
    pub fn unix_seconds(&self) -> i64 {
        self.unix_seconds
    }

    /// Nanoseconds within the second (0..1 000 000 000).
    pub fn nanos(&self) -> u32 {
        self.nanos
    }
}

impl PartialEq for Timestamp {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Timestamp {}

impl PartialOrd for Timestamp {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Timestamp {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.unix_seconds, self.nanos).cmp(&(other.unix_seconds, other.nanos))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for Timestamp {
    type Err = TimestampError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Timestamp::parse(s)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Timestamp::parse(&text).map_err(serde::de::Error::custom)
    }
}

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

impl Retention {
    /// Parses a wire name; `None` for anything else (same as [`Retention::from_wire`]).
    pub fn parse(s: &str) -> Option<Self> {
        Self::from_wire(s)
    }

    /// How long a dial with this label is kept, in milliseconds from its start; `None` when age
    /// never removes it (`transient` lives only as long as the ring holds it, `permanent` until
    /// cleared).
    pub fn max_age_ms(self) -> Option<i64> {
        match self {
            Retention::Transient | Retention::Permanent => None,
            Retention::Standard => Some(7 * DAY_MS),
            Retention::Extended => Some(90 * DAY_MS),
        }
    }

    /// Whether dials with this label are written to SQLite (all but `transient`).
    pub fn persists(self) -> bool {
        self != Retention::Transient
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn parses_utc_z_times_and_orders_by_instant() {
        let a = Timestamp::parse("2026-07-21T01:06:30Z").unwrap();
        let b = Timestamp::parse("2026-07-21T01:07:00Z").unwrap();
        assert!(a < b);
        assert_eq!(a.unix_seconds(), 1_784_595_990);
        let f = Timestamp::parse("2026-07-21T01:06:30.5Z").unwrap();
        assert!(a < f && f < b);
        assert_eq!(f.nanos(), 500_000_000);
        assert_eq!(
            Timestamp::parse("1970-01-01T00:00:00Z")
                .unwrap()
                .unix_seconds(),
            0
        );
        assert_eq!(
            Timestamp::parse("2000-03-01T00:00:00Z")
                .unwrap()
                .unix_seconds(),
            951_868_800
        );
    }

    #[test]
    fn refuses_offsets_lowercase_and_impossible_dates() {
        for bad in [
            "2026-07-21T00:00:00+02:00",
            "2026-07-21T00:00:00",
            "2026-07-21t00:00:00z",
            "2026-07-21 00:00:00Z",
            "2026-07-21T00:00:00.Z",
            "2026-7-21T00:00:00Z",
            "2026-02-29T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-07-21T24:00:00Z",
            "2026-07-21T00:00:60Z",
            "",
        ] {
            assert!(Timestamp::parse(bad).is_err(), "{bad} should be refused");
        }
        assert!(Timestamp::parse("2024-02-29T23:59:59.123456789123Z").is_ok());
    }

    #[test]
    fn from_unix_round_trips_through_parse() {
        for secs in [
            0i64,
            951_868_800,
            1_784_595_990,
            253_402_300_799,
            68_169_600,
        ] {
            let t = Timestamp::from_unix(secs, 250_000_000).unwrap();
            assert_eq!(t.unix_seconds(), secs, "{t}");
            assert_eq!(t.nanos(), 250_000_000);
            assert!(t.as_str().ends_with(".250Z"));
        }
        assert_eq!(
            Timestamp::from_unix(1_784_595_990, 0).unwrap().as_str(),
            "2026-07-21T01:06:30.000Z"
        );
        assert!(Timestamp::from_unix(253_402_300_800, 0).is_none());
        assert!(Timestamp::from_unix(0, 1_000_000_000).is_none());
    }
}
