//! One-pass reading of `event.phoneline.dial` frames, the one message a phone sends by the
//! thousand.
//!
//! The general path validates a frame into an [`switchboard_wire::ifp::Envelope`] (a `serde_json::Value`
//! tree), applies the receiver rules to it, types the payload ([`super::DialEvent`]) and re-writes
//! the request and response as compact text ([`crate::dial::JsonText`]). For a dial that is four
//! passes over the request and response and an allocation per JSON node. [`DialFrame::parse`]
//! reads the same frame once, with a reader made for its one shape, straight into the envelope
//! fields the receiver needs and the [`Dial`] record; the scan that finds where the request and
//! the response end also proves them already compact
//! ([`switchboard_wire::js_json::stringify_form_end`]), so they are kept as the text they
//! arrived as, copied once.
//!
//! It is a shortcut, never a second set of rules: it accepts a frame only when every rule of the
//! general path holds (`ifp1-notes.md`, "Envelope"; the event rules; [`super::DialEvent`]'s
//! payload rules) and it produces the same record; anything else, including anything merely
//! unusual (an `ext` object, a `parent`, an escaped id or key, a repeated key, a provenance
//! chain, an unknown payload key, an array where an object belongs), gives `None` and the frame
//! takes the general path, which accepts it or names what is wrong. The tests in
//! `tests/protocol/dial_frame.rs` hold it to that: for every frame they make, `parse` either
//! declines or agrees with the general path field for field.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::value::RawValue;

use super::dial_event::epoch_ms;
use super::DIAL_EVENT;
use crate::dial::{Dial, DialOutcome, JsonText, Retention};
use switchboard_wire::ifp::envelope::{Consent, IFP_VERSION};
use switchboard_wire::ifp::validate::{is_device, is_entity, is_message_id, is_session};
use switchboard_wire::ifp::Timestamp;
use switchboard_wire::js_json::string_special;

/// A validated `event.phoneline.dial` frame: what the receiver rules and the hub need of the
/// envelope, and the dial as the dial log keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct DialFrame {
    /// The envelope `id` (`msg_...`), acknowledged to the phone once applied.
    pub id: FrameId,
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

/// An envelope `id` (`ifp1-notes.md`, "Envelope": `^[a-z]+_[A-Za-z0-9]{6,64}$`) of at most
/// [`FrameId::MAX`] bytes, held in place: every dial frame has one and the hub only reads it
/// (rules, acknowledgement point), so it is not worth an allocation made on the connection's
/// thread and freed on the hub's. A longer id takes the general path.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct FrameId {
    len: u8,
    bytes: [u8; FrameId::MAX],
}

impl FrameId {
    /// Longest id held (the reference phone's are 24 bytes: `msg_` and 20 characters).
    pub const MAX: usize = 48;

