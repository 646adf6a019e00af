//! A history page's stored part: the rows not indexed yet (matched in Rust), one scan of the
//! indexed rows (by the column blocks or by the plan's driver), the connection events, merged
//! newest first, with the count (exact, or an estimate once past
//! [`COUNT_BUDGET`](super::COUNT_BUDGET)).

use std::sync::Arc;
use std::time::Instant;

use rusqlite::Connection;

use super::plan::plan;
use super::scan::Scan;
use super::{conn_from_row, oldest, Reader, StoredPart};
use crate::filter::CompiledQuery;
use crate::history::{HistoryEntry, MatchCount};
use crate::store::{self, DIAL_COLS};
use crate::DialLogError;

impl Reader {
    /// The stored part of a page (see [`StoredPart`]): rows below `before`; SQL for rows up to
    /// `sql_upto`, Rust for those in `(sql_upto, gap_below)`.
    pub(crate) fn page(
        self: &Arc<Self>,
        q: &CompiledQuery,
        before: u64,
        limit: usize,
        count: bool,
        sql_upto: u64,
        gap_below: u64,
    ) -> Result<StoredPart, DialLogError> {
        let conn = self.conn()?;
        let r = self.page_on(&conn, q, before, limit, count, sql_upto, gap_below);
        self.give_back(conn);
        r
    }

