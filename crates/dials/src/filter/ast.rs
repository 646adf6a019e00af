//! What a parsed filter line is: the query, its terms and what each term tests, as the grammar
//! in the parent module's docs names them. Parsing ([`DialQuery::parse`]) and printing
//! ([`std::fmt::Display`]) live beside this file; this one holds the shapes and the questions
//! a query answers about itself (whether dials or connection events can match).

use serde::Serialize;
use ts_rs::TS;

use crate::record::{Dial, DialOutcome};

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
    /// `after:T` (arrived at or after T: [`crate::record::Dial::arrived_or_started_ms`]).
    After(TimeSpec),
    /// `before:T` (arrived before T).
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

/// The units of a relative time (`-30m`) with their length in milliseconds, largest first so
/// printing picks the largest whole one.
pub(super) const UNITS: [(char, i64); 4] = [
    ('d', 86_400_000),
    ('h', 3_600_000),
    ('m', 60_000),
    ('s', 1000),
];

impl DialQuery {
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
