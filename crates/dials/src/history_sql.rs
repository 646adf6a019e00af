//! The SQLite side of a history page: stored dials and connection events matching a
//! [`CompiledQuery`](crate::filter::CompiledQuery), newest first, below a cursor, within a time
//! budget.
//!
//! A query with a term on the columns (fields, outcome, spec, kind, duration, time) is driven by
//! the column blocks ([`super::blocks`], [`Reader::scan_blocks`]): the blocks are read newest
//! first, a block a time term excludes is skipped unread, and only the rows passing every column
//! term are read whole. Positive `call:`/`session:` terms, free text whose column terms pass many
//! rows, and queries without column terms take the plans below (so does a version 3 file until its
//! blocks are written).
//!
//! Stored dials up to `indexed_upto` are searched with SQL: a *driver* gives candidate rowids
//! newest first (the full-text index `dial_fts` for a free-text term, the field index `dial_by` for
//! a `field:value`, `spec:broken` or `outcome:` term, else the `dials` table by rowid), the
//! columns' conditions (every field, outcome, spec, duration and time term, negated or not) are
//! SQL, and free-text and regex terms are checked in Rust on the rows read
//! ([`CompiledQuery::matches_dial`](crate::filter::CompiledQuery::matches_dial) — the same code as
//! the ring's, so both agree). Stored rows above `indexed_upto` that the ring no longer holds (a
//! backlog not indexed yet) are read and matched in Rust.
//!
//! The search is **one scan** of the driver, newest first
//! ([`Plan::scan_sql`](plan::Plan::scan_sql)): every driver row reaches Rust as `(seq, flag)` (the
//! columns' conditions as one SQL flag), and only the flagged rows are read whole. It stops at
//! [`PAGE_BUDGET`] (SQLite's progress handler interrupts it, once it has read a thousand rows, so
//! every page moves on; a small history is read whole): the page then says where it stopped, and
//! the next page goes on from there. There are no windows of rowids: a free-text prefix query
//! (`word*`) makes FTS5 merge the doclists of every word with that prefix, which a window per query
//! repeated for each window. A free-text query first probes the newest
//! [`PROBE_ROWS`](scan::PROBE_ROWS) rows by rowid (its words checked in Rust): a common word fills
//! its page there and never pays that merge; a rare one goes on in the full-text index below the
//! probe.
//!
//! Counting (the first page only): the same scan goes on past the page, counting the flagged rows,
//! to [`COUNT_BUDGET`] after the start; past it the count is an estimate (the matches counted,
//! scaled by the share of the rowid range read), labelled so (`exact: false`: the view says "about
//! N"). Terms checked in Rust (regex, negated free text) are counted by reading the rows, within
//! the same budget.
//!
//! The parts, one concept a file: [`plan`] turns a query into SQL (driver and conditions),
//! [`deadline`] bounds a statement in time, [`scan`] reads a driver's rows, [`cols`] reads the
//! column blocks instead, [`page`] puts a page and its count together, [`stats`] tallies per-op
//! stats the same way.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::Connection;

use super::history::{ConnectionEvent, ConnectionKind, HistoryEntry, MatchCount};
use super::store::{self, DIAL_COLS};
use super::DialLogError;

mod cols;
mod deadline;
mod page;
mod plan;
mod scan;
mod stats;

/// Longest a page's search runs before it returns what it found and where it stopped.
pub(crate) const PAGE_BUDGET: Duration = Duration::from_millis(50);
/// Longest a page and its count run together (from the page's start) before the count is
/// given as an estimate.
pub(crate) const COUNT_BUDGET: Duration = Duration::from_millis(70);

/// What SQLite answers for a page.
#[derive(Debug, Default)]
pub(crate) struct StoredPart {
    /// Matching stored rows, newest first, at most the page's limit.
    pub entries: Vec<HistoryEntry>,
    /// Whether more matching rows may follow below the last.
    pub more: bool,
    /// When the search stopped at its time budget: rows below this sequence number were not
    /// searched.
    pub stopped_at: Option<u64>,
    /// The stored rows matching (when asked).
    pub count: MatchCount,
    /// The oldest stored time.
    pub oldest_ms: Option<i64>,
}

