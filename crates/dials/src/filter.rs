//! The dial filter line: a small query language over dials and connection events, like the
//! Chrome network panel's filter box and Wireshark's display filters.
//!
//! ```text
//! op:read_item caller:lumiagent -outcome:ok duration>1s phone:"Demo phone" spec:broken word
//! ```
//!
//! The grammar (also in `docs/dial-filter.md`, which the view's help text is written from,
//! [`FILTER_HELP`]):
//!
//! ```text
//! line     = ws* [ term *( ws+ term ) ] ws*
//! term     = [ "-" ] atom                  ; "-" negates the term
//! atom     = field ":" value               ; op caller callee endpoint phone call session
//!                                          ; outcome spec kind after before
//!          | "duration" cmp duration       ; cmp is > >= < <= =
//!          | "/" regex "/" [ "i" ]         ; regex over request, response and error text
//!          | value                         ; free text (a word or a "quoted phrase")
//! value    = bare | quoted
//! bare     = 1*( any character but whitespace and '"' )
//! quoted   = '"' *( any character but '"' and '\' | '\"' | '\\' ) '"'
//! duration = number ( "ms" | "s" )         ; 250ms, 1s, 1.5s (whole milliseconds)
//! time     = RFC 3339 (2026-12-01T10:00:00Z, 2026-12-01T10:00:00.250+01:00), a UTC date
//!            (2026-12-01), or relative to now: "-" number ( "s" | "m" | "h" | "d" ) (-1h)
//! ```
//!
//! Terms are ANDed. Field values match exactly (`phone:` also matches a phone's name, which the
//! app resolves to its device ids, case-insensitive); `outcome:` takes `ok`, `tool_error`,
//! `error`, `timed_out`; `spec:` takes `ok` (follows `phone-line.md`) or `broken`; `kind:` takes
//! `dial` or `connection`; `after:` is inclusive, `before:` exclusive, both on the dial's start.
//! Free text matches **words**: the text is split into words (runs of letters, digits and `_`,
//! case folded) and each word of the query must start a word of the request, response or error
//! text, a quoted phrase's words in a row (the last one as a prefix). `/regex/` searches the
//! compact JSON text of the request, response and error instead (Rust `regex` syntax, `/.../i`
//! ignores case; a `/` inside is written `\/`).
//!
//! **Connection events** (connected, hello, pairing, disconnected) have a phone and a time only:
//! they are part of the answer when every term is a `phone:`, `after:`, `before:` or `kind:`
//! term (or the line is empty). Any other term (negated or not) asks about dials, so
//! connection events do not match it. `kind:dial` (or `-kind:connection`) keeps dials only,
//! `kind:connection` connection events only.
//!
//! Printing a [`DialQuery`] ([`std::fmt::Display`]) gives its canonical line: terms in the order
//! given, one space apart, values quoted only when they must be, durations in `s` when whole
//! seconds else `ms`, relative times in the largest whole unit. Parsing the printed line gives the
//! same query back (a property test holds it to that).

use std::fmt;

use serde::Serialize;
use ts_rs::TS;

use super::record::{Dial, DialOutcome};

/// A parsed filter line: its terms, ANDed, in the order written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DialQuery {
    /// The terms.
    pub terms: Vec<Term>,
}

/// One term of a filter line: an atom, maybe negated (`-`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// Written with a leading `-`: the term must not match.
    pub negated: bool,
    /// What is tested.
    pub atom: Atom,
}

/// Fields that match a text value exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TextField {
    /// `op:` the op.
    Op,
    /// `caller:` the caller's extension id.
    Caller,
    /// `callee:` the callee's extension id.
    Callee,
    /// `endpoint:` the endpoint dialed.
    Endpoint,
    /// `phone:` the phone's device id (or its name, resolved by the app).
    Phone,
    /// `call:` the request's `callId` (follow a call).
    Call,
    /// `session:` the ifp/1 `session` of the event that carried the dial.
    Session,
}

impl TextField {
    /// Every text field, in the order the help lists them.
    pub const ALL: [TextField; 7] = [
        TextField::Op,
        TextField::Caller,
        TextField::Callee,
        TextField::Endpoint,
        TextField::Phone,
        TextField::Call,
        TextField::Session,
    ];

    /// The key written before `:`.
    pub fn key(self) -> &'static str {
        match self {
            TextField::Op => "op",
            TextField::Caller => "caller",
            TextField::Callee => "callee",
            TextField::Endpoint => "endpoint",
            TextField::Phone => "phone",
            TextField::Call => "call",
            TextField::Session => "session",
        }
    }

    /// The dial's value of this field.
    pub fn of(self, d: &Dial) -> &str {
        match self {
            TextField::Op => &d.op,
            TextField::Caller => &d.caller,
            TextField::Callee => &d.callee,
            TextField::Endpoint => &d.endpoint,
            TextField::Phone => &d.phone,
            TextField::Call => &d.call_id,
            TextField::Session => &d.session,
        }
    }
}

/// `spec:` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecWant {
    /// `spec:ok`: the dial follows `phone-line.md`.
    Ok,
    /// `spec:broken`: the dial breaks it (one finding or more).
    Broken,
}

/// `kind:` values: what a row of the timeline is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum RowKind {
    /// A dial.
    Dial,
    /// A connection event (connected, hello, pairing, disconnected).
    Connection,
}

/// A comparison of `duration`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `=`
    Eq,
}

impl Cmp {
    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Eq => "=",
        }
    }

    /// Whether `a <op> b`.
    pub fn holds(self, a: u64, b: u64) -> bool {
        match self {
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Eq => a == b,
        }
    }
}

/// A point in time of `after:`/`before:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeSpec {
    /// An absolute instant, epoch milliseconds (UTC).
    At(i64),
    /// Milliseconds before the query runs (`-1h` is `Ago(3_600_000)`); always above 0.
    Ago(i64),
}

impl TimeSpec {
    /// The instant, epoch ms, for a query run at `now_ms`.
    pub fn resolve(self, now_ms: i64) -> i64 {
        match self {
            TimeSpec::At(t) => t,
            TimeSpec::Ago(d) => now_ms.saturating_sub(d),
        }
    }
}