    /// `id` held in place; `None` when it is longer than [`FrameId::MAX`] bytes.
    pub fn new(id: &str) -> Option<FrameId> {
        let len = u8::try_from(id.len())
            .ok()
            .filter(|&n| usize::from(n) <= Self::MAX)?;
        let mut bytes = [0; Self::MAX];
        bytes[..id.len()].copy_from_slice(id.as_bytes());
        Some(FrameId { len, bytes })
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        // Copied whole from a `str`, so always UTF-8.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

impl std::ops::Deref for FrameId {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Debug for FrameId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl std::fmt::Display for FrameId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<String> for FrameId {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<str> for FrameId {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

/// The frame's fields as read, before the checks.
#[derive(Default)]
struct WireFrame<'a> {
    ifp: Option<&'a str>,
    id: Option<&'a str>,
    ts: Option<&'a str>,
    kind: Option<&'a str>,
    entity: Option<&'a str>,
    session: Option<&'a str>,
    /// `Some(None)`: the key was there with `null`.
    device: Option<Option<&'a str>>,
    generation: Option<u64>,
    /// `provenance`: its `sensor` and `captured_at`.
    provenance: Option<(Cow<'a, str>, &'a str)>,
    /// `labels`: its `consent` and `retention`.
    labels: Option<(&'a str, &'a str)>,
    payload: Option<WirePayload<'a>>,
}

/// The payload as [`super::DialEvent`] reads it (`call_id` defaulting to empty, `response` and
/// `error` optional, `null` for either meaning absent).
#[derive(Default)]
struct WirePayload<'a> {
    seq: Option<u64>,
    dedup: Option<Cow<'a, str>>,
    call_id: Option<Cow<'a, str>>,
    caller: Option<Cow<'a, str>>,
    callee: Option<Cow<'a, str>>,
    endpoint: Option<Cow<'a, str>>,
    op: Option<Cow<'a, str>>,
    request: Option<Raw<'a>>,
    started_at: Option<&'a str>,
    duration_ms: Option<u64>,
    outcome: Option<DialOutcome>,
    response: Option<Option<Raw<'a>>>,
    error: Option<Option<Cow<'a, str>>>,
}

/// A request or response as it stands in the frame.
#[derive(Clone, Copy)]
enum Raw<'a> {
    /// Already what `JSON.stringify` writes (proven while finding its end).
    Compact(&'a str),
    /// Valid JSON in another form (whitespace, other escapes or number forms, more keys than the
    /// one-pass proof holds): parsed and re-written.
    Other(&'a str),
}

/// Largest integer JavaScript holds exactly; `generation` and `seq` above it take the general
/// path.
const MAX_SAFE: u64 = 1 << 53;

/// Deepest nesting of arrays and objects in the request or the response: serde_json parses at
/// most 127 levels (the general path's parse of the whole frame fails beyond); the request and
/// response sit two levels down (frame, payload).
const MAX_RAW_NESTING: usize = 127 - 2;

/// Sets `slot` to `value` unless it was set already (a repeated key declines, as serde's derived
/// readers refuse a duplicate field).
fn once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(value);
    Some(())
}

/// Reads one frame in a single pass over its bytes: the envelope, provenance and labels as the
/// strings they are, the payload's request and response found and proven compact by the same
/// scan ([`switchboard_wire::js_json::stringify_form_end`]). `None` for anything the readers of
/// the general path would refuse or that is merely unusual (an unknown or escaped key, an
/// escape in an envelope string, a number that is not a plain integer where one belongs).
fn read_frame(frame: &str) -> Option<WireFrame<'_>> {
    let mut r = Reader::new(frame);
    let mut w = WireFrame::default();
    r.object(|r, key| match key {
        "ifp" => once(&mut w.ifp, r.plain_str()?),
        "id" => once(&mut w.id, r.plain_str()?),
        "ts" => once(&mut w.ts, r.plain_str()?),
        "type" => once(&mut w.kind, r.plain_str()?),
        "entity" => once(&mut w.entity, r.plain_str()?),
        "session" => once(&mut w.session, r.plain_str()?),
        "device" => {
            let d = if r.null() { None } else { Some(r.plain_str()?) };
            once(&mut w.device, d)
        }
        "generation" => once(&mut w.generation, r.u64()?),
        "provenance" => {
            let (mut sensor, mut captured_at) = (None, None);
            r.object(|r, key| match key {
                "sensor" => once(&mut sensor, r.cow_str()?),
                "captured_at" => once(&mut captured_at, r.plain_str()?),
                _ => None,
            })?;
            once(&mut w.provenance, (sensor?, captured_at?))
        }
        "labels" => {
            let (mut consent, mut retention) = (None, None);
            r.object(|r, key| match key {
                "consent" => once(&mut consent, r.plain_str()?),
                "retention" => once(&mut retention, r.plain_str()?),
                _ => None,
            })?;
            once(&mut w.labels, (consent?, retention?))
        }
        "payload" => {
            let mut p = WirePayload::default();
            r.object(|r, key| match key {
                "seq" => once(&mut p.seq, r.u64()?),
                "dedup" => once(&mut p.dedup, r.cow_str()?),
                "call_id" => once(&mut p.call_id, r.cow_str()?),
                "caller" => once(&mut p.caller, r.cow_str()?),
                "callee" => once(&mut p.callee, r.cow_str()?),
                "endpoint" => once(&mut p.endpoint, r.cow_str()?),
                "op" => once(&mut p.op, r.cow_str()?),
                "request" => once(&mut p.request, r.raw()?),
                "started_at" => once(&mut p.started_at, r.plain_str()?),
                "duration_ms" => once(&mut p.duration_ms, r.u64()?),
                "outcome" => once(&mut p.outcome, outcome(r.plain_str()?)?),
                "response" => {
                    let v = if r.null() { None } else { Some(r.raw()?) };
                    once(&mut p.response, v)
                }
                "error" => {
                    let v = if r.null() { None } else { Some(r.cow_str()?) };
                    once(&mut p.error, v)
                }
                _ => None,
            })?;
            once(&mut w.payload, p)
        }
        _ => None,
    })?;
    r.end()?;
    Some(w)
}

/// The outcome named `s` (its wire name, as serde reads [`DialOutcome`]).
fn outcome(s: &str) -> Option<DialOutcome> {
    DialOutcome::ALL.into_iter().find(|o| o.as_str() == s)
}

/// A cursor over a frame's text for [`read_frame`]; JSON's whitespace is allowed between
/// tokens, as serde_json allows it.
struct Reader<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Reader<'a> {
    fn new(text: &'a str) -> Self {
        Reader { text, at: 0 }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The next byte after any whitespace, not taken.
    fn peek(&mut self) -> Option<u8> {
        let b = self.bytes();
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(self.at) {
            self.at += 1;
        }
        b.get(self.at).copied()
    }

    /// Takes `c` (after any whitespace) or fails.
    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.at += 1)
    }