impl Default for MatchCount {
    fn default() -> Self {
        Self {
            count: 0,
            exact: true,
        }
    }
}

/// Read connections to the dial store, opened on demand and reused.
pub(crate) struct Reader {
    pub(crate) path: PathBuf,
    pub(crate) pool: Mutex<Vec<Connection>>,
    pub(crate) writer: Arc<store::WriterShared>,
}

impl Reader {
    fn conn(&self) -> Result<Connection, DialLogError> {
        if let Some(c) = switchboard_wire::sync::lock(&self.pool).pop() {
            return Ok(c);
        }
        let st = |e: rusqlite::Error| {
            DialLogError::Storage(format!("opening {} to read: {e}", self.path.display()))
        };
        let c = Connection::open_with_flags(
            &self.path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(st)?;
        c.pragma_update(None, "cache_size", -16 * 1024)
            .map_err(st)?;
        c.busy_timeout(Duration::from_secs(2)).map_err(st)?;
        Ok(c)
    }

    fn give_back(&self, c: Connection) {
        let mut pool = switchboard_wire::sync::lock(&self.pool);
        if pool.len() < 4 {
            pool.push(c);
        }
    }

    /// The stored dial with sequence number `seq` (its rowid), if the file holds it (as a row or
    /// in the journal).
    pub(crate) fn dial_at(&self, seq: u64) -> Result<Option<crate::Dial>, DialLogError> {
        let conn = self.conn()?;
        let r = (|| {
            let st = |e: rusqlite::Error| {
                DialLogError::Storage(format!(
                    "reading dial {seq} of {}: {e}",
                    self.path.display()
                ))
            };
            let mut stmt = conn
                .prepare_cached(&format!(
                    "SELECT {DIAL_COLS} FROM dials d WHERE d.rowid = ?1"
                ))
                .map_err(st)?;
            let mut rows = stmt
                .query([i64::try_from(seq).unwrap_or(i64::MAX)])
                .map_err(st)?;
            match rows.next().map_err(st)? {
                Some(r) => Ok(Some(store::dial_from_row(r, &self.path)?)),
                // Committed during a flood and not moved into rows yet.
                None => store::journal::dial_at(&conn, &self.path, seq),
            }
        })();
        self.give_back(conn);
        r
    }

    /// Whether every stored dial is a row and indexed (for benches and tests that wait for it).
    pub(crate) fn indexed_all(&self) -> Result<bool, DialLogError> {
        let conn = self.conn()?;
        let r = conn
            .query_row(
                "SELECT max(coalesce((SELECT max(rowid) FROM dials), 0),
                            coalesce((SELECT max(last) FROM dial_journal), 0))",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map(|m| {
                let m = u64::try_from(m).unwrap_or(0);
                m <= self.writer.indexed_upto.load(Ordering::Acquire)
                    && m <= self.writer.cols_upto.load(Ordering::Acquire)
            })
            .map_err(|e| DialLogError::Storage(e.to_string()));
        self.give_back(conn);
        r
    }
}

fn conn_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ConnectionEvent> {
    let event: String = r.get(4)?;
    Ok(ConnectionEvent {
        seq: u64::try_from(r.get::<_, i64>(0)?).unwrap_or(0),
        phone: r.get(1)?,
        label: r.get(2)?,
        at_ms: r.get(3)?,
        event: ConnectionKind::parse(&event).unwrap_or(ConnectionKind::Disconnected),
        detail: r.get(5)?,
    })
}

/// The oldest stored time, as the filter's time terms judge it: the first stored dials' arrival
/// (their start when stored before arrivals were kept; the first 1000 looked at, as the older
/// rows' starts are about in arrival order) and the first connection event.
fn oldest(conn: &Connection) -> rusqlite::Result<Option<i64>> {
    conn.query_row(
        "SELECT min(t) FROM (
            SELECT min(t) AS t FROM (
                SELECT coalesce(arrived_ms, start_ms) AS t FROM dials ORDER BY rowid LIMIT 1000)
            UNION ALL SELECT min(at_ms) FROM conn_events)",
        [],
        |r| r.get(0),
    )
}