/// What a term tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Atom {
    /// `field:value`, exact.
    Field(TextField, String),
    /// `outcome:...`.
    Outcome(DialOutcome),
    /// `spec:ok` / `spec:broken`.
    Spec(SpecWant),
    /// `kind:dial` / `kind:connection`.
    Kind(RowKind),
    /// `duration<cmp><n>ms|s`, in milliseconds.
    Duration(Cmp, u64),
    /// `after:T` (start at or after T).
    After(TimeSpec),
    /// `before:T` (start before T).
    Before(TimeSpec),
    /// Free text: a word, or a quoted phrase (`quoted` keeps how it was written for printing:
    /// a phrase with spaces is always quoted).
    Text(String),
    /// `/pattern/` or `/pattern/i`.
    Regex {
        /// The pattern as written between the slashes (with `\/` unescaped to `/`).
        pattern: String,
        /// `i` after the closing slash.
        ignore_case: bool,
    },
}

impl Atom {
    /// Whether the atom can hold for a connection event (phone, time and kind only).
    pub fn applies_to_connections(&self) -> bool {
        matches!(
            self,
            Atom::Field(TextField::Phone, _) | Atom::After(_) | Atom::Before(_) | Atom::Kind(_)
        )
    }
}

/// A filter line that does not parse: where and what was expected.
///
/// Positions are given three ways so every caller can use the one it counts in: `start`/`end`
/// in UTF-16 code units (a browser input's selection), `column` 1-based in characters (for
/// messages), and the byte range in the line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS, thiserror::Error)]
#[error("column {column}: {message}")]
#[ts(export)]
pub struct FilterError {
    /// Start of the faulty part, in UTF-16 code units.
    pub start: u32,
    /// End of the faulty part (exclusive), in UTF-16 code units; `start` when it is a point.
    pub end: u32,
    /// 1-based column (in characters) of `start`.
    pub column: u32,
    /// Byte offset of the faulty part in the line.
    pub byte_start: u32,
    /// Byte offset of its end (exclusive).
    pub byte_end: u32,
    /// What is wrong and what was expected there, in a sentence.
    pub message: String,
    /// What would have been accepted there (field names, values), when it is a short list.
    pub expected: Vec<String>,
}

/// The answer of `parse_dial_filter`: the canonical line, or the error with its position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct FilterCheck {
    /// The line as the core prints it back (canonical), when it parses.
    pub canonical: Option<String>,
    /// Why it does not parse, when it does not.
    pub error: Option<FilterError>,
    /// How many terms it has (0 for an empty line or an error).
    pub terms: u32,
}

impl FilterCheck {
    /// Parses `line` and reports.
    pub fn of(line: &str) -> Self {
        match DialQuery::parse(line) {
            Ok(q) => Self {
                canonical: Some(q.to_string()),
                error: None,
                terms: u32::try_from(q.terms.len()).unwrap_or(u32::MAX),
            },
            Err(e) => Self {
                canonical: None,
                error: Some(e),
                terms: 0,
            },
        }
    }
}

const FIELD_KEYS: [&str; 12] = [
    "op", "caller", "callee", "endpoint", "phone", "call", "session", "outcome", "spec", "kind",
    "after", "before",
];
const OUTCOMES: [&str; 4] = ["ok", "tool_error", "error", "timed_out"];

/// Longest filter line accepted, in bytes.
pub const MAX_FILTER_LEN: usize = 4096;