    #[allow(clippy::too_many_arguments)]
    fn page_on(
        &self,
        conn: &Connection,
        q: &CompiledQuery,
        before: u64,
        limit: usize,
        count: bool,
        sql_upto: u64,
        gap_below: u64,
    ) -> Result<StoredPart, DialLogError> {
        let st = |e: rusqlite::Error| {
            DialLogError::Storage(format!("searching {}: {e}", self.path.display()))
        };
        let started = Instant::now();
        let mut out = StoredPart::default();
        let mut dials: Vec<HistoryEntry> = Vec::new();
        let mut more = false;
        if q.dials {
            // 1. Stored rows not indexed yet and not in the ring: matched in Rust.
            let gap_hi = gap_below.min(before);
            if gap_hi > sql_upto + 1 {
                // Journaled dials first: they are newer than every row (the writer's order).
                let mut journaled = Vec::new();
                store::journal::each_between(conn, &self.path, sql_upto, gap_hi, |d| {
                    if q.matches_dial(&d) {
                        journaled.push(d);
                    }
                })?;
                while let Some(d) = journaled.pop() {
                    if dials.len() == limit {
                        more = true;
                        break;
                    }
                    dials.push(HistoryEntry::Dial(Arc::new(d)));
                }
            }
            if gap_hi > sql_upto + 1 && !more {
                // Then the rows.
                let mut stmt = conn
                    .prepare_cached(&format!(
                        "SELECT {DIAL_COLS} FROM dials d WHERE d.rowid > ?1 AND d.rowid < ?2 \
                         ORDER BY d.rowid DESC"
                    ))
                    .map_err(st)?;
                let mut rows = stmt
                    .query(rusqlite::params![
                        i64::try_from(sql_upto).unwrap_or(i64::MAX),
                        i64::try_from(gap_hi).unwrap_or(i64::MAX)
                    ])
                    .map_err(st)?;
                while let Some(r) = rows.next().map_err(st)? {
                    let d = store::dial_from_row(r, &self.path)?;
                    if q.matches_dial(&d) {
                        if dials.len() == limit {
                            more = true;
                            break;
                        }
                        dials.push(HistoryEntry::Dial(Arc::new(d)));
                    }
                }
            }
            // 2. Indexed rows: one scan of the driver, newest first, to the page's deadline;
            //    counting from the top, on past the page to the count's deadline.
            let p = plan(q);
            let top = sql_upto + 1;
            let hi = before.min(top);
            let room = if dials.len() < limit && !more {
                limit - dials.len()
            } else {
                0
            };
            let counting = count && hi == top;
            let cols = self.block_filter(conn, q, &p, hi, sql_upto)?;
            let mut scan = if let Some(cf) = &cols {
                self.scan_blocks(conn, q, cf, hi, room, counting, started)?
            } else if p.fts && room > 0 {
                // A common word fills the page from the newest rows; a rare one goes on in the
                // full-text index below them.
                let mut a = self.scan(conn, q, &p.plain(), hi, room, counting, started, true)?;
                match a.probed_to {
                    Some(below) => {
                        let left = room - a.dials.len();
                        let mut b =
                            self.scan(conn, q, &p, below, left, counting, started, false)?;
                        a.dials.append(&mut b.dials);
                        Scan {
                            dials: a.dials,
                            more: b.more,
                            counted: a.counted + b.counted,
                            reached: b.reached,
                            probed_to: None,
                        }
                    }
                    None => a,
                }
            } else {
                self.scan(conn, q, &p, hi, room, counting, started, false)?
            };
            more |= scan.more;
            let found = scan.dials.len();
            dials.append(&mut scan.dials);
            if let Some(r) = scan.reached {
                if found < room {
                    out.stopped_at = Some(r);
                }
            }
            if count {
                let gap = self.count_gap(conn, q, sql_upto, gap_below)?;
                let whole = if counting {
                    scan
                } else if let Some(cf) = &cols {
                    self.scan_blocks(conn, q, cf, top, 0, true, started)?
                } else {
                    self.scan(conn, q, &p, top, 0, true, started, false)?
                };
                out.count = self.estimate(conn, whole.counted, whole.reached, top, gap)?;
                if !out.count.exact {
                    // A count cut short before it read a match (a loaded machine: the page
                    // itself took the budget) would scale nothing to "about 0" beside a full
                    // page: never estimate fewer than the matches this page already holds.
                    let seen = dials.len() as u64 + u64::from(more);
                    out.count.count = out.count.count.max(seen);
                }
            }
        }
        // 3. Connection events (few: 7 days of them), matched in Rust.
        let mut conns: Vec<HistoryEntry> = Vec::new();
        if q.connections {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT seq, phone, label, at_ms, event, detail FROM conn_events \
                     WHERE seq < ?1 ORDER BY seq DESC",
                )
                .map_err(st)?;
            let mut rows = stmt
                .query(rusqlite::params![i64::try_from(before).unwrap_or(i64::MAX)])
                .map_err(st)?;
            let mut n = 0u64;
            while let Some(r) = rows.next().map_err(st)? {
                let ev = conn_from_row(r).map_err(st)?;
                if !q.matches_connection(&ev.phone, ev.at_ms) {
                    continue;
                }
                n += 1;
                if conns.len() < limit {
                    conns.push(HistoryEntry::Connection(ev));
                } else {
                    more = true;
                    if !count {
                        break;
                    }
                }
            }
            if count && before == u64::MAX {
                out.count.count += n;
            } else if count {
                out.count.count += self.count_connections(conn, q).map_err(st)?;
            }
        }
        let mut entries = crate::history::merge_newest_first(dials, conns);
        if entries.len() > limit {
            entries.truncate(limit);
            more = true;
        }
        out.entries = entries;
        out.more = more;
        out.oldest_ms = oldest(conn).map_err(st)?;
        Ok(out)
    }

    fn count_connections(&self, conn: &Connection, q: &CompiledQuery) -> rusqlite::Result<u64> {
        let mut stmt =
            conn.prepare_cached("SELECT seq, phone, label, at_ms, event, detail FROM conn_events")?;
        let mut rows = stmt.query([])?;
        let mut n = 0;
        while let Some(r) = rows.next()? {
            let ev = conn_from_row(r)?;
            if q.matches_connection(&ev.phone, ev.at_ms) {
                n += 1;
            }
        }
        Ok(n)
    }

    /// The count of a scan from `top`: exact when it reached the end, else scaled by the share
    /// of the stored rowids it covered. `gap` (rows not indexed, counted in Rust) is added.
    fn estimate(
        &self,
        conn: &Connection,
        counted: u64,
        reached: Option<u64>,
        top: u64,
        gap: u64,
    ) -> Result<MatchCount, DialLogError> {
        let Some(reached) = reached else {
            return Ok(MatchCount {
                count: gap + counted,
                exact: true,
            });
        };
        let floor: u64 = conn
            .query_row("SELECT min(rowid) FROM dials", [], |r| {
                r.get::<_, Option<i64>>(0)
            })
            .map_err(|e| {
                DialLogError::Storage(format!("counting in {}: {e}", self.path.display()))
            })?
            .unwrap_or(1)
            .try_into()
            .unwrap_or(1);
        let span = top.saturating_sub(floor).max(1);
        let done = top.saturating_sub(reached).max(1).min(span);
        let est = (counted as f64 * span as f64 / done as f64).round() as u64;
        Ok(MatchCount {
            count: gap + est,
            exact: false,
        })
    }

    /// Counts the stored rows in `(sql_upto, gap_below)` (not indexed, not held) matching `q`,
    /// read and matched in Rust.
    fn count_gap(
        &self,
        conn: &Connection,
        q: &CompiledQuery,
        sql_upto: u64,
        gap_below: u64,
    ) -> Result<u64, DialLogError> {
        let mut n = 0u64;
        self.each_gap_match(conn, q, sql_upto, gap_below, "counting in", |_| n += 1)?;
        Ok(n)
    }

    /// Calls `f` with each stored dial in `(sql_upto, gap_below)` (written, not indexed yet,
    /// not in the ring: rows, then the journal's) that matches `q`, checked in Rust. `doing`
    /// names the work in errors.
    pub(super) fn each_gap_match(
        &self,
        conn: &Connection,
        q: &CompiledQuery,
        sql_upto: u64,
        gap_below: u64,
        doing: &str,
        mut f: impl FnMut(&crate::Dial),
    ) -> Result<(), DialLogError> {
        if gap_below <= sql_upto + 1 {
            return Ok(());
        }
        let st = |e: rusqlite::Error| {
            DialLogError::Storage(format!("{doing} {}: {e}", self.path.display()))
        };
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {DIAL_COLS} FROM dials d WHERE d.rowid > ?1 AND d.rowid < ?2"
            ))
            .map_err(st)?;
        let mut rows = stmt
            .query(rusqlite::params![
                i64::try_from(sql_upto).unwrap_or(i64::MAX),
                i64::try_from(gap_below).unwrap_or(i64::MAX)
            ])
            .map_err(st)?;
        while let Some(r) = rows.next().map_err(st)? {
            let d = store::dial_from_row(r, &self.path)?;
            if q.matches_dial(&d) {
                f(&d);
            }
        }
        // Journaled dials come after every row (the writer's order), still in arrival order.
        store::journal::each_between(conn, &self.path, sql_upto, gap_below, |d| {
            if q.matches_dial(&d) {
                f(&d);
            }
        })
    }
}
