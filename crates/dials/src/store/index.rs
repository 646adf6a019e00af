//! The history indexes (full text, field keys, spec counts, column blocks), built behind the
//! writes a chunk at a time so committing a dial (what acknowledgements wait for) costs no
//! more than the insert, and the pace the writer keeps while dials are arriving.

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{params, Connection};

use super::{by_key, dial_from_row, indexed_upto, storage, tag, DIAL_COLS};
use crate::record::JsonText;
use crate::DialLogError;

/// Rows indexed per transaction by [`index_some`].
const INDEX_CHUNK: i64 = 256;
/// Rows of a version 3 file given their column blocks per transaction by [`index_some`] (their
/// columns only are read).
const BLOCKS_CATCH_UP_CHUNK: i64 = 2048;

/// Where [`index_some`] left the indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IndexMarks {
    /// Rows up to this rowid are in `dial_fts` and `dial_by` and have `spec` set.
    pub indexed_upto: u64,
    /// Rows up to this rowid are in the column blocks ([`crate::blocks`]).
    pub cols_upto: u64,
    /// Whether rows are left to index.
    pub more: bool,
}

/// Indexes up to [`INDEX_CHUNK`] rows above `dial_meta.indexed_upto` that are committed (at
/// most `upto`): their words into `dial_fts`, their field keys into `dial_by`, their spec
/// count into `spec`, their columns into the column blocks; moves `indexed_upto` and
/// `cols_upto`, in one transaction. A file whose blocks lag its other indexes (a version 3
/// file) first gets the blocks of its indexed rows, [`BLOCKS_CATCH_UP_CHUNK`] rows a call.
/// Returns the new marks. `dict` caches the blocks' dictionary ids (forget it after an error).
pub(crate) fn index_some(
    conn: &mut Connection,
    path: &Path,
    dict: &mut crate::blocks::Dict,
) -> Result<IndexMarks, DialLogError> {
    let st = |e| storage(path, "indexing", e);
    let tx = conn.transaction().map_err(st)?;
    let from = indexed_upto(&tx).map_err(st)?;
    let cols = crate::blocks::cols_upto(&tx).map_err(st)?;
    if cols < from {
        let mut app = crate::blocks::Appender::default();
        let last = app
            .read_columns(&tx, dict, cols + 1, from, BLOCKS_CATCH_UP_CHUNK)
            .map_err(st)?;
        app.flush(&tx).map_err(st)?;
        let upto = last.unwrap_or(from);
        crate::blocks::set_cols_upto(&tx, upto).map_err(st)?;
        tx.commit().map_err(st)?;
        return Ok(IndexMarks {
            indexed_upto: from,
            cols_upto: upto,
            more: true,
        });
    }
    let mut last = from;
    let mut n = 0i64;
    let mut app = crate::blocks::Appender::default();
    {
        let mut read = tx
            .prepare_cached(&format!(
                "SELECT {DIAL_COLS} FROM dials d WHERE d.rowid > ?1 ORDER BY d.rowid LIMIT ?2"
            ))
            .map_err(st)?;
        let mut fts = tx
            .prepare_cached(
                "INSERT INTO dial_fts (rowid, request, response, error) VALUES (?1, ?2, ?3, ?4)",
            )
            .map_err(st)?;
        let mut by = tx
            .prepare_cached("INSERT OR IGNORE INTO dial_by (key, seq) VALUES (?1, ?2)")
            .map_err(st)?;
        let mut spec = tx
            .prepare_cached("UPDATE dials SET spec = ?1 WHERE rowid = ?2")
            .map_err(st)?;
        let mut rows = read
            .query(params![
                i64::try_from(from).unwrap_or(i64::MAX),
                INDEX_CHUNK
            ])
            .map_err(st)?;
        while let Some(r) = rows.next().map_err(st)? {
            let d = dial_from_row(r, path)?;
            let seq = i64::try_from(d.seq.0).unwrap_or(i64::MAX);
            fts.execute(params![
                seq,
                d.request.as_str(),
                d.response.as_ref().map(JsonText::as_str),
                d.error.as_deref()
            ])
            .map_err(st)?;
            let broken = d.spec_findings();
            for (t, v) in [
                (tag::OP, &*d.op),
                (tag::CALLER, &*d.caller),
                (tag::CALLEE, &*d.callee),
                (tag::PHONE, &*d.phone),
                (tag::CALL, &*d.call_id),
                (tag::SESSION, &*d.session),
                (tag::OUTCOME, d.outcome.as_str()),
            ] {
                if !v.is_empty() {
                    by.execute(params![by_key(t, v), seq]).map_err(st)?;
                }
            }
            if broken > 0 {
                by.execute(params![by_key(tag::SPEC_BROKEN, ""), seq])
                    .map_err(st)?;
            }
            spec.execute(params![i64::from(broken), seq]).map_err(st)?;
            app.add(&tx, dict, &d, broken > 0).map_err(st)?;
            last = d.seq.0;
            n += 1;
        }
    }
    app.flush(&tx).map_err(st)?;
    if n > 0 {
        tx.execute(
            "UPDATE dial_meta SET v = ?1 WHERE k = 'indexed_upto'",
            params![i64::try_from(last).unwrap_or(i64::MAX)],
        )
        .map_err(st)?;
        crate::blocks::set_cols_upto(&tx, last).map_err(st)?;
    }
    tx.commit().map_err(st)?;
    Ok(IndexMarks {
        indexed_upto: last,
        cols_upto: last.max(cols),
        more: n == INDEX_CHUNK,
    })
}