struct Parser<'a> {
    line: &'a str,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn err(&self, from: usize, to: usize, message: String, expected: &[&str]) -> FilterError {
        let from = from.min(self.line.len());
        let to = to.clamp(from, self.line.len());
        let before = self.line.get(..from).unwrap_or("");
        let part = self.line.get(from..to).unwrap_or("");
        let u16s = |s: &str| u32::try_from(s.encode_utf16().count()).unwrap_or(u32::MAX);
        let start = u16s(before);
        FilterError {
            start,
            end: start.saturating_add(u16s(part)),
            column: u32::try_from(before.chars().count() + 1).unwrap_or(u32::MAX),
            byte_start: u32::try_from(from).unwrap_or(u32::MAX),
            byte_end: u32::try_from(to).unwrap_or(u32::MAX),
            message,
            expected: expected.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    fn rest(&self) -> &'a str {
        self.line.get(self.pos..).unwrap_or("")
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn skip_ws(&mut self) {
        while let Some(c) = self.peek() {
            if !c.is_whitespace() {
                break;
            }
            self.pos += c.len_utf8();
        }
    }

    /// Reads a bare run up to whitespace; a `"` inside is an error.
    fn bare(&mut self, what: &str) -> Result<(usize, String), FilterError> {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c.is_whitespace() {
                break;
            }
            if c == '"' {
                return Err(self.err(
                    self.pos,
                    self.pos + 1,
                    format!(
                        "a quote inside {what}: put the whole value in quotes (\"...\"), with \\\" for a quote inside"
                    ),
                    &[],
                ));
            }
            self.pos += c.len_utf8();
        }
        Ok((
            start,
            self.line.get(start..self.pos).unwrap_or("").to_owned(),
        ))
    }

    /// Reads a quoted value at `"`; the closing quote must be followed by whitespace or the end.
    fn quoted(&mut self) -> Result<String, FilterError> {
        let open = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.err(
                    open,
                    self.line.len(),
                    "this quote is never closed: end the value with \"".into(),
                    &["\""],
                ));
            };
            self.pos += c.len_utf8();
            match c {
                '"' => break,
                '\\' => match self.peek() {
                    Some(e @ ('"' | '\\')) => {
                        self.pos += 1;
                        out.push(e);
                    }
                    _ => {
                        return Err(self.err(
                            self.pos - 1,
                            self.pos + self.peek().map_or(0, char::len_utf8),
                            "inside quotes a backslash escapes only \" or \\ (write \\\\ for a backslash)".into(),
                            &["\\\"", "\\\\"],
                        ))
                    }
                },
                c => out.push(c),
            }
        }
        if let Some(c) = self.peek() {
            if !c.is_whitespace() {
                return Err(self.err(
                    self.pos,
                    self.pos + c.len_utf8(),
                    "expected a space or the end of the line after the closing quote".into(),
                    &[],
                ));
            }
        }
        Ok(out)
    }

    fn value(&mut self, what: &str) -> Result<(usize, String), FilterError> {
        let start = self.pos;
        match self.peek() {
            Some('"') => Ok((start, self.quoted()?)),
            None => Err(self.err(
                start,
                start,
                format!("expected {what} here, found the end of the line"),
                &[],
            )),
            Some(c) if c.is_whitespace() => Err(self.err(
                start,
                start + c.len_utf8(),
                format!(
                    "expected {what} right after the colon (no space; quote a value with spaces)"
                ),
                &[],
            )),
            Some(_) => self.bare(what),
        }
    }

    fn regex(&mut self) -> Result<Atom, FilterError> {
        let open = self.pos;
        self.pos += 1;
        let mut pattern = String::new();
        // Where each of the pattern's characters is in the line (an escaped slash is two).
        let mut at: Vec<(usize, usize)> = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.err(
                    open,
                    self.line.len(),
                    "this regex is never closed: end it with / (write \\/ for a slash inside)"
                        .into(),
                    &["/"],
                ));
            };
            let from = self.pos;
            self.pos += c.len_utf8();
            match c {
                '/' => break,
                '\\' if self.peek() == Some('/') => {
                    self.pos += 1;
                    pattern.push('/');
                }
                c => pattern.push(c),
            }
            at.push((from, self.pos));
        }
        let mut ignore_case = false;
        if self.peek() == Some('i') {
            ignore_case = true;
            self.pos += 1;
        }
        if let Some(c) = self.peek() {
            if !c.is_whitespace() {
                return Err(self.err(
                    self.pos,
                    self.pos + c.len_utf8(),
                    "after a regex's closing / only the flag i may follow".into(),
                    &["i"],
                ));
            }
        }
        if pattern.is_empty() {
            return Err(self.err(open, self.pos, "the regex is empty".into(), &[]));
        }
        if let Err(e) = regex::RegexBuilder::new(&pattern)
            .case_insensitive(ignore_case)
            .size_limit(1 << 20)
            .build()
        {
            let msg = e.to_string();
            let last = msg.lines().last().unwrap_or("invalid").trim();
            let last = last.strip_prefix("error: ").unwrap_or(last).to_owned();
            // The regex crate marks where in the pattern it failed with carets: point there.
            let (from, to) = match regex_caret(&msg) {
                Some((a, b)) if a < at.len() => (at[a].0, at[b.clamp(a + 1, at.len()) - 1].1),
                _ => (open, self.pos),
            };
            return Err(self.err(from, to, format!("not a valid regex: {last}"), &[]));
        }
        Ok(Atom::Regex {
            pattern,
            ignore_case,
        })
    }

    fn term(&mut self) -> Result<Term, FilterError> {
        let start = self.pos;
        let mut negated = false;
        if self.peek() == Some('-') {
            negated = true;
            self.pos += 1;
            match self.peek() {
                None => {
                    return Err(self.err(
                        start,
                        self.pos,
                        "expected a term after - (it negates the term that follows it)".into(),
                        &[],
                    ))
                }
                Some(c) if c.is_whitespace() => {
                    return Err(self.err(
                        start,
                        self.pos,
                        "expected a term right after - (no space between)".into(),
                        &[],
                    ))
                }
                Some('-') => {
                    return Err(self.err(
                        start,
                        self.pos + 1,
                        "a term can be negated once (one -)".into(),
                        &[],
                    ))
                }
                _ => {}
            }
        }
        let atom = self.atom()?;
        Ok(Term { negated, atom })
    }

    fn atom(&mut self) -> Result<Atom, FilterError> {
        let start = self.pos;
        match self.peek() {
            Some('"') => {
                let text = self.quoted()?;
                return self.text_atom(start, text);
            }
            Some('/') => return self.regex(),
            _ => {}
        }
        // A key: ASCII letters and '_', then ':' or a comparison.
        let key_len = self
            .rest()
            .bytes()
            .take_while(|b| b.is_ascii_alphabetic() || *b == b'_')
            .count();
        let key = self.rest().get(..key_len).unwrap_or("");
        let after_key = self.rest().get(key_len..).unwrap_or("");
        if key_len > 0 && after_key.starts_with(':') {
            let lower = key.to_ascii_lowercase();
            if !FIELD_KEYS.contains(&lower.as_str()) {
                return Err(self.err(
                    start,
                    start + key_len,
                    format!(
                        "unknown field `{key}`: the fields are {}; to search for the text, quote it (\"{}\")",
                        FIELD_KEYS.join(", "),
                        self.rest().split_whitespace().next().unwrap_or("")
                    ),
                    &FIELD_KEYS,
                ));
            }
            self.pos += key_len + 1;
            return self.field(start, &lower);
        }
        if key_len > 0 && matches!(after_key.chars().next(), Some('>' | '<' | '=')) {
            let lower = key.to_ascii_lowercase();
            if lower == "duration" {
                self.pos += key_len;
                return self.duration();
            }
            if lower == "time" || lower == "start" {
                return Err(self.err(
                    start,
                    start + key_len + 1,
                    "compare times with after:TIME or before:TIME (RFC 3339, a date, or -1h)"
                        .into(),
                    &["after:", "before:"],
                ));
            }
            return Err(self.err(
                start,
                start + key_len,
                format!(
                    "`{key}` cannot be compared: only duration takes > >= < <= = (e.g. duration>1s); quote it to search for the text"
                ),
                &["duration"],
            ));
        }
        let (s, word) = self.bare("a word")?;
        self.text_atom(s, word)
    }

    fn text_atom(&self, start: usize, text: String) -> Result<Atom, FilterError> {
        if words(&text).next().is_none() {
            return Err(self.err(
                start,
                self.pos,
                "free text needs a letter or digit to search for (words are letters, digits and _); use a /regex/ for punctuation".into(),
                &[],
            ));
        }
        Ok(Atom::Text(text))
    }

    fn field(&mut self, start: usize, key: &str) -> Result<Atom, FilterError> {
        let what = format!("a value for {key}:");
        let (vstart, value) = self.value(&what)?;
        let vend = self.pos;
        let bad = |p: &Self, msg: String, expected: &[&str]| p.err(vstart, vend, msg, expected);
        Ok(match key {
            "outcome" => match DialOutcome::parse(&value) {
                Some(o) => Atom::Outcome(o),
                None => {
                    return Err(bad(
                        self,
                        format!(
                            "unknown outcome `{value}`: expected {}",
                            OUTCOMES.join(", ")
                        ),
                        &OUTCOMES,
                    ))
                }
            },
            "spec" => match value.as_str() {
                "ok" => Atom::Spec(SpecWant::Ok),
                "broken" => Atom::Spec(SpecWant::Broken),
                _ => {
                    return Err(bad(
                        self,
                        format!("unknown spec value `{value}`: expected ok (follows phone-line.md) or broken"),
                        &["ok", "broken"],
                    ))
                }
            },
            "kind" => match value.as_str() {
                "dial" => Atom::Kind(RowKind::Dial),
                "connection" => Atom::Kind(RowKind::Connection),
                _ => {
                    return Err(bad(
                        self,
                        format!("unknown kind `{value}`: expected dial or connection"),
                        &["dial", "connection"],
                    ))
                }
            },
            "after" | "before" => {
                let t = parse_time(&value).map_err(|m| bad(self, m, &[]))?;
                if key == "after" {
                    Atom::After(t)
                } else {
                    Atom::Before(t)
                }
            }
            _ => {
                let field = TextField::ALL
                    .into_iter()
                    .find(|f| f.key() == key)
                    .unwrap_or(TextField::Op);
                let _ = start;
                Atom::Field(field, value)
            }
        })
    }

    fn duration(&mut self) -> Result<Atom, FilterError> {
        let op_start = self.pos;
        let rest = self.rest();
        let (cmp, n) = if rest.starts_with(">=") {
            (Cmp::Ge, 2)
        } else if rest.starts_with("<=") {
            (Cmp::Le, 2)
        } else if rest.starts_with('>') {
            (Cmp::Gt, 1)
        } else if rest.starts_with('<') {
            (Cmp::Lt, 1)
        } else {
            (Cmp::Eq, 1)
        };
        self.pos += n;
        if let Some(c) = self.peek().filter(|c| matches!(c, '>' | '<' | '=')) {
            return Err(self.err(
                op_start,
                self.pos + c.len_utf8(),
                format!(
                    "one comparison only: `{}` then a duration (duration>1s, duration<=250ms)",
                    &self.line[op_start..self.pos]
                ),
                &["ms", "s"],
            ));
        }
        let (vstart, value) = self.value("a duration (250ms, 1s, 1.5s)")?;
        let ms = parse_duration(&value).map_err(|m| self.err(vstart, self.pos, m, &["ms", "s"]))?;
        Ok(Atom::Duration(cmp, ms))
    }
}

