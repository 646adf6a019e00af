//! Reading and writing rows: a [`Dial`] from a stored row and back, the newest dials for the
//! ring at start, connection events, and deleting rows (retention, clear). The writer thread
//! calls the writes; readers anywhere call the reads.

use std::path::Path;
use std::sync::Arc;

use rusqlite::{params, Connection};

#[cfg(doc)]
use super::index_some;
use super::{id_key, storage};
use crate::record::{Arrival, Dial, DialOutcome, JsonText, Retention, Seq, SpecMark};
use crate::DialLogError;

/// The columns [`dial_from_row`] reads, in its order (table alias `d`).
pub(crate) const DIAL_COLS: &str = "d.rowid, d.id, d.phone, d.call_id, d.caller, d.callee, \
    d.endpoint, d.op, d.request, d.start_ms, d.duration_ms, d.outcome, d.response, d.error, \
    d.retention, d.session, d.spec, d.arrived_ms";

/// [`DIAL_COLS`] for a file that may be older than the `arrived_ms` column (schema version 4
/// and before; a broken file being salvaged is read as it is, never upgraded): `NULL` in its
/// place when the column is missing or the table's columns cannot be read.
pub(crate) fn dial_cols_of(conn: &Connection) -> String {
    let has = conn
        .query_row(
            "SELECT count(*) FROM pragma_table_info('dials') WHERE name = 'arrived_ms'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .is_ok_and(|n| n > 0);
    if has {
        DIAL_COLS.to_owned()
    } else {
        DIAL_COLS.replace("d.arrived_ms", "NULL")
    }
}

/// A [`Dial`] from a row of [`DIAL_COLS`] (its `seq` the rowid, its spec mark the stored
/// count when there is one).
///
/// # Errors
/// `rusqlite` errors reading the row; a [`DialLogError::Storage`] naming the file and the dial
/// for an unknown outcome or retention.
pub(crate) fn dial_from_row(r: &rusqlite::Row<'_>, path: &Path) -> Result<Dial, DialLogError> {
    let read = |e: rusqlite::Error| storage(path, "reading", e);
    let id: String = r.get(1).map_err(read)?;
    let outc: String = r.get(11).map_err(read)?;
    let ret: String = r.get(14).map_err(read)?;
    let outcome = DialOutcome::parse(&outc).ok_or_else(|| {
        DialLogError::Storage(format!(
            "{}: dial {id}: unknown outcome {outc:?}",
            path.display()
        ))
    })?;
    let retention = Retention::parse(&ret).ok_or_else(|| {
        DialLogError::Storage(format!(
            "{}: dial {id}: unknown retention {ret:?}",
            path.display()
        ))
    })?;
    let seq: i64 = r.get(0).map_err(read)?;
    let spec: Option<i64> = r.get(16).map_err(read)?;
    let mut d = Dial {
        id: id.into(),
        phone: r.get::<_, String>(2).map_err(read)?.into(),
        call_id: r.get::<_, String>(3).map_err(read)?.into(),
        caller: r.get::<_, String>(4).map_err(read)?.into(),
        callee: r.get::<_, String>(5).map_err(read)?.into(),
        endpoint: r.get::<_, String>(6).map_err(read)?.into(),
        op: r.get::<_, String>(7).map_err(read)?.into(),
        request: JsonText::from_trusted(r.get(8).map_err(read)?),
        start_ms: r.get(9).map_err(read)?,
        duration_ms: u64::try_from(r.get::<_, i64>(10).map_err(read)?).unwrap_or(0),
        outcome,
        response: r
            .get::<_, Option<String>>(12)
            .map_err(read)?
            .map(JsonText::from_trusted),
        error: r
            .get::<_, Option<String>>(13)
            .map_err(read)?
            .map(Into::into),
        retention,
        slow: false,
        spec: match spec.and_then(|n| u32::try_from(n).ok()) {
            Some(n) => SpecMark::known(n),
            None => SpecMark::default(),
        },
        session: r.get::<_, String>(15).map_err(read)?.into(),
        seq: Seq(u64::try_from(seq).unwrap_or(0)),
        arrived: Arrival(r.get(17).map_err(read)?),
    };
    d.normalise();
    Ok(d)
}

/// Loads the `limit` dials stored last (by rowid: the order they arrived in, as the ring keeps
/// them), oldest first, for the ring.
pub fn load_newest(
    conn: &Connection,
    path: &Path,
    limit: usize,
    max_bytes: usize,
) -> Result<Vec<Dial>, DialLogError> {
    let mut stmt = conn
        .prepare(&format!(
            "SELECT {DIAL_COLS} FROM dials d ORDER BY d.rowid DESC LIMIT ?1"
        ))
        .map_err(|e| storage(path, "reading", e))?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut rows = stmt
        .query(params![limit])
        .map_err(|e| storage(path, "reading", e))?;
    let mut out = Vec::new();
    let mut bytes = 0usize;
    while let Some(r) = rows.next().map_err(|e| storage(path, "reading", e))? {
        let d = dial_from_row(r, path)?;
        // Newest first: stop once the ring's byte budget is reached (the newest one always).
        let size = crate::log::held_bytes(&d);
        if !out.is_empty() && bytes.saturating_add(size) > max_bytes {
            break;
        }
        bytes = bytes.saturating_add(size);
        out.push(d);
    }
    out.reverse();
    // The file has no uniqueness constraint: should an id ever be there twice, the ring keeps
    // its first arrival only.
    let mut seen = std::collections::HashSet::with_capacity(out.len());
    out.retain(|d| seen.insert(Arc::clone(&d.id)));
    Ok(out)
}

/// The highest sequence number stored (dials, journaled dials and connection events), 0 when
/// none.
pub(crate) fn max_seq(conn: &Connection) -> rusqlite::Result<u64> {
    let n: i64 = conn.query_row(
        "SELECT max(coalesce((SELECT max(rowid) FROM dials), 0),
                    coalesce((SELECT max(seq) FROM conn_events), 0),
                    coalesce((SELECT max(last) FROM dial_journal), 0))",
        [],
        |r| r.get(0),
    )?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Rows up to this rowid are indexed (`dial_meta.indexed_upto`).
pub(crate) fn indexed_upto(conn: &Connection) -> rusqlite::Result<u64> {
    let n: i64 = conn.query_row(
        "SELECT v FROM dial_meta WHERE k = 'indexed_upto'",
        [],
        |r| r.get(0),
    )?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Calls `each` with `(phone key, dial key)` ([`id_key`] of the dial's phone and of its id,
/// from `dial_keys`, a few bytes a row) of every stored dial whose rowid is below `below`,
/// newest first. Rows written before the phone key was kept (schema version 4 and older) give
/// phone key 0: they share one window.
pub(crate) fn for_each_key_newest_first(
    conn: &Connection,
    below: u64,
    mut each: impl FnMut(i64, i64),
) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(
        "SELECT coalesce(p, 0), k FROM dial_keys WHERE rowid < ?1 ORDER BY rowid DESC",
    )?;
    let mut rows = stmt.query([i64::try_from(below).unwrap_or(i64::MAX)])?;
    while let Some(row) = rows.next()? {
        each(row.get(0)?, row.get(1)?);
    }
    Ok(())
}

/// Inserts `dials` in one transaction. Returns rows inserted. Transient dials are skipped (they
/// must never reach the file). A dial's spec count goes in with it when something already
/// asked for it (the live table's row, a filter, the stats: [`SpecMark::get`]), so
/// [`index_some`] reads it back instead of parsing and checking the dial's JSON again; the
/// insert never runs the check itself (acknowledgements wait for it). The dial log never
/// hands the writer a dial whose id is stored (its dedup checks the ring, the writes on their
/// way and this file), so there is no uniqueness constraint to check on every insert.
pub(crate) fn insert_batch(conn: &mut Connection, dials: &[Arc<Dial>]) -> rusqlite::Result<usize> {
    let tx = conn.transaction()?;
    let n = insert_rows(&tx, dials.iter().map(|d| &**d))?;
    tx.commit()?;
    Ok(n)
}

/// Inserts the persisting `dials` as `dials` rows and their keys as `dial_keys` rows, in the
/// caller's transaction ([`insert_batch`], and the journal's move). Returns rows inserted.
pub(crate) fn insert_rows<'a>(
    tx: &rusqlite::Transaction<'_>,
    dials: impl Iterator<Item = &'a Dial>,
) -> rusqlite::Result<usize> {
    let mut n = 0;
    let mut stmt = tx.prepare_cached(
        "INSERT INTO dials (id, phone, call_id, caller, callee, endpoint, op, request,
            start_ms, duration_ms, outcome, response, error, retention, expires_ms, session,
            rowid, spec, arrived_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
            ?17, ?18, ?19)",
    )?;
    let mut key = tx.prepare_cached(
        "INSERT INTO dial_keys (rowid, k, p) VALUES (last_insert_rowid(), ?1, ?2)",
    )?;
    for d in dials.filter(|d| d.retention.persists()) {
        n += stmt.execute(params![
            &*d.id,
            &*d.phone,
            &*d.call_id,
            &*d.caller,
            &*d.callee,
            &*d.endpoint,
            &*d.op,
            d.request.as_str(),
            d.start_ms,
            i64::try_from(d.duration_ms).unwrap_or(i64::MAX),
            d.outcome.as_str(),
            d.response.as_ref().map(JsonText::as_str),
            d.error.as_deref(),
            d.retention.as_str(),
            d.expires_ms(),
            &*d.session,
            // The log's sequence number; a dial built outside a log (0) takes the next rowid.
            (d.seq.0 > 0).then(|| i64::try_from(d.seq.0).unwrap_or(i64::MAX)),
            d.spec.get().map(i64::from),
            d.arrived.0,
        ])?;
        key.execute(params![id_key(&d.id), id_key(&d.phone)])?;
    }
    Ok(n)
}

