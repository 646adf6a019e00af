//! Per-op stats over the stored dials matching a query: the plan's driver joined to the stats'
//! columns only (op, outcome, duration, spec mark), so a tally over a large history reads
//! little; rows are read whole only when free text or a regex must be checked.

use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::deadline::{interrupted, Deadline};
use super::plan::plan;
use super::Reader;
use crate::filter::CompiledQuery;
use crate::store::{self, DIAL_COLS};
use crate::DialLogError;

impl Reader {
    /// Per-op stats of the stored dials matching `q` (SQL for rows up to `sql_upto`, Rust for
    /// those in `(sql_upto, gap_below)`), newest first, into `tally`, for at most `budget`.
    /// Reads only the stats' columns (op, outcome, duration, spec mark) unless the query has
    /// free text or a regex (then the flagged rows are read whole and checked). Returns whether
    /// every stored row was looked at (`false`: the budget ran out; the tally holds the newest
    /// ones).
    ///
    /// # Errors
    /// [`DialLogError::Storage`] when SQLite fails.
    pub(crate) fn stats(
        &self,
        q: &CompiledQuery,
        sql_upto: u64,
        gap_below: u64,
        budget: Duration,
        tally: &mut crate::StatsTally,
    ) -> Result<bool, DialLogError> {
        if !q.dials {
            return Ok(true);
        }
        let conn = self.conn()?;
        let r = self.stats_on(&conn, q, sql_upto, gap_below, budget, tally);
        self.give_back(conn);
        r
    }

    fn stats_on(
        &self,
        conn: &Connection,
        q: &CompiledQuery,
        sql_upto: u64,
        gap_below: u64,
        budget: Duration,
        tally: &mut crate::StatsTally,
    ) -> Result<bool, DialLogError> {
        let st = |e: rusqlite::Error| {
            DialLogError::Storage(format!("stats over {}: {e}", self.path.display()))
        };
        let started = Instant::now();
        // 1. Stored rows not indexed yet and not in the ring: matched in Rust (few: the writer
        //    indexes as soon as it is idle).
        self.each_gap_match(conn, q, sql_upto, gap_below, "stats over", |d| {
            tally.add_dial(d)
        })?;
        // 2. Indexed rows: the driver joined to the stats' columns, the flag for the SQL terms.
        let p = plan(q);
        let from = match p.seq_col {
            "f.rowid" => "dial_fts f JOIN dials d ON d.rowid = f.rowid WHERE dial_fts MATCH ?",
            "b.seq" => "dial_by b JOIN dials d ON d.rowid = b.seq WHERE b.key = ?",
            _ => "dials d WHERE 1",
        };
        let flag = if p.conds.is_empty() {
            "1".to_owned()
        } else {
            p.conds
                .iter()
                .map(|c| format!("({c})"))
                .collect::<Vec<_>>()
                .join(" AND ")
        };
        let sql = format!(
            "SELECT {0}, d.op, d.outcome, d.duration_ms, d.spec, {flag} FROM {from} AND {0} < ? \
             ORDER BY {0} DESC",
            p.seq_col
        );
        let deadline = Deadline::set(conn, started, budget, 1);
        let mut stmt = conn.prepare_cached(&sql).map_err(st)?;
        let mut fetch = conn
            .prepare_cached(&format!(
                "SELECT {DIAL_COLS} FROM dials d WHERE d.rowid = ?1"
            ))
            .map_err(st)?;
        let params = p.scan_params(sql_upto.saturating_add(1));
        let mut rows = stmt
            .query(rusqlite::params_from_iter(params.iter()))
            .map_err(st)?;
        loop {
            let r = match rows.next() {
                Ok(Some(r)) => r,
                Ok(None) => return Ok(true),
                Err(e) if interrupted(&e) => return Ok(false),
                Err(e) => return Err(st(e)),
            };
            deadline.read_one();
            if r.get::<_, Option<i64>>(5).map_err(st)?.unwrap_or(0) == 0 {
                continue;
            }
            if p.rust_check {
                let seq = r.get::<_, i64>(0).map_err(st)?;
                let mut one = match fetch.query([seq]) {
                    Ok(one) => one,
                    Err(e) if interrupted(&e) => return Ok(false),
                    Err(e) => return Err(st(e)),
                };
                match one.next() {
                    Ok(Some(row)) => {
                        let d = store::dial_from_row(row, &self.path)?;
                        if q.matches_dial(&d) {
                            tally.add_dial(&d);
                        }
                    }
                    Ok(None) => {}
                    Err(e) if interrupted(&e) => return Ok(false),
                    Err(e) => return Err(st(e)),
                }
            } else {
                let op: String = r.get(1).map_err(st)?;
                let outcome: String = r.get(2).map_err(st)?;
                let outcome = crate::DialOutcome::parse(&outcome).ok_or_else(|| {
                    DialLogError::Storage(format!(
                        "{}: unknown outcome {outcome:?}",
                        self.path.display()
                    ))
                })?;
                let duration = u64::try_from(r.get::<_, i64>(3).map_err(st)?).unwrap_or(0);
                let spec = r.get::<_, Option<i64>>(4).map_err(st)?.unwrap_or(0) > 0;
                tally.add(&op, outcome, duration, spec);
            }
            if deadline.passed() {
                return Ok(false);
            }
        }
    }
}