/// Where the regex crate's error text `msg` marks the pattern (a one-line pattern, indented 4
/// with the carets under it): the characters `start..end` of the pattern, or `None` when the
/// text has no such mark.
fn regex_caret(msg: &str) -> Option<(usize, usize)> {
    let mark = msg.lines().find(|l| {
        let t = l.trim();
        !t.is_empty() && t.chars().all(|c| c == '^')
    })?;
    let start = mark
        .chars()
        .take_while(|c| *c == ' ')
        .count()
        .checked_sub(4)?;
    let len = mark.trim().chars().count();
    Some((start, start + len))
}

/// Parses `250ms`, `1s`, `1.5s` into whole milliseconds.
fn parse_duration(v: &str) -> Result<u64, String> {
    let (num, scale) = if let Some(n) = v.strip_suffix("ms") {
        (n, 1u64)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1000u64)
    } else {
        return Err(format!("`{v}` needs a unit: ms or s (e.g. 250ms, 1.5s)"));
    };
    let bad = || format!("`{v}` is not a duration: expected a number then ms or s (250ms, 1.5s)");
    let (int, frac) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if int.is_empty()
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
        || int.len() > 12
    {
        return Err(bad());
    }
    let int: u64 = int.parse().map_err(|_| bad())?;
    let mut ms = int.checked_mul(scale).ok_or_else(bad)?;
    if !frac.is_empty() {
        // Whole milliseconds only: at most 3 fraction digits for seconds, none for ms.
        let digits = frac.trim_end_matches('0');
        let max = if scale == 1000 { 3 } else { 0 };
        if digits.len() > max {
            return Err(format!(
                "`{v}` is finer than a millisecond: durations are whole milliseconds"
            ));
        }
        if !digits.is_empty() {
            let padded = format!("{digits:0<3}");
            let f: u64 = padded.parse().map_err(|_| bad())?;
            ms = ms.checked_add(f).ok_or_else(bad)?;
        }
    }
    Ok(ms)
}