    /// Only whitespace is left.
    fn end(&mut self) -> Option<()> {
        self.peek().is_none().then_some(())
    }

    /// Takes `null` if it is next.
    fn null(&mut self) -> bool {
        if self.peek() == Some(b'n') && self.bytes()[self.at..].starts_with(b"null") {
            self.at += 4;
            true
        } else {
            false
        }
    }

    /// A string with no escapes, as the text between its quotes.
    fn plain_str(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.at;
        let end = string_special(self.bytes(), start)?;
        if self.bytes()[end] != b'"' {
            return None;
        }
        self.at = end + 1;
        self.text.get(start..end)
    }

    /// A string, its escapes decoded (by serde_json, as the general path decodes them) when it
    /// has any.
    fn cow_str(&mut self) -> Option<Cow<'a, str>> {
        if self.peek()? != b'"' {
            return None;
        }
        let open = self.at;
        let b = self.bytes();
        let mut j = string_special(b, open + 1)?;
        if b[j] == b'"' {
            self.at = j + 1;
            return self.text.get(open + 1..j).map(Cow::Borrowed);
        }
        // Escapes (or a raw control character, which serde_json refuses below).
        loop {
            match b[j] {
                b'"' => break,
                b'\\' => j = string_special(b, j + 2)?,
                _ => return None,
            }
        }
        self.at = j + 1;
        serde_json::from_str::<String>(self.text.get(open..j + 1)?)
            .ok()
            .map(Cow::Owned)
    }

    /// A non-negative integer as serde_json reads a `u64`: digits only, no leading zero, no
    /// fraction or exponent, at most `u64::MAX`.
    fn u64(&mut self) -> Option<u64> {
        self.peek()?;
        let b = self.bytes();
        let start = self.at;
        let mut j = start;
        let mut n: u64 = 0;
        while let Some(&c @ b'0'..=b'9') = b.get(j) {
            n = n.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
            j += 1;
        }
        let digits = j - start;
        if digits == 0 || (digits > 1 && b[start] == b'0') {
            return None;
        }
        if matches!(b.get(j), Some(b'.' | b'e' | b'E' | b'-' | b'+')) {
            return None;
        }
        self.at = j;
        Some(n)
    }

    /// A JSON value of any kind, as its text: proven compact while its end is found, or else
    /// read by serde_json (which finds its end and refuses what is not JSON).
    fn raw(&mut self) -> Option<Raw<'a>> {
        self.peek()?;
        let start = self.at;
        if let Some(end) =
            switchboard_wire::js_json::stringify_form_end(self.text, start, MAX_RAW_NESTING)
        {
            self.at = end;
            return self.text.get(start..end).map(Raw::Compact);
        }
        let rest = self.text.get(start..)?;
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<&RawValue>();
        let raw = values.next()?.ok()?;
        self.at = start + values.byte_offset();
        Some(Raw::Other(raw.get()))
    }

    /// Reads an object, handing each key (which must have no escapes) to `field`, which reads
    /// its value; fails when `field` does or the object is malformed.
    fn object(&mut self, mut field: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        loop {
            let key = self.plain_str()?;
            self.eat(b':')?;
            field(self, key)?;
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }
}

