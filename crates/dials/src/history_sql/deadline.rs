//! A time budget on SQLite statements: the progress handler interrupts a statement once its
//! deadline has passed (and enough rows were read that a page still moves on), so a page over a
//! large history answers in time and says where it stopped instead of blocking the view.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::{Reader, COUNT_BUDGET, PAGE_BUDGET};
use crate::DialLogError;

/// Whether `e` is SQLite's "interrupted" (the scan's deadline, [`Deadline`]).
pub(super) fn interrupted(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::OperationInterrupted
    )
}

/// A deadline on a connection's statements: SQLite's progress handler interrupts a statement
/// once the deadline has passed and at least `min_rows` rows have been read ([`PAGE_MIN_ROWS`]
/// for a page, so a page always moves on; one for a count; a small history,
/// [`SMALL_HISTORY_ROWS`], is always searched and counted whole). Removed when dropped.
pub(super) struct Deadline<'c> {
    conn: &'c Connection,
    /// Nanoseconds after `origin` the statement may run to.
    at_ns: Arc<std::sync::atomic::AtomicU64>,
    /// Rows read so far.
    read: Arc<std::sync::atomic::AtomicU64>,
    /// Rows to read before the deadline may stop the statement.
    min_rows: Arc<std::sync::atomic::AtomicU64>,
    origin: Instant,
}

/// Rows a page's scan reads before its deadline may stop it (a busy machine's scheduling must
/// not cut a page of common rows short); a count stops at its deadline after one.
pub(super) const PAGE_MIN_ROWS: u64 = 1024;

/// A history of at most this many stored rowids is searched and counted whole (no deadline).
pub(super) const SMALL_HISTORY_ROWS: u64 = 4096;

impl<'c> Deadline<'c> {
    pub(super) fn set(
        conn: &'c Connection,
        origin: Instant,
        after: Duration,
        min_rows: u64,
    ) -> Self {
        let at_ns = Arc::new(std::sync::atomic::AtomicU64::new(
            u64::try_from(after.as_nanos()).unwrap_or(u64::MAX),
        ));
        let read = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let min_rows = Arc::new(std::sync::atomic::AtomicU64::new(min_rows));
        let (at, n, min) = (Arc::clone(&at_ns), Arc::clone(&read), Arc::clone(&min_rows));
        conn.progress_handler(
            2000,
            Some(move || {
                n.load(Ordering::Relaxed) >= min.load(Ordering::Relaxed)
                    && u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
                        > at.load(Ordering::Relaxed)
            }),
        );
        Self {
            conn,
            at_ns,
            read,
            min_rows,
            origin,
        }
    }

    /// Moves the deadline to `after` the origin, to be kept once `min_rows` rows were read (a
    /// small history's scan keeps no deadline).
    pub(super) fn extend(&self, after: Duration, min_rows: u64) {
        let _ = self
            .min_rows
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |m| {
                (m != u64::MAX).then_some(min_rows)
            });
        self.at_ns.store(
            u64::try_from(after.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    /// Counts one row read.
    pub(super) fn read_one(&self) {
        self.read.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether the scan should stop now (as the progress handler judges).
    pub(super) fn passed(&self) -> bool {
        self.read.load(Ordering::Relaxed) >= self.min_rows.load(Ordering::Relaxed)
            && u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
                > self.at_ns.load(Ordering::Relaxed)
    }
}

impl Drop for Deadline<'_> {
    fn drop(&mut self) {
        self.conn.progress_handler(0, None::<fn() -> bool>);
    }
}

impl Reader {
    /// The deadline of a scan started at `started`: [`PAGE_BUDGET`] while the page has room
    /// (`filling`, at least [`PAGE_MIN_ROWS`] rows read), else [`COUNT_BUDGET`]; none for a
    /// small store.
    pub(super) fn scan_deadline<'c>(
        &self,
        conn: &'c Connection,
        started: Instant,
        filling: bool,
    ) -> Result<Deadline<'c>, DialLogError> {
        Ok(Deadline::set(
            conn,
            started,
            if filling { PAGE_BUDGET } else { COUNT_BUDGET },
            if self.small(conn)? {
                u64::MAX
            } else if filling {
                PAGE_MIN_ROWS
            } else {
                1
            },
        ))
    }

    /// Whether the stored rowids span at most [`SMALL_HISTORY_ROWS`].
    pub(super) fn small(&self, conn: &Connection) -> Result<bool, DialLogError> {
        // One min() or max() a statement: SQLite reads it off the b-tree's edge then (both in
        // one statement scan the table).
        let edge = |sql: &str| {
            conn.query_row(sql, [], |r| r.get::<_, Option<i64>>(0))
                .map(|v| v.unwrap_or(0))
                .map_err(|e| {
                    DialLogError::Storage(format!("searching {}: {e}", self.path.display()))
                })
        };
        let span = edge("SELECT max(rowid) FROM dials")? - edge("SELECT min(rowid) FROM dials")?;
        Ok(u64::try_from(span).unwrap_or(0) < SMALL_HISTORY_ROWS)
    }
}