fn print_duration(ms: u64) -> String {
    if ms != 0 && ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

const UNITS: [(char, i64); 4] = [
    ('d', 86_400_000),
    ('h', 3_600_000),
    ('m', 60_000),
    ('s', 1000),
];

/// Parses an `after:`/`before:` value.
fn parse_time(v: &str) -> Result<TimeSpec, String> {
    if let Some(rel) = v.strip_prefix('-') {
        let unit = rel.chars().last().unwrap_or(' ');
        let num = rel.get(..rel.len().saturating_sub(1)).unwrap_or("");
        let scale = UNITS.iter().find(|(u, _)| *u == unit).map(|(_, s)| *s);
        return match (scale, num.parse::<i64>()) {
            (Some(scale), Ok(n)) if n > 0 && num.bytes().all(|b| b.is_ascii_digit()) => n
                .checked_mul(scale)
                .map(TimeSpec::Ago)
                .ok_or_else(|| format!("`{v}` is too far back")),
            _ => Err(format!(
                "`{v}` is not a relative time: expected - then a whole number and s, m, h or d (-30m, -1h, -2d)"
            )),
        };
    }
    if let Ok(ts) = v.parse::<jiff::Timestamp>() {
        return Ok(TimeSpec::At(ts.as_millisecond()));
    }
    if let Ok(date) = v.parse::<jiff::civil::Date>() {
        if v.len() == 10 {
            let epoch = jiff::civil::DateTime::constant(1970, 1, 1, 0, 0, 0, 0);
            let ms = date
                .to_datetime(jiff::civil::Time::midnight())
                .duration_since(epoch)
                .as_millis();
            return i64::try_from(ms)
                .map(TimeSpec::At)
                .map_err(|_| format!("`{v}` is out of range"));
        }
    }
    Err(format!(
        "`{v}` is not a time: expected RFC 3339 (2026-12-01T10:00:00Z), a UTC date (2026-12-01) or a relative time (-1h)"
    ))
}

fn print_time(t: TimeSpec) -> String {
    match t {
        TimeSpec::Ago(ms) => {
            for (u, scale) in UNITS {
                if ms % scale == 0 {
                    return format!("-{}{u}", ms / scale);
                }
            }
            // Not whole seconds (only possible when built in code): round up to seconds.
            format!("-{}s", ms.div_euclid(1000) + 1)
        }
        TimeSpec::At(ms) => match jiff::Timestamp::from_millisecond(ms) {
            Ok(ts) => {
                if ms % 1000 == 0 {
                    ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
                } else {
                    ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
                }
            }
            Err(_) => "1970-01-01T00:00:00Z".into(),
        },
    }
}

/// Whether a value can be written without quotes in a field (`op:x`).
fn bare_ok_field(v: &str) -> bool {
    !v.is_empty() && !v.starts_with('"') && v.chars().all(|c| !c.is_whitespace() && c != '"')
}

/// Whether free text can be written without quotes: it must read back as the same word.
fn bare_ok_text(v: &str) -> bool {
    if !bare_ok_field(v) || v.starts_with('-') || v.starts_with('/') {
        return false;
    }
    // A key followed by ':' or a comparison would read as a field.
    let key_len = v
        .bytes()
        .take_while(|b| b.is_ascii_alphabetic() || *b == b'_')
        .count();
    !(key_len > 0 && matches!(v.as_bytes().get(key_len), Some(b':' | b'>' | b'<' | b'=')))
}

fn quote(v: &str) -> String {
    let mut s = String::with_capacity(v.len() + 2);
    s.push('"');
    for c in v.chars() {
        if c == '"' || c == '\\' {
            s.push('\\');
        }
        s.push(c);
    }
    s.push('"');
    s
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.negated {
            f.write_str("-")?;
        }
        match &self.atom {
            Atom::Field(field, v) => {
                let v = if bare_ok_field(v) {
                    v.clone()
                } else {
                    quote(v)
                };
                write!(f, "{}:{v}", field.key())
            }
            Atom::Outcome(o) => write!(f, "outcome:{}", o.as_str()),
            Atom::Spec(SpecWant::Ok) => f.write_str("spec:ok"),
            Atom::Spec(SpecWant::Broken) => f.write_str("spec:broken"),
            Atom::Kind(RowKind::Dial) => f.write_str("kind:dial"),
            Atom::Kind(RowKind::Connection) => f.write_str("kind:connection"),
            Atom::Duration(c, ms) => write!(f, "duration{}{}", c.as_str(), print_duration(*ms)),
            Atom::After(t) => write!(f, "after:{}", print_time(*t)),
            Atom::Before(t) => write!(f, "before:{}", print_time(*t)),
            Atom::Text(t) => {
                if bare_ok_text(t) {
                    f.write_str(t)
                } else {
                    f.write_str(&quote(t))
                }
            }
            Atom::Regex {
                pattern,
                ignore_case,
            } => {
                f.write_str("/")?;
                f.write_str(&pattern.replace('/', "\\/"))?;
                f.write_str(if *ignore_case { "/i" } else { "/" })
            }
        }
    }
}

impl fmt::Display for DialQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{t}")?;
        }
        Ok(())
    }
}

impl DialQuery {
    /// Parses a filter line (grammar in the module docs).
    ///
    /// # Errors
    /// [`FilterError`] naming the position and what was expected there: an unknown field, a
    /// bad outcome/spec/kind value, a duration without a unit, a time that is not RFC 3339, a date
    /// or relative, an unclosed quote or regex, an invalid regex, free text without a letter or
    /// digit, a line over [`MAX_FILTER_LEN`] bytes.
    pub fn parse(line: &str) -> Result<Self, FilterError> {
        let mut p = Parser { line, pos: 0 };
        if line.len() > MAX_FILTER_LEN {
            return Err(p.err(
                MAX_FILTER_LEN,
                line.len(),
                format!("the filter is longer than {MAX_FILTER_LEN} bytes"),
                &[],
            ));
        }
        let mut terms = Vec::new();
        p.skip_ws();
        while p.pos < line.len() {
            terms.push(p.term()?);
            p.skip_ws();
        }
        Ok(Self { terms })
    }

    /// A query of one term.
    pub fn of(term: Term) -> Self {
        Self { terms: vec![term] }
    }

    /// Whether connection events can match (every term is about phone, time or kind).
    pub fn admits_connections(&self) -> bool {
        self.terms.iter().all(|t| {
            t.atom.applies_to_connections()
                && !matches!(
                    (t.negated, &t.atom),
                    (false, Atom::Kind(RowKind::Dial)) | (true, Atom::Kind(RowKind::Connection))
                )
        })
    }

    /// Whether dials can match (no `kind:connection`, no `-kind:dial`).
    pub fn admits_dials(&self) -> bool {
        !self.terms.iter().any(|t| {
            matches!(
                (t.negated, &t.atom),
                (false, Atom::Kind(RowKind::Connection)) | (true, Atom::Kind(RowKind::Dial))
            )
        })
    }
}

