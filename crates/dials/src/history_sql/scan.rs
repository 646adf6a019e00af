//! One scan of a driver ([`Plan`]), newest first: the page's dials, whether more follow, the
//! count, and where the deadline stopped it. The flagged rows are read whole and checked in Rust
//! ([`CompiledQuery::matches_dial`], the ring's own code, so the ring and the store agree).

use std::sync::Arc;
use std::time::Instant;

use rusqlite::Connection;

use super::deadline::interrupted;
#[cfg(doc)]
use super::deadline::{PAGE_MIN_ROWS, SMALL_HISTORY_ROWS};
use super::plan::Plan;
#[cfg(doc)]
use super::PAGE_BUDGET;
use super::{Reader, COUNT_BUDGET};
use crate::filter::CompiledQuery;
use crate::history::HistoryEntry;
use crate::store::{self, DIAL_COLS};
use crate::DialLogError;

/// Why a scan's read of one whole row gave no row.
pub(super) enum Fetch {
    /// The scan's deadline interrupted it.
    Interrupted,
    /// SQLite failed, or the row cannot be read.
    Failed(DialLogError),
}

/// Reads stored row `seq` whole with `fetch` (`SELECT {DIAL_COLS} FROM dials d WHERE d.rowid =
/// ?1`): `Ok(None)` when it is gone since (retention, clear), [`Fetch::Interrupted`] when the
/// scan's deadline stopped the read; `st` words SQLite's errors.
pub(super) fn fetch_dial(
    fetch: &mut rusqlite::CachedStatement<'_>,
    seq: u64,
    path: &std::path::Path,
    st: impl Fn(rusqlite::Error) -> DialLogError,
) -> Result<Option<crate::Dial>, Fetch> {
    let seq_i = i64::try_from(seq).unwrap_or(i64::MAX);
    match fetch.query([seq_i]) {
        Ok(mut one) => match one.next() {
            Ok(Some(row)) => store::dial_from_row(row, path)
                .map(Some)
                .map_err(Fetch::Failed),
            Ok(None) => Ok(None),
            Err(e) if interrupted(&e) => Err(Fetch::Interrupted),
            Err(e) => Err(Fetch::Failed(st(e))),
        },
        Err(e) if interrupted(&e) => Err(Fetch::Interrupted),
        Err(e) => Err(Fetch::Failed(st(e))),
    }
}

/// What one scan of a driver found ([`Reader::scan`]).
#[derive(Default)]
pub(super) struct Scan {
    /// The page's matching dials, newest first.
    pub(super) dials: Vec<HistoryEntry>,
    /// Whether more matching rows follow the page's.
    pub(super) more: bool,
    /// Matching rows counted (when counting).
    pub(super) counted: u64,
    /// Where the scan stopped at its deadline (rows below were not read); `None`: it read to
    /// the end, or the page was full and nothing was counted.
    pub(super) reached: Option<u64>,
    /// A probe ([`PROBE_ROWS`]) that read its rows without filling the page: the lowest
    /// sequence number it read.
    pub(super) probed_to: Option<u64>,
}

/// Newest rows a full-text query reads by rowid (checking its words in Rust) before it turns to
/// the full-text index: a common word fills its page from them, where FTS5 would first merge
/// the doclists of every word with that prefix (all of the history's rows, for a word in most
/// dials), a cost no deadline can cut short.
pub(super) const PROBE_ROWS: u64 = 1024;

impl Reader {
    /// Scans the driver's rows below `hi`, newest first: takes up to `room` matching dials for
    /// the page (one more tells `more`) and, when `counting`, counts the matching rows on to the
    /// end. Stops at [`PAGE_BUDGET`] while the page has room and at [`COUNT_BUDGET`] after
    /// (both from `started`), once [`PAGE_MIN_ROWS`] rows (a page) or one (a count) have been
    /// read (never in a small history, [`SMALL_HISTORY_ROWS`]); `reached` is then the lowest
    /// sequence number read (rows below it were not looked at). A `probe` stops after [`PROBE_ROWS`]
    /// rows while the page still has room (`probed_to`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn scan(
        &self,
        conn: &Connection,
        q: &CompiledQuery,
        p: &Plan,
        hi: u64,
        room: usize,
        counting: bool,
        started: Instant,
        probe: bool,
    ) -> Result<Scan, DialLogError> {
        let st = |e: rusqlite::Error| {
            DialLogError::Storage(format!("searching {}: {e}", self.path.display()))
        };
        let mut out = Scan::default();
        if hi <= 1 || (room == 0 && !counting) {
            return Ok(out);
        }
        let mut filling = room > 0;
        let deadline = self.scan_deadline(conn, started, filling)?;
        let mut stmt = conn.prepare_cached(&p.scan_sql()).map_err(st)?;
        let mut fetch = conn
            .prepare_cached(&format!(
                "SELECT {DIAL_COLS} FROM dials d WHERE d.rowid = ?1"
            ))
            .map_err(st)?;
        let params = p.scan_params(hi);
        let mut rows = stmt
            .query(rusqlite::params_from_iter(params.iter()))
            .map_err(st)?;
        // Counted by the flag alone, or only after the Rust check too.
        let check_to_count = p.rust_check && !p.sql_exact;
        let mut last = hi;
        let mut read = 0u64;
        loop {
            let r = match rows.next() {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(e) if interrupted(&e) => {
                    out.reached = Some(last);
                    break;
                }
                Err(e) => return Err(st(e)),
            };
            deadline.read_one();
            let seq = u64::try_from(r.get::<_, i64>(0).map_err(st)?).unwrap_or(0);
            let flag = r.get::<_, Option<i64>>(1).map_err(st)?.unwrap_or(0) != 0;
            if flag {
                let dial = if filling || (counting && check_to_count) {
                    // The deadline interrupts this statement too: `seq` is then not looked at
                    // (the scan stops above it).
                    match fetch_dial(&mut fetch, seq, &self.path, st) {
                        Ok(Some(d)) => Some(d),
                        // Deleted since (retention, clear): not a match any more.
                        Ok(None) => {
                            last = seq;
                            continue;
                        }
                        Err(Fetch::Interrupted) => {
                            out.reached = Some(last);
                            break;
                        }
                        Err(Fetch::Failed(e)) => return Err(e),
                    }
                } else {
                    None
                };
                let matches = match &dial {
                    Some(d) => !p.rust_check || q.matches_dial(d),
                    None => true,
                };
                if counting && (matches || !check_to_count) {
                    out.counted += 1;
                }
                if filling && matches {
                    if out.dials.len() == room {
                        out.more = true;
                        filling = false;
                        if !counting {
                            break;
                        }
                        deadline.extend(COUNT_BUDGET, 1);
                    } else if let Some(d) = dial {
                        out.dials.push(HistoryEntry::Dial(Arc::new(d)));
                    }
                }
            }
            last = seq;
            read += 1;
            if probe && filling && read >= PROBE_ROWS {
                out.probed_to = Some(last);
                break;
            }
            if deadline.passed() {
                out.reached = Some(last);
                break;
            }
        }
        if out.reached.is_some() && out.dials.len() == room {
            // Stopped looking for one more: there may be.
            out.more = true;
        }
        Ok(out)
    }
}
