//! The whole dial history as one timeline: dials and connection events, newest first, paged by
//! a cursor, filtered by a filter line ([`super::filter`]).
//!
//! Every row of the timeline has a sequence number ([`Seq`](super::record::Seq)): the log gives
//! dials and connection events one increasing number on arrival, and a stored row keeps it as
//! its SQLite rowid. Pages are in that order, newest (highest) first; a page's `next` cursor asks
//! for the rows below its last one, so a page never repeats or skips a row while new ones
//! arrive (unlike an offset). The in-memory ring is only a cache of the newest rows: stored rows
//! are read from SQLite (`store::history`), `transient` dials (never stored) and rows not yet
//! written from the ring, and the two are merged by sequence number.
//!
//! **Connection events** ([`ConnectionEvent`]: connected after hello, disconnected with why,
//! pairing, unpaired) are kept 7 days (the `standard` label's age, the shortest of the stored
//! dials' retentions) and pruned with the dials.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::filter::CompiledQuery;
use super::record::Dial;

/// How long a connection event is kept: the `standard` retention's 7 days, the shortest age of
/// any stored dial.
pub const CONNECTION_EVENT_MAX_AGE_MS: i64 = 7 * 24 * 60 * 60 * 1000;

/// Rows in a page when the query gives no `limit`.
pub const DEFAULT_PAGE: u32 = 200;
/// Most rows in one page.
pub const MAX_PAGE: u32 = 2000;

/// What happened to a phone's connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
#[ts(export)]
pub enum ConnectionKind {
    /// A paired phone connected and said a valid `control.hello`.
    Connected,
    /// A connected phone went away (`detail` says why).
    Disconnected,
    /// A pairing waits for both confirmations (`detail`: the verification code).
    PairingPending,
    /// A phone was paired.
    Paired,
    /// A pending pairing ended without being paired (`detail` says why).
    PairingEnded,
    /// The phone was unpaired on the desktop.
    Unpaired,
}

impl ConnectionKind {
    /// Every kind.
    pub const ALL: [ConnectionKind; 6] = [
        ConnectionKind::Connected,
        ConnectionKind::Disconnected,
        ConnectionKind::PairingPending,
        ConnectionKind::Paired,
        ConnectionKind::PairingEnded,
        ConnectionKind::Unpaired,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectionKind::Connected => "connected",
            ConnectionKind::Disconnected => "disconnected",
            ConnectionKind::PairingPending => "pairing_pending",
            ConnectionKind::Paired => "paired",
            ConnectionKind::PairingEnded => "pairing_ended",
            ConnectionKind::Unpaired => "unpaired",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// One connection event of the timeline. Shape: `{ seq, phone, label, at_ms, event, detail }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct ConnectionEvent {
    /// Its place in the timeline (0 until the log holds it).
    #[ts(type = "number")]
    pub seq: u64,
    /// The phone's device id (`dev_...`; for a pairing, as the phone gave it, not yet trusted).
    pub phone: String,
    /// The phone's label (as paired, or as it asked to be paired).
    pub label: String,
    /// When, epoch milliseconds (UTC).
    #[ts(type = "number")]
    pub at_ms: i64,
    /// What happened.
    pub event: ConnectionKind,
    /// Details in words: the address and ifp/1 version, why it disconnected, why a pairing
    /// ended, the verification code of a pending pairing.
    pub detail: String,
}

/// One history query: a filter line, a cursor, a page size.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(default)]
#[ts(export)]
pub struct HistoryQuery {
    /// The filter line (`docs/dial-filter.md`); empty for everything.
    pub filter: String,
    /// The `next` of the page before, for the rows after it (older); none for the first page.
    #[ts(optional)]
    pub cursor: Option<String>,
    /// Rows in the page (default 200, at most 2000).
    #[ts(optional)]
    pub limit: Option<u32>,
    /// Whether to count the matching rows (default true; a page after the first can skip it).
    #[ts(optional)]
    pub count: Option<bool>,
    /// A seek: matching rows below the cursor to pass over before the page starts (default 0,
    /// at most [`MAX_SKIP`]). The window asks it to show rows far down the table without
    /// reading every page above them; the page says how many it passed over (fewer when the
    /// history ends first).
    #[ts(optional)]
    pub skip: Option<u32>,
}

/// Most rows one seek ([`HistoryQuery::skip`]) passes over.
pub const MAX_SKIP: u32 = 2_000_000;

/// How many rows match: exact, or an estimate when counting them all would take too long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct MatchCount {
    /// The count (or the estimate).
    #[ts(type = "number")]
    pub count: u64,
    /// `true`: exactly this many. `false`: an estimate from the part of the history counted
    /// within the time allowed (`count` scaled by the share of the history that part holds).
    pub exact: bool,
}

/// One row of a history page, as the core returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HistoryEntry {
    /// A dial ([`Dial::seq`] is its place).
    Dial(Arc<Dial>),
    /// A connection event.
    Connection(ConnectionEvent),
}

impl HistoryEntry {
    /// The row's place in the timeline.
    pub fn seq(&self) -> u64 {
        match self {
            HistoryEntry::Dial(d) => d.seq.0,
            HistoryEntry::Connection(c) => c.seq,
        }
    }
}