/// The words of `text` as free text matches them: maximal runs of alphanumeric characters and
/// `_`, lower-cased. The SQLite full-text index uses the same rule (`unicode61` with
/// `tokenchars '_'`, no diacritics removal), so the ring and the store agree.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// A filter made ready to test dials and connection events in memory: phone names resolved,
/// relative times fixed, regexes compiled, free-text words split. The SQLite side compiles the
/// same [`DialQuery`] to SQL (`store::history`); both follow the rules in the module docs.
#[derive(Debug, Clone)]
pub struct CompiledQuery {
    /// The terms, compiled.
    pub(crate) terms: Vec<CTerm>,
    /// Whether connection events may match at all.
    pub(crate) connections: bool,
    /// Whether dials may match at all.
    pub(crate) dials: bool,
    /// The canonical line.
    pub line: String,
}

#[derive(Debug, Clone)]
pub(crate) struct CTerm {
    pub negated: bool,
    pub atom: CAtom,
}

#[derive(Debug, Clone)]
pub(crate) enum CAtom {
    /// Any of these values (a phone's name resolves to several device ids).
    Field(TextField, Vec<String>),
    Outcome(DialOutcome),
    Spec(SpecWant),
    Kind(RowKind),
    Duration(Cmp, u64),
    After(i64),
    Before(i64),
    /// Words of a word or phrase: consecutive, the last a prefix.
    Text(Vec<String>),
    Regex(regex::Regex),
}

impl CompiledQuery {
    /// Compiles `q` for a query run at `now_ms`; `phone_ids` maps a `phone:` value to the device
    /// ids it means (a name to its phones' ids); a value it gives nothing for matches the device
    /// id itself.
    ///
    /// # Errors
    /// A regex that no longer compiles (it was checked when parsed), as a [`FilterError`] at 0.
    pub fn new(
        q: &DialQuery,
        now_ms: i64,
        phone_ids: &dyn Fn(&str) -> Vec<String>,
    ) -> Result<Self, FilterError> {
        let mut terms = Vec::with_capacity(q.terms.len());
        for t in &q.terms {
            let atom = match &t.atom {
                Atom::Field(TextField::Phone, v) => {
                    let mut ids = phone_ids(v);
                    if !ids.iter().any(|i| i == v) {
                        ids.push(v.clone());
                    }
                    CAtom::Field(TextField::Phone, ids)
                }
                Atom::Field(f, v) => CAtom::Field(*f, vec![v.clone()]),
                Atom::Outcome(o) => CAtom::Outcome(*o),
                Atom::Spec(s) => CAtom::Spec(*s),
                Atom::Kind(k) => CAtom::Kind(*k),
                Atom::Duration(c, ms) => CAtom::Duration(*c, *ms),
                Atom::After(t) => CAtom::After(t.resolve(now_ms)),
                Atom::Before(t) => CAtom::Before(t.resolve(now_ms)),
                Atom::Text(s) => CAtom::Text(words(s).collect()),
                Atom::Regex {
                    pattern,
                    ignore_case,
                } => CAtom::Regex(
                    regex::RegexBuilder::new(pattern)
                        .case_insensitive(*ignore_case)
                        .size_limit(1 << 20)
                        .build()
                        .map_err(|e| FilterError {
                            start: 0,
                            end: 0,
                            column: 1,
                            byte_start: 0,
                            byte_end: 0,
                            message: format!("not a valid regex: {e}"),
                            expected: Vec::new(),
                        })?,
                ),
            };
            terms.push(CTerm {
                negated: t.negated,
                atom,
            });
        }
        Ok(Self {
            terms,
            connections: q.admits_connections(),
            dials: q.admits_dials(),
            line: q.to_string(),
        })
    }

    /// Parses and compiles `line` with no phone names known and `now_ms` for relative times.
    ///
    /// # Errors
    /// As [`DialQuery::parse`].
    pub fn parse(line: &str, now_ms: i64) -> Result<Self, FilterError> {
        Self::new(&DialQuery::parse(line)?, now_ms, &|_| Vec::new())
    }

    /// Whether dial `d` matches.
    pub fn matches_dial(&self, d: &Dial) -> bool {
        if !self.dials {
            return false;
        }
        self.terms.iter().all(|t| t.matches_dial(d) != t.negated)
    }

    /// Whether a connection event of `phone` at `at_ms` matches.
    pub fn matches_connection(&self, phone: &str, at_ms: i64) -> bool {
        if !self.connections {
            return false;
        }
        self.terms.iter().all(|t| {
            let hit = match &t.atom {
                CAtom::Field(TextField::Phone, ids) => ids.iter().any(|i| i == phone),
                CAtom::After(a) => at_ms >= *a,
                CAtom::Before(b) => at_ms < *b,
                CAtom::Kind(k) => *k == RowKind::Connection,
                _ => false,
            };
            hit != t.negated
        })
    }

    /// Whether the query needs a dial's spec findings.
    pub fn needs_spec(&self) -> bool {
        self.terms.iter().any(|t| matches!(t.atom, CAtom::Spec(_)))
    }
}

impl CTerm {
    fn matches_dial(&self, d: &Dial) -> bool {
        match &self.atom {
            CAtom::Field(f, vals) => {
                let v = f.of(d);
                vals.iter().any(|x| x == v)
            }
            CAtom::Outcome(o) => d.outcome == *o,
            CAtom::Spec(SpecWant::Ok) => d.spec_findings() == 0,
            CAtom::Spec(SpecWant::Broken) => d.spec_findings() > 0,
            CAtom::Kind(k) => *k == RowKind::Dial,
            CAtom::Duration(c, ms) => c.holds(d.duration_ms, *ms),
            CAtom::After(a) => d.start_ms >= *a,
            CAtom::Before(b) => d.start_ms < *b,
            CAtom::Text(ws) => {
                text_has_phrase(d.request.as_str(), ws)
                    || d.response
                        .as_ref()
                        .is_some_and(|r| text_has_phrase(r.as_str(), ws))
                    || d.error.as_deref().is_some_and(|e| text_has_phrase(e, ws))
            }
            CAtom::Regex(re) => {
                re.is_match(d.request.as_str())
                    || d.response.as_ref().is_some_and(|r| re.is_match(r.as_str()))
                    || d.error.as_deref().is_some_and(|e| re.is_match(e))
            }
        }
    }
}

