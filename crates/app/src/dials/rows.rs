//! The rows the Live dials window shows: a dial without its bodies ([`DialRow`]), a row of the
//! timeline ([`HistoryRow`]: a dial or a connection event), a page of the timeline
//! ([`DialHistoryPage`]) and the per-op stats over the history ([`HistoryStats`]).
//!
//! Why apart: these are the shapes the window receives (ts-rs bindings); every command of the
//! view answers with them, and the bodies stay behind (the inspector fetches one whole dial).

use std::sync::Arc;

use serde::Serialize;
use ts_rs::TS;

#[cfg(doc)]
use super::HISTORY_STATS_BUDGET;
use switchboard_dials::{
    CompiledQuery, ConnectionEvent, Dial, DialOutcome, HistoryEntry, HistoryPage, ImportedLog,
    MatchCount, OpStats,
};

/// One dial as a row of the live table: everything but the request and response bodies and the
/// error text. Shape: `{ seq, id, phone, call_id, session, caller, callee, endpoint, op, start_ms,
/// duration_ms, outcome, slow, has_error, spec_findings }` (times in epoch ms, durations in ms).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct DialRow {
    /// Its place in the log's timeline (history pages and streamed rows share it; 0 for an
    /// imported capture's row before it is paged, where it is the line's place).
    #[ts(type = "number")]
    pub seq: u64,
    /// Dial id (the ifp/1 event's `dedup` key).
    pub id: Arc<str>,
    /// The phone that reported it (`dev_...`).
    pub phone: Arc<str>,
    /// The request's `callId` (empty when none).
    pub call_id: Arc<str>,
    /// The ifp/1 `session` that carried it (empty when unknown).
    pub session: Arc<str>,
    /// The caller's extension id.
    pub caller: Arc<str>,
    /// The callee's extension id.
    pub callee: Arc<str>,
    /// The endpoint dialed.
    pub endpoint: Arc<str>,
    /// The op.
    pub op: Arc<str>,
    /// Start, epoch milliseconds (UTC).
    #[ts(type = "number")]
    pub start_ms: i64,
    /// Duration, milliseconds.
    #[ts(type = "number")]
    pub duration_ms: u64,
    /// How it ended.
    pub outcome: DialOutcome,
    /// Over one second (`phone-line.md`, "Good neighbour notes").
    pub slow: bool,
    /// Whether the dial carries an error text.
    pub has_error: bool,
    /// How many ways the dial breaks `phone-line.md` (0: to spec); the row's mark
    /// ([`Dial::spec_findings`]; the inspector lists them with `dial_conformance`).
    pub spec_findings: u32,
}

impl From<&Dial> for DialRow {
    fn from(d: &Dial) -> Self {
        Self {
            seq: d.seq.0,
            id: Arc::clone(&d.id),
            phone: Arc::clone(&d.phone),
            call_id: Arc::clone(&d.call_id),
            session: Arc::clone(&d.session),
            caller: Arc::clone(&d.caller),
            callee: Arc::clone(&d.callee),
            endpoint: Arc::clone(&d.endpoint),
            op: Arc::clone(&d.op),
            start_ms: d.start_ms,
            duration_ms: d.duration_ms,
            outcome: d.outcome,
            slow: d.slow,
            has_error: d.error.is_some(),
            spec_findings: d.spec_findings(),
        }
    }
}

/// One row of a history page: a dial or a connection event, tagged by `kind`
/// (`{ kind: "dial", ...DialRow }`, `{ kind: "connection", ...ConnectionEvent }`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[ts(export)]
pub enum HistoryRow {
    /// A dial (no bodies: fetch them with `dials_get`).
    Dial(DialRow),
    /// A connection event.
    Connection(ConnectionEvent),
}

impl HistoryRow {
    /// The row's place in the timeline.
    pub fn seq(&self) -> u64 {
        match self {
            HistoryRow::Dial(d) => d.seq,
            HistoryRow::Connection(c) => c.seq,
        }
    }
}

impl From<&HistoryEntry> for HistoryRow {
    fn from(e: &HistoryEntry) -> Self {
        match e {
            HistoryEntry::Dial(d) => HistoryRow::Dial(DialRow::from(&**d)),
            HistoryEntry::Connection(c) => HistoryRow::Connection(c.clone()),
        }
    }
}

/// The answer of `dials_history` and `dials_follow`: a page of the timeline.
///
/// Shape: `{ rows, next, matched, oldest_ms, newest_seq, filter, skipped }`. `rows` are newest first for
/// `dials_history` and oldest first for `dials_follow`. `next` is the cursor of the following
/// (older) page, `null` when there is nothing more; a page may have fewer rows than asked and a
/// `next` when the search stopped at its time budget (ask `next` to go on). `matched` is how
/// many rows match in all (`exact` false: an estimate), `null` when not asked. `oldest_ms` is
/// how far back the history goes (the oldest row held or stored, epoch ms). `newest_seq` is
/// the newest row's `seq` when the page was read: streamed rows above it are new.
/// `filter` is the filter line, canonical. `skipped` is how many matching rows a seek
/// (`HistoryQuery::skip`) passed over below the cursor before `rows` (0 without one; fewer than
/// asked when the history ended first or the seek ran out of time).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct DialHistoryPage {
    /// The rows.
    pub rows: Vec<HistoryRow>,
    /// Cursor of the next (older) page.
    pub next: Option<String>,
    /// How many rows match in all.
    pub matched: Option<MatchCount>,
    /// How far back the history goes (epoch ms), when it holds anything.
    #[ts(type = "number | null")]
    pub oldest_ms: Option<i64>,
    /// The newest `seq` when read.
    #[ts(type = "number")]
    pub newest_seq: u64,
    /// The filter line, canonical.
    pub filter: String,
    /// Matching rows a seek passed over before `rows`.
    #[ts(type = "number")]
    pub skipped: u64,
}

impl DialHistoryPage {
    /// The page the window gets for a page of the history (rows as the window shows them).
    pub fn of(page: &HistoryPage) -> Self {
        Self {
            rows: page.entries.iter().map(HistoryRow::from).collect(),
            next: page.next.clone(),
            matched: page.matched,
            oldest_ms: page.oldest_ms,
            newest_seq: page.newest_seq,
            filter: page.filter.clone(),
            skipped: page.skipped,
        }
    }
}

/// The answer of `dials_history_stats`: per-op stats over the whole history matching a filter
/// line. Shape: `{ ops, dials, complete, filter }`: `ops` sorted by op (as `dials_stats`),
/// `dials` how many dials they count, `complete` false when the time allowed
/// ([`HISTORY_STATS_BUDGET`]) ran out and they count the newest matching dials only, `filter`
/// the line, canonical.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
#[ts(export)]
pub struct HistoryStats {
    /// Stats per op.
    pub ops: Vec<OpStats>,
    /// Dials counted.
    #[ts(type = "number")]
    pub dials: u64,
    /// Whether every matching dial was counted.
    pub complete: bool,
    /// The filter line, canonical.
    pub filter: String,
}

impl HistoryStats {
    /// The stats of an imported capture (or an opened bundle's dials) over `query`.
    pub fn of_capture(log: &ImportedLog, query: &CompiledQuery) -> Self {
        let (ops, dials) = log.line_stats(query);
        Self {
            ops,
            dials,
            complete: true,
            filter: query.line.clone(),
        }
    }
}