/// Stores one connection event (rowid = its `seq`), kept
/// [`CONNECTION_EVENT_MAX_AGE_MS`](crate::history::CONNECTION_EVENT_MAX_AGE_MS).
pub(crate) fn insert_connection(
    conn: &Connection,
    ev: &crate::history::ConnectionEvent,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO conn_events (seq, phone, label, at_ms, event, detail, expires_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        i64::try_from(ev.seq).unwrap_or(i64::MAX),
        ev.phone,
        ev.label,
        ev.at_ms,
        ev.event.as_str(),
        ev.detail,
        ev.at_ms
            .saturating_add(crate::history::CONNECTION_EVENT_MAX_AGE_MS),
    ])?;
    Ok(())
}

/// Deletes rows whose retention has run out at `now_ms` (and connection events older than
/// their age). Returns dial rows deleted.
/// The column blocks of the deleted rows are rewritten from the rows left.
pub(crate) fn prune(conn: &Connection, now_ms: i64) -> rusqlite::Result<usize> {
    let tx = conn.unchecked_transaction()?;
    tx.execute(
        "DELETE FROM conn_events WHERE expires_ms <= ?1",
        params![now_ms],
    )?;
    let mut blocks: Vec<u64> = Vec::new();
    {
        let mut stmt = tx.prepare_cached(&format!(
            "SELECT DISTINCT rowid >> {} FROM dials WHERE expires_ms IS NOT NULL \
             AND expires_ms <= ?1",
            crate::blocks::BLOCK_SHIFT
        ))?;
        let mut rows = stmt.query(params![now_ms])?;
        while let Some(r) = rows.next()? {
            blocks.push(u64::try_from(r.get::<_, i64>(0)?).unwrap_or(0));
        }
    }
    tx.execute(
        "DELETE FROM dial_keys WHERE rowid IN
            (SELECT rowid FROM dials WHERE expires_ms IS NOT NULL AND expires_ms <= ?1)",
        params![now_ms],
    )?;
    let n = tx.execute(
        "DELETE FROM dials WHERE expires_ms IS NOT NULL AND expires_ms <= ?1",
        params![now_ms],
    )?;
    if !blocks.is_empty() {
        let upto = crate::blocks::cols_upto(&tx)?;
        crate::blocks::rebuild(&tx, &blocks, upto)?;
    }
    tx.commit()?;
    Ok(n)
}

/// Deletes every row, the journal's dials included. Returns dials deleted.
pub(crate) fn clear(conn: &Connection) -> rusqlite::Result<usize> {
    let tx = conn.unchecked_transaction()?;
    tx.execute("DELETE FROM dial_keys", [])?;
    tx.execute("DELETE FROM conn_events", [])?;
    tx.execute("DELETE FROM dial_blocks", [])?;
    let journaled = super::journal::held(&tx)?;
    tx.execute("DELETE FROM dial_journal", [])?;
    let n = tx.execute("DELETE FROM dials", [])?;
    let n = n.saturating_add(usize::try_from(journaled).unwrap_or(usize::MAX));
    tx.commit()?;
    Ok(n)
}