/// While dials arrive (one came less than this ago), indexing takes at most one chunk per
/// [`INDEX_BUSY_EVERY`]; after this much quiet it runs flat out until it has caught up.
pub(crate) const INDEX_QUIET: Duration = Duration::from_millis(100);
/// Time between index chunks while dials arrive: [`INDEX_CHUNK`] rows per 100 ms is 2 560
/// rows/s, more than a phone streaming 1 000 dials/s needs to stay indexed, and a flood of
/// tens of thousands a second leaves the CPU to the link and the commits (the backlog is
/// indexed once the flood ends; history queries match it in Rust meanwhile).
pub(crate) const INDEX_BUSY_EVERY: Duration = Duration::from_millis(100);

/// When the writer may index its next chunk: see [`INDEX_QUIET`] and [`INDEX_BUSY_EVERY`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct IndexPace {
    last_insert: Option<Instant>,
    last_chunk: Option<Instant>,
}

impl IndexPace {
    /// A batch of dials was handed to the writer at `now`.
    pub(crate) fn inserted(&mut self, now: Instant) {
        self.last_insert = Some(now);
    }

    /// A chunk is being indexed at `now`.
    pub(crate) fn indexed(&mut self, now: Instant) {
        self.last_chunk = Some(now);
    }

    /// How long until the quiet begins ([`INDEX_QUIET`] after the last insert) at `now`;
    /// `None` once it has begun (or before any insert).
    pub(crate) fn quiet_in(&self, now: Instant) -> Option<Duration> {
        let since_insert = now.saturating_duration_since(self.last_insert?);
        INDEX_QUIET
            .checked_sub(since_insert)
            .filter(|w| !w.is_zero())
    }

