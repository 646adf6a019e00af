//! Reading a filter line into a [`DialQuery`]: a hand-written parser over the grammar in the
//! parent module's docs, so every error can name its position (in UTF-16 units for the
//! window's input, characters and bytes for the rest) and what would have been accepted there.

use serde::Serialize;
use ts_rs::TS;

use super::ast::{
    words, Atom, Cmp, DialQuery, RowKind, SpecWant, Term, TextField, TimeSpec, UNITS,
};
use crate::record::DialOutcome;

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

/// Every key written before `:`, as the error for an unknown field lists them.
const FIELD_KEYS: [&str; 12] = [
    "op", "caller", "callee", "endpoint", "phone", "call", "session", "outcome", "spec", "kind",
    "after", "before",
];
/// The `outcome:` values, as the error for an unknown one lists them.
pub(super) const OUTCOMES: [&str; 4] = ["ok", "tool_error", "error", "timed_out"];

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
                let t = parse_time(&value).map_err(|e| bad(self, e.to_string(), &[]))?;
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
        let ms = parse_duration(&value)
            .map_err(|e| self.err(vstart, self.pos, e.to_string(), &["ms", "s"]))?;
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

/// Why a `duration` value does not parse; the message quotes the value and shows the forms
/// that would have been accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum DurationError {
    /// No `ms` or `s` at the end (`duration>1`).
    #[error("`{0}` needs a unit: ms or s (e.g. 250ms, 1.5s)")]
    NoUnit(String),
    /// Not a number before the unit, or one too large to hold.
    #[error("`{0}` is not a duration: expected a number then ms or s (250ms, 1.5s)")]
    NotANumber(String),
    /// A fraction of a millisecond (`1.0001s`, `1.5ms`): durations are stored in whole ms.
    #[error("`{0}` is finer than a millisecond: durations are whole milliseconds")]
    FinerThanAMillisecond(String),
}

/// Parses `250ms`, `1s`, `1.5s` into whole milliseconds.
fn parse_duration(v: &str) -> Result<u64, DurationError> {
    let (num, scale) = if let Some(n) = v.strip_suffix("ms") {
        (n, 1u64)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1000u64)
    } else {
        return Err(DurationError::NoUnit(v.to_owned()));
    };
    let bad = || DurationError::NotANumber(v.to_owned());
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
            return Err(DurationError::FinerThanAMillisecond(v.to_owned()));
        }
        if !digits.is_empty() {
            let padded = format!("{digits:0<3}");
            let f: u64 = padded.parse().map_err(|_| bad())?;
            ms = ms.checked_add(f).ok_or_else(bad)?;
        }
    }
    Ok(ms)
}

/// Why an `after:`/`before:` value does not parse; the message quotes the value and shows the
/// forms that would have been accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum TimeError {
    /// A relative time so far back its milliseconds overflow.
    #[error("`{0}` is too far back")]
    TooFarBack(String),
    /// Starts with `-` but is not a whole number and a unit.
    #[error(
        "`{0}` is not a relative time: expected - then a whole number and s, m, h or d (-30m, -1h, -2d)"
    )]
    NotRelative(String),
    /// A date whose midnight does not fit in epoch milliseconds.
    #[error("`{0}` is out of range")]
    OutOfRange(String),
    /// Neither RFC 3339, a date nor relative.
    #[error(
        "`{0}` is not a time: expected RFC 3339 (2026-12-01T10:00:00Z), a UTC date (2026-12-01) or a relative time (-1h)"
    )]
    NotATime(String),
}

/// Parses an `after:`/`before:` value.
fn parse_time(v: &str) -> Result<TimeSpec, TimeError> {
    if let Some(rel) = v.strip_prefix('-') {
        let unit = rel.chars().last().unwrap_or(' ');
        let num = rel.get(..rel.len().saturating_sub(1)).unwrap_or("");
        let scale = UNITS.iter().find(|(u, _)| *u == unit).map(|(_, s)| *s);
        return match (scale, num.parse::<i64>()) {
            (Some(scale), Ok(n)) if n > 0 && num.bytes().all(|b| b.is_ascii_digit()) => n
                .checked_mul(scale)
                .map(TimeSpec::Ago)
                .ok_or_else(|| TimeError::TooFarBack(v.to_owned())),
            _ => Err(TimeError::NotRelative(v.to_owned())),
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
                .map_err(|_| TimeError::OutOfRange(v.to_owned()));
        }
    }
    Err(TimeError::NotATime(v.to_owned()))
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
}
