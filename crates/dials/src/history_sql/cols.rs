//! The search driven by the column blocks ([`crate::blocks`]): a block the time terms exclude is
//! skipped unread, and only the rows passing every column term are read whole, which beats any
//! index when the column terms pass few rows.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use rusqlite::Connection;

use super::deadline::interrupted;
use super::plan::Plan;
use super::scan::{fetch_dial, Fetch, Scan};
use super::{Reader, COUNT_BUDGET};
use crate::blocks::{self, ColFilter, BLOCK_SHIFT};
use crate::filter::{CAtom, CompiledQuery, TextField};
use crate::history::HistoryEntry;
use crate::store::{self, DIAL_COLS};
use crate::DialLogError;

/// A free-text query is driven by the column blocks only when its column terms pass at most
/// one row in this many of the newest (else by the full-text index).
const DENSE_ONE_IN: u64 = 32;

impl Reader {
    /// The column blocks' filter of `q` when the blocks should drive its search below `hi`
    /// (`None`: the version 3 plan, [`plan`](super::plan::plan)): every stored row up to
    /// `sql_upto` has its block, no positive `call:`/`session:` term (`dial_by` finds those few rows at once), the
    /// query has a column term, and, with a positive free-text term, the column terms pass at
    /// most one row in [`DENSE_ONE_IN`] of the newest (else the full-text index, which reads
    /// only the rows with the words, is the better driver).
    pub(super) fn block_filter(
        &self,
        conn: &Connection,
        q: &CompiledQuery,
        p: &Plan,
        hi: u64,
        sql_upto: u64,
    ) -> Result<Option<ColFilter>, DialLogError> {
        if self.writer.cols_upto.load(Ordering::Acquire) < sql_upto {
            return Ok(None);
        }
        let follows = q.terms.iter().any(|t| {
            !t.negated
                && matches!(
                    t.atom,
                    CAtom::Field(TextField::Call | TextField::Session, _)
                )
        });
        if follows {
            return Ok(None);
        }
        let st = |e: rusqlite::Error| {
            DialLogError::Storage(format!("searching {}: {e}", self.path.display()))
        };
        let cf = ColFilter::new(conn, q).map_err(st)?;
        if !cf.has_tests() {
            return Ok(None);
        }
        if p.fts {
            // The newest blocks below `hi`: how many of their rows pass the column terms.
            let mut stmt = conn
                .prepare_cached(
                    "SELECT block, base_ms, rows FROM dial_blocks WHERE block <= ?1 \
                     ORDER BY block DESC LIMIT 8",
                )
                .map_err(st)?;
            let top_block = i64::try_from(hi.saturating_sub(1) >> BLOCK_SHIFT).unwrap_or(i64::MAX);
            let mut rows = stmt.query([top_block]).map_err(st)?;
            let (mut seen, mut pass) = (0u64, 0u64);
            while let Some(r) = rows.next().map_err(st)? {
                let block = u64::try_from(r.get::<_, i64>(0).map_err(st)?).unwrap_or(0);
                let base: i64 = r.get(1).map_err(st)?;
                let blob = r.get_ref(2).map_err(st)?.as_blob().unwrap_or(&[]);
                for c in blocks::decode(block, base, blob).unwrap_or_default() {
                    if c.seq < hi {
                        seen += 1;
                        pass += u64::from(cf.matches(&c));
                    }
                }
                if seen >= 1024 {
                    break;
                }
            }
            if pass.saturating_mul(DENSE_ONE_IN) > seen {
                return Ok(None);
            }
        }
        Ok(Some(cf))
    }