/// Whether the words of `text` contain `phrase` (consecutive words; the last matched as a prefix,
/// the others whole).
pub(crate) fn text_has_phrase(text: &str, phrase: &[String]) -> bool {
    let Some((last, init)) = phrase.split_last() else {
        return true;
    };
    // Quick refusal: every (lower-case ASCII) word must appear in the text at all.
    if phrase
        .iter()
        .any(|w| w.is_ascii() && !crate::query::contains_ascii_ci(text.as_bytes(), w.as_bytes()))
    {
        return false;
    }
    let ws: Vec<String> = words(text).collect();
    if ws.len() < phrase.len() {
        return false;
    }
    (0..=ws.len() - phrase.len()).any(|i| {
        init.iter()
            .enumerate()
            .all(|(k, w)| ws.get(i + k).is_some_and(|x| x == w))
            && ws
                .get(i + init.len())
                .is_some_and(|x| x.starts_with(last.as_str()))
    })
}

/// The help text the Dials view shows under its filter line (from `docs/dial-filter.md`).
pub const FILTER_HELP: &str = "\
Terms are ANDed; put - before a term to negate it.
  op:read_item  caller:lumiagent  callee:lumirealm  endpoint:lumirealm.phoneline
  phone:dev_...  phone:\"Demo phone\"  call:<callId>  session:ses_...
  outcome:ok|tool_error|error|timed_out   spec:ok|broken   kind:dial|connection
  duration>1s  duration<=250ms  (> >= < <= =, units ms or s)
  after:-1h  before:2026-12-01T10:00:00Z  after:2026-12-01  (after inclusive, before exclusive)
  word  \"a phrase\"   free text: words of the request, response and error (prefix of a word)
  /regex/  /regex/i    a regex over the compact JSON text instead