    /// How long to wait before the next chunk at `now` (`None`: index now): while the last
    /// insert is less than [`INDEX_QUIET`] old, until [`INDEX_BUSY_EVERY`] after the last chunk
    /// (or until the quiet begins, whichever is first).
    pub(crate) fn wait(&self, now: Instant) -> Option<Duration> {
        let since_insert = now.saturating_duration_since(self.last_insert?);
        let quiet_in = INDEX_QUIET.checked_sub(since_insert)?;
        let since_chunk = self
            .last_chunk
            .map_or(INDEX_BUSY_EVERY, |c| now.saturating_duration_since(c));
        let chunk_in = INDEX_BUSY_EVERY.checked_sub(since_chunk)?;
        let w = quiet_in.min(chunk_in);
        (!w.is_zero()).then_some(w)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::record::{Dial, Retention, Seq, SpecMark};
    use crate::store::{insert_batch, open};
    use std::sync::Arc;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_spec_count_known_at_insert_is_stored_with_the_dial_and_not_checked_again() {
        let dir = tempfile::tempdir().unwrap();
        let (mut conn, path) = open(dir.path()).unwrap();
        let mk = |i: u64| {
            let mut d = switchboard_domain::dial::sample::sample_dial(i, 2, 1_800_000_000_000);
            d.retention = Retention::Standard;
            d.seq = Seq(i + 1);
            d
        };
        // The count a fresh check of `d` gives.
        let checked = |d: &Dial| {
            Dial {
                spec: SpecMark::default(),
                ..d.clone()
            }
            .spec_findings()
        };
        // `unasked` is shared with the insert, as the ring shares its dials with the writer, so
        // a check run by the insert would show in it.
        let (asked, unasked) = (mk(0), Arc::new(mk(1)));
        // A count no check of this dial gives: the file holds it after indexing only if the
        // indexer did not check the dial again.
        let told = checked(&asked) + 3;
        asked.spec.preset(told);
        assert_eq!(unasked.spec.get(), None);
        insert_batch(&mut conn, &[Arc::new(asked), Arc::clone(&unasked)]).unwrap();
        assert_eq!(
            unasked.spec.get(),
            None,
            "the insert does not run the check"
        );
        let stored = |conn: &Connection| -> Vec<Option<i64>> {
            let mut q = conn
                .prepare("SELECT spec FROM dials ORDER BY rowid")
                .unwrap();
            let rows = q.query_map([], |r| r.get(0)).unwrap();
            rows.map(Result::unwrap).collect()
        };
        assert_eq!(stored(&conn), vec![Some(i64::from(told)), None]);
        let mut dict = crate::blocks::Dict::default();
        index_some(&mut conn, &path, &mut dict).unwrap();
        assert_eq!(
            stored(&conn),
            vec![Some(i64::from(told)), Some(i64::from(checked(&unasked)))]
        );
        // The "not to spec" key follows the stored count.
        let broken: i64 = conn
            .query_row(
                "SELECT count(*) FROM dial_by WHERE key = ?1 AND seq = 1",
                params![by_key(tag::SPEC_BROKEN, "")],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(broken, 1);
    }

    #[test]
    fn indexing_runs_at_once_when_no_dial_has_arrived_or_the_quiet_began() {
        let t0 = Instant::now();
        let mut pace = IndexPace::default();
        assert_eq!(
            pace.wait(t0),
            None,
            "a fresh writer indexes the backlog at once"
        );
        pace.inserted(t0);
        // Nothing was indexed since the insert: the first chunk may go at once.
        assert_eq!(pace.wait(t0 + MS), None);
        pace.indexed(t0 + MS);
        // Busy: the next chunk waits, here until the quiet begins (100 ms after the insert,
        // which comes before 100 ms after the last chunk).
        assert_eq!(pace.wait(t0 + 2 * MS), Some(INDEX_QUIET - 2 * MS));
        // Quiet (no insert for 100 ms): flat out.
        assert_eq!(pace.wait(t0 + INDEX_QUIET + MS), None);
    }

    #[test]
    fn while_dials_arrive_one_chunk_goes_per_interval() {
        let t0 = Instant::now();
        let mut pace = IndexPace::default();
        let mut chunks = 0;
        // A stream with a batch every 5 ms for 2 s, checked every millisecond.
        for ms in 0..2000u64 {
            let now = t0 + Duration::from_millis(ms);
            if ms % 5 == 0 {
                pace.inserted(now);
            }
            if pace.wait(now).is_none() {
                pace.indexed(now);
                chunks += 1;
            }
        }
        // One chunk every 100 ms: 20 in 2 s (2 560 rows/s at 256 rows a chunk).
        assert_eq!(chunks, 20);
        // The wait never asks for longer than the interval.
        let now = t0 + Duration::from_millis(2000);
        pace.inserted(now);
        pace.indexed(now);
        assert!(pace.wait(now).is_some_and(|w| w <= INDEX_BUSY_EVERY));
    }
}