    /// [`Reader::scan`] driven by the column blocks: reads the blocks below `hi`, newest first
    /// (a block whose start range the time terms exclude is skipped unread), and reads whole
    /// only the rows that pass every column term (for the page, and to check the terms the
    /// blocks cannot: free text, regex, `call:`, `session:`). With no such term, a count
    /// counts from the blocks alone. Same budgets and answer as [`Reader::scan`].
    #[allow(clippy::too_many_arguments)]
    pub(super) fn scan_blocks(
        &self,
        conn: &Connection,
        q: &CompiledQuery,
        cf: &ColFilter,
        hi: u64,
        room: usize,
        counting: bool,
        started: Instant,
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
        let mut stmt = conn
            .prepare_cached(
                "SELECT block, base_ms, min_ms, max_ms, rows FROM dial_blocks WHERE block <= ?1 \
                 ORDER BY block DESC",
            )
            .map_err(st)?;
        let mut fetch = conn
            .prepare_cached(&format!(
                "SELECT {DIAL_COLS} FROM dials d WHERE d.rowid = ?1"
            ))
            .map_err(st)?;
        let mut range = conn
            .prepare_cached(&format!(
                "SELECT {DIAL_COLS} FROM dials d WHERE d.rowid >= ?1 AND d.rowid < ?2 \
                 ORDER BY d.rowid DESC"
            ))
            .map_err(st)?;
        let top_block = i64::try_from((hi - 1) >> BLOCK_SHIFT).unwrap_or(i64::MAX);
        let mut blocks = stmt.query([top_block]).map_err(st)?;
        // Rows from `last` up to `hi` have been looked at.
        let mut last = hi;
        'blocks: loop {
            let r = match blocks.next() {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(e) if interrupted(&e) => {
                    out.reached = Some(last);
                    break;
                }
                Err(e) => return Err(st(e)),
            };
            let block = u64::try_from(r.get::<_, i64>(0).map_err(st)?).unwrap_or(0);
            let block_lo = (block << BLOCK_SHIFT).max(1);
            let (min_ms, max_ms): (i64, i64) = (r.get(2).map_err(st)?, r.get(3).map_err(st)?);
            if cf.may_match_block(min_ms, max_ms) {
                let base: i64 = r.get(1).map_err(st)?;
                let blob = r.get_ref(4).map_err(st)?.as_blob().unwrap_or(&[]);
                // Candidates, newest first: `(seq, whole row when already read)`.
                let cands: Vec<(u64, Option<crate::Dial>)> = match blocks::decode(block, base, blob)
                {
                    Some(rows) => rows
                        .iter()
                        .rev()
                        .filter(|c| c.seq < last)
                        .inspect(|_| deadline.read_one())
                        .filter(|c| cf.matches(c))
                        .map(|c| (c.seq, None))
                        .collect(),
                    None => {
                        // A damaged block: its rows are read whole and checked in Rust.
                        let lo = i64::try_from(block_lo).unwrap_or(i64::MAX);
                        let hi_i = i64::try_from(last).unwrap_or(i64::MAX);
                        let mut rows = range.query([lo, hi_i]).map_err(st)?;
                        let mut v = Vec::new();
                        while let Some(row) = rows.next().map_err(st)? {
                            let d = store::dial_from_row(row, &self.path)?;
                            deadline.read_one();
                            v.push((d.seq.0, Some(d)));
                        }
                        v
                    }
                };
                for (seq, held) in cands {
                    let fetched = filling || (counting && cf.needs_row) || held.is_some();
                    let matches = if fetched {
                        let d = match held {
                            Some(d) => d,
                            None => {
                                match fetch_dial(&mut fetch, seq, &self.path, st) {
                                    Ok(Some(d)) => d,
                                    // Deleted since (retention, clear): not a match any more.
                                    Ok(None) => {
                                        last = seq;
                                        continue;
                                    }
                                    Err(Fetch::Interrupted) => {
                                        out.reached = Some(last);
                                        break 'blocks;
                                    }
                                    Err(Fetch::Failed(e)) => return Err(e),
                                }
                            }
                        };
                        if q.matches_dial(&d) {
                            Some(d)
                        } else {
                            None
                        }
                    } else {
                        // Counted from the block alone: no term needs the row.
                        None
                    };
                    let hit = matches.is_some() || !fetched;
                    if counting && hit {
                        out.counted += 1;
                    }
                    if filling && hit {
                        if out.dials.len() == room {
                            out.more = true;
                            filling = false;
                            if !counting {
                                return Ok(out);
                            }
                            deadline.extend(COUNT_BUDGET, 1);
                        } else if let Some(d) = matches {
                            out.dials.push(HistoryEntry::Dial(Arc::new(d)));
                        }
                    }
                    last = seq;
                    if deadline.passed() {
                        out.reached = Some(last);
                        break 'blocks;
                    }
                }
            }
            last = last.min(block_lo);
            if deadline.passed() {
                out.reached = Some(last);
                break;
            }
        }
        if out.reached.is_some() && out.dials.len() == room {
            out.more = true;
        }
        Ok(out)
    }
}