Connection events show when every term is phone:, after:, before: or kind:.";

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use proptest::prelude::*;

    fn p(s: &str) -> DialQuery {
        DialQuery::parse(s).unwrap()
    }

    fn e(s: &str) -> FilterError {
        DialQuery::parse(s).unwrap_err()
    }

    #[test]
    fn the_issue_example_parses_to_its_terms() {
        let q = p(
            r#"op:read_item caller:lumiagent -outcome:ok duration>1s phone:"Demo phone" spec:broken word"#,
        );
        assert_eq!(
            q.terms,
            vec![
                Term {
                    negated: false,
                    atom: Atom::Field(TextField::Op, "read_item".into())
                },
                Term {
                    negated: false,
                    atom: Atom::Field(TextField::Caller, "lumiagent".into())
                },
                Term {
                    negated: true,
                    atom: Atom::Outcome(DialOutcome::Ok)
                },
                Term {
                    negated: false,
                    atom: Atom::Duration(Cmp::Gt, 1000)
                },
                Term {
                    negated: false,
                    atom: Atom::Field(TextField::Phone, "Demo phone".into())
                },
                Term {
                    negated: false,
                    atom: Atom::Spec(SpecWant::Broken)
                },
                Term {
                    negated: false,
                    atom: Atom::Text("word".into())
                },
            ]
        );
        assert_eq!(
            q.to_string(),
            r#"op:read_item caller:lumiagent -outcome:ok duration>1s phone:"Demo phone" spec:broken word"#
        );
    }

    #[test]
    fn durations_times_and_regexes() {
        assert_eq!(
            p("duration>=1.5s").terms[0].atom,
            Atom::Duration(Cmp::Ge, 1500)
        );
        assert_eq!(
            p("duration<250ms").terms[0].atom,
            Atom::Duration(Cmp::Lt, 250)
        );
        assert_eq!(p("duration=0ms").to_string(), "duration=0ms");
        assert_eq!(p("duration>2000ms").to_string(), "duration>2s");
        assert_eq!(
            p("after:-1h").terms[0].atom,
            Atom::After(TimeSpec::Ago(3_600_000))
        );
        assert_eq!(p("after:-90m").to_string(), "after:-90m");
        assert_eq!(p("after:-120m").to_string(), "after:-2h");
        assert_eq!(
            p("before:2026-12-01T10:00:00Z").terms[0].atom,
            Atom::Before(TimeSpec::At(1_796_119_200_000))
        );
        assert_eq!(
            p("before:2026-12-01T11:00:00.250+01:00").to_string(),
            "before:2026-12-01T10:00:00.250Z"
        );
        assert_eq!(
            p("after:2026-12-01").to_string(),
            "after:2026-12-01T00:00:00Z"
        );
        assert_eq!(
            p(r"/read_\w+\/x/i").terms[0].atom,
            Atom::Regex {
                pattern: r"read_\w+/x".into(),
                ignore_case: true
            }
        );
        assert_eq!(p(r"/a\/b/").to_string(), r"/a\/b/");
    }

    #[test]
    fn errors_name_the_position_and_what_was_expected() {
        let x = e("op:read_item colour:red");
        assert_eq!((x.start, x.end, x.column), (13, 19, 14));
        assert!(
            x.message.contains("unknown field `colour`"),
            "{}",
            x.message
        );
        assert!(x.expected.contains(&"outcome".to_owned()));
        let x = e("outcome:fine");
        assert_eq!((x.start, x.end), (8, 12));
        assert_eq!(x.expected, OUTCOMES.map(String::from).to_vec());
        let x = e("duration>1");
        assert!(x.message.contains("needs a unit"), "{}", x.message);
        assert_eq!(x.start, 9);
        let x = e("duration>1.0001s");
        assert!(
            x.message.contains("finer than a millisecond"),
            "{}",
            x.message
        );
        let x = e(r#"phone:"Demo phone"#);
        assert!(x.message.contains("never closed"), "{}", x.message);
        assert_eq!((x.start, x.end), (6, 17));
        let x = e("after:yesterday");
        assert!(x.message.contains("not a time"), "{}", x.message);
        let x = e("after:-1w");
        assert!(x.message.contains("relative time"), "{}", x.message);
        let x = e("op: read_item");
        assert!(x.message.contains("right after the colon"), "{}", x.message);
        let x = e("- op:x");
        assert_eq!(x.start, 0);
        let x = e("/(unclosed/");
        assert!(x.message.contains("not a valid regex"), "{}", x.message);
        // The regex's own error points where in the pattern it is (the helper's `/item_(/`
        // was put at column 1).
        let x = e("op:x /item_(/");
        assert!(x.message.contains("unclosed group"), "{}", x.message);
        assert_eq!((x.start, x.end, x.column), (11, 12, 12), "{x:?}");
        let x = e(r"/a\/b{2,1}/");
        assert!(x.message.contains("invalid repetition"), "{}", x.message);
        assert_eq!(
            &r"/a\/b{2,1}/"[x.byte_start as usize..x.byte_end as usize],
            "{2,1}"
        );
        // Two comparisons: said as such, not as a missing unit.
        let x = e("duration>>1s");
        assert!(x.message.contains("one comparison only"), "{}", x.message);
        assert_eq!((x.start, x.end), (8, 10));
        let x = e("duration>=<1s");
        assert!(x.message.contains("one comparison only"), "{}", x.message);
        let x = e("/abc");
        assert!(x.message.contains("never closed"), "{}", x.message);
        let x = e("wo\"rd");
        assert!(x.message.contains("a quote inside"), "{}", x.message);
        let x = e("{}");
        assert!(x.message.contains("letter or digit"), "{}", x.message);
        let x = e("time>-1h");
        assert!(x.message.contains("after:"), "{}", x.message);
        // Positions count UTF-16 units for the window, bytes and characters for the rest.
        let x = e("é😀 colour:x");
        assert_eq!((x.start, x.column, x.byte_start), (4, 4, 7));
        assert_eq!(FilterCheck::of("colour:x").error.unwrap().start, 0);
        assert_eq!(
            FilterCheck::of("  op:x   word ").canonical.unwrap(),
            "op:x word"
        );
    }

    #[test]
    fn free_text_quoting_keeps_words_apart_from_fields() {
        assert_eq!(p(r#""op:x""#).terms[0].atom, Atom::Text("op:x".into()));
        assert_eq!(p(r#""op:x""#).to_string(), r#""op:x""#);
        assert_eq!(p(r#""-x""#).to_string(), r#""-x""#);
        assert_eq!(p(r#"-"a b""#).to_string(), r#"-"a b""#);
        assert_eq!(
            p(r#"call:"say \"hi\"""#).terms[0].atom,
            Atom::Field(TextField::Call, r#"say "hi""#.into())
        );
        assert_eq!(p("lumirealm.phoneline").to_string(), "lumirealm.phoneline");
    }

    #[test]
    fn connections_are_admitted_only_by_phone_time_and_kind_terms() {
        assert!(p("").admits_connections());
        assert!(p("phone:dev_a after:-1h kind:connection").admits_connections());
        assert!(!p("phone:dev_a -kind:connection").admits_connections());
        assert!(!p("-outcome:ok").admits_connections());
        assert!(!p("word").admits_connections());
        assert!(!p("kind:dial").admits_connections());
        assert!(!p("kind:connection").admits_dials());
        assert!(p("-kind:connection").admits_dials());
    }

    #[test]
    fn words_and_phrases() {
        let t = r#"{"op":"read_item","itemId":"ITEM_004242","q":"Hello, World"}"#;
        let w = |s: &str| words(s).collect::<Vec<_>>();
        assert!(text_has_phrase(t, &w("item_0042")));
        assert!(text_has_phrase(t, &w("hello world")));
        assert!(text_has_phrase(t, &w("hello wor")));
        assert!(!text_has_phrase(t, &w("hel world")));
        assert!(!text_has_phrase(t, &w("tem_004242")));
        assert!(text_has_phrase(t, &w("itemid")));
    }

    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z_]{1,8}",
            "[a-zA-Z0-9 \"\\\\:/é-]{0,10}",
            Just("Demo phone".to_owned()),
            Just("-x".to_owned()),
        ]
    }

    fn text() -> impl Strategy<Value = String> {
        prop_oneof!["[a-z0-9_]{1,8}", "[a-zA-Z0-9 \"\\\\:/é<>=-]{0,10}"]
            .prop_filter("has a word", |s| words(s).next().is_some())
    }

    fn atom() -> impl Strategy<Value = Atom> {
        let field = (0usize..7, value()).prop_map(|(i, v)| Atom::Field(TextField::ALL[i], v));
        let cmp = prop_oneof![
            Just(Cmp::Gt),
            Just(Cmp::Ge),
            Just(Cmp::Lt),
            Just(Cmp::Le),
            Just(Cmp::Eq)
        ];
        let time = prop_oneof![
            (1i64..100_000).prop_map(|s| TimeSpec::Ago(s * 1000)),
            (0i64..4_000_000_000_000).prop_map(TimeSpec::At),
        ];
        prop_oneof![
            field,
            (0usize..4).prop_map(|i| Atom::Outcome(DialOutcome::ALL[i])),
            prop_oneof![Just(SpecWant::Ok), Just(SpecWant::Broken)].prop_map(Atom::Spec),
            prop_oneof![Just(RowKind::Dial), Just(RowKind::Connection)].prop_map(Atom::Kind),
            (cmp, 0u64..10_000_000).prop_map(|(c, ms)| Atom::Duration(c, ms)),
            time.clone().prop_map(Atom::After),
            time.prop_map(Atom::Before),
            text().prop_map(Atom::Text),
            ("[a-z/.]{1,6}", any::<bool>()).prop_map(|(pattern, ignore_case)| Atom::Regex {
                pattern,
                ignore_case
            }),
        ]
    }

    proptest! {
        #[test]
        fn printing_then_parsing_gives_the_filter_back(
            terms in proptest::collection::vec((any::<bool>(), atom()), 0..6)
        ) {
            let q = DialQuery {
                terms: terms.into_iter().map(|(negated, atom)| Term { negated, atom }).collect(),
            };
            let line = q.to_string();
            let back = DialQuery::parse(&line);
            prop_assert_eq!(back.as_ref().ok(), Some(&q), "line {:?} -> {:?}", line, back);
        }

        #[test]
        fn parsing_never_panics(line in "\\PC{0,40}") {
            let _ = DialQuery::parse(&line);
        }
    }
}