/// The request or the response as [`JsonText`]: kept as received when it was proven compact,
/// otherwise parsed and re-written; `None` when it nests deeper than [`MAX_RAW_NESTING`].
fn json_text(raw: Raw<'_>) -> Option<JsonText> {
    match raw {
        Raw::Compact(text) => Some(JsonText::from_compact(text)),
        Raw::Other(text) => {
            if !nesting_within(text, MAX_RAW_NESTING) {
                return None;
            }
            JsonText::parse(text).ok()
        }
    }
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
        let w = read_frame(frame)?;
        let p = w.payload?;
        let (id, session, generation) = (w.id?, w.session?, w.generation?);
        let (seq, dedup, call_id) = (p.seq?, p.dedup?, p.call_id.unwrap_or_default());
        let (caller, callee, endpoint, op) = (p.caller?, p.callee?, p.endpoint?, p.op?);
        let (started_at, duration_ms, outcome) = (p.started_at?, p.duration_ms?, p.outcome?);
        let ((sensor, captured_at), (consent, retention)) = (w.provenance?, w.labels?);
        let retention = Retention::from_wire(retention)?;
        let checks = w.ifp? == IFP_VERSION
            && w.kind? == DIAL_EVENT
            && is_message_id(id)
            && Timestamp::unix_parts(w.ts?).is_ok()
            && is_entity(w.entity?)
            && is_session(session)
            && w.device
                .flatten()
                .map_or(true, |d| is_device(d) && d == &**phone)
            && (1..=MAX_SAFE).contains(&generation)
            && !sensor.is_empty()
            && Timestamp::unix_parts(captured_at).is_ok()
            && Consent::from_wire(consent).is_some()
            && seq <= MAX_SAFE
            && !dedup.is_empty()
            && [&caller, &callee, &endpoint, &op]
                .iter()
                .all(|v| !v.trim().is_empty());
        if !checks {
            return None;
        }
        let error = p.error.flatten();
        let error = error.as_deref().filter(|e| !e.is_empty());
        if matches!(outcome, DialOutcome::Error | DialOutcome::TimedOut) && error.is_none() {
            return None;
        }
        let (start_s, start_ns) = Timestamp::unix_parts(started_at).ok()?;
        let response = match p.response.flatten() {
            Some(r) => Some(json_text(r)?),
            None => None,
        };
        let mut dial = Dial {
            id: Arc::from(&*dedup),
            phone: Arc::clone(phone),
            call_id: Arc::from(&*call_id),
            caller: shared.get(&caller),
            callee: shared.get(&callee),
            endpoint: shared.get(&endpoint),
            op: shared.get(&op),
            request: json_text(p.request?)?,
            start_ms: epoch_ms(start_s, start_ns),
            duration_ms,
            outcome,
            response,
            error: error.map(Arc::from),
            retention,
            slow: false,
            spec: Default::default(),
            session: shared.get(session),
            seq: Default::default(),
            arrived: Default::default(),
        };
        dial.normalise();
        Some(DialFrame {
            id: FrameId::new(id)?,
            session: Arc::clone(&dial.session),
            generation,
            seq,
            dial,
        })
    }
}