/// A page of history, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryPage {
    /// The rows, newest first.
    pub entries: Vec<HistoryEntry>,
    /// The cursor for the next (older) page; `None` when there is nothing older to look at.
    /// A page may hold fewer rows than asked and still have a `next`: the search stopped at its
    /// time budget; asking for `next` goes on where it stopped.
    pub next: Option<String>,
    /// How many rows match in all (when asked).
    pub matched: Option<MatchCount>,
    /// The oldest time the history holds (epoch ms of the oldest stored or held row), when any.
    pub oldest_ms: Option<i64>,
    /// The newest sequence number when the page was read: streamed rows above it are new.
    pub newest_seq: u64,
    /// The filter line as parsed, canonical.
    pub filter: String,
    /// Matching rows the seek passed over below the cursor before `entries` ([`HistoryQuery::skip`];
    /// 0 without one): fewer than asked when the history ended first or the seek ran out of
    /// its time ([`SEEK_BUDGET`]); `entries` then start right after the ones passed over.
    pub skipped: u64,
}

/// How long one seek ([`HistoryQuery::skip`]) walks before it answers with the rows where it
/// got to (saying how many it passed over).
pub const SEEK_BUDGET: std::time::Duration = std::time::Duration::from_secs(5);

/// A cursor that no history page gave (a page's `next` is `s<seq>`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cursor {0:?} is not one a history page gave")]
pub struct BadCursor(pub String);

/// The words of a [`BadCursor`], as an `invalid_input` answer carries them.
impl From<BadCursor> for String {
    fn from(e: BadCursor) -> Self {
        e.to_string()
    }
}

/// Parses a cursor (`s<seq>`): rows with a lower sequence number come next.
///
/// # Errors
/// [`BadCursor`] naming the cursor when it is not one this log gave.
pub fn parse_cursor(c: &str) -> Result<u64, BadCursor> {
    c.strip_prefix('s')
        .and_then(|n| n.parse::<u64>().ok())
        .ok_or_else(|| BadCursor(c.to_string()))
}

/// The cursor text of "rows below `seq`".
pub fn cursor_of(seq: u64) -> String {
    format!("s{seq}")
}

/// A seek ([`HistoryQuery::skip`]): walks the pages below `cursor` with `page(cursor, limit)`
/// ([`MAX_PAGE`] rows at a time, no count) until `skip` matching rows are passed over or
/// [`SEEK_BUDGET`] is spent, and returns the cursor after them with how many it passed over
/// (exact, also when it stopped early). A history that ends within the rows to pass over gives
/// the cursor `s0` (nothing below it).
///
/// # Errors
/// The first error of `page`.
pub async fn seek<E, F, Fut>(
    cursor: Option<String>,
    skip: u64,
    mut page: F,
) -> Result<(Option<String>, u64), E>
where
    F: FnMut(Option<String>, u32) -> Fut,
    Fut: std::future::Future<Output = Result<HistoryPage, E>>,
{
    let mut cursor = cursor;
    let mut skipped = 0u64;
    let started = std::time::Instant::now();
    // Bounded: each page passes over at most MAX_PAGE rows and moves its cursor down (or ends
    // the history), and the walk stops at its budget.
    while skipped < skip && started.elapsed() < SEEK_BUDGET {
        let want = (skip - skipped).min(u64::from(MAX_PAGE)) as u32;
        let p = page(cursor.clone(), want).await?;
        skipped += p.entries.len() as u64;
        match p.next {
            Some(next) => cursor = Some(next),
            None => {
                cursor = Some(cursor_of(0));
                break;
            }
        }
    }
    Ok((cursor, skipped))
}

/// Runs `q` over in-memory rows given newest first, below `before` (exclusive), taking at most
/// `limit`. Returns the rows and whether more matching rows may follow. Used for the ring's part
/// of a live page and for a whole imported capture.
pub(crate) fn page_in_memory<'a, I>(
    rows: I,
    q: &CompiledQuery,
    before: u64,
    limit: usize,
) -> (Vec<HistoryEntry>, bool)
where
    I: Iterator<Item = MemRow<'a>>,
{
    let mut out = Vec::new();
    for r in rows {
        if r.seq() >= before {
            continue;
        }
        if r.matches(q) {
            if out.len() == limit {
                return (out, true);
            }
            out.push(r.entry());
        }
    }
    (out, false)
}

/// Counts the in-memory rows matching `q`.
pub(crate) fn count_in_memory<'a, I>(rows: I, q: &CompiledQuery) -> u64
where
    I: Iterator<Item = MemRow<'a>>,
{
    rows.filter(|r| r.matches(q)).count() as u64
}

/// An in-memory row: a held dial or connection event.
#[derive(Clone, Copy)]
pub(crate) enum MemRow<'a> {
    Dial(&'a Arc<Dial>),
    Connection(&'a ConnectionEvent),
}

impl MemRow<'_> {
    pub(crate) fn seq(&self) -> u64 {
        match self {
            MemRow::Dial(d) => d.seq.0,
            MemRow::Connection(c) => c.seq,
        }
    }

    pub(crate) fn matches(&self, q: &CompiledQuery) -> bool {
        match self {
            MemRow::Dial(d) => q.matches_dial(d),
            MemRow::Connection(c) => q.matches_connection(&c.phone, c.at_ms),
        }
    }

    pub(crate) fn entry(&self) -> HistoryEntry {
        match self {
            MemRow::Dial(d) => HistoryEntry::Dial(Arc::clone(d)),
            MemRow::Connection(c) => HistoryEntry::Connection((*c).clone()),
        }
    }
}

/// Merges two lists of rows, each newest first, into one newest first, a row in both once
/// (by sequence number).
pub(crate) fn merge_newest_first(a: Vec<HistoryEntry>, b: Vec<HistoryEntry>) -> Vec<HistoryEntry> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => {
                if x.seq() == y.seq() {
                    b.next();
                    a.next()
                } else if x.seq() > y.seq() {
                    a.next()
                } else {
                    b.next()
                }
            }
            (Some(_), None) => a.next(),
            (None, Some(_)) => b.next(),
            (None, None) => None,
        };
        match next {
            Some(e) => out.push(e),
            None => return out,
        }
    }
}
