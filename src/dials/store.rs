//! SQLite persistence of the dial log: schema, batched inserts, pruning by retention label, and
//! the background writer thread that keeps SQLite off the log's hot path.
//!
//! Only dials whose ifp/1 retention label persists (`standard`, `extended`, `permanent`;
//! `ifp1-notes.md`, "Envelope", `labels.retention`) ever reach this file; `transient` dials are
//! filtered out before a batch is built, and [`insert_batch`] refuses them again. Each row keeps
//! `expires_ms` (start + the label's age, `NULL` for `permanent`) so pruning is one indexed
//! `DELETE`. Rows are read back in rowid (arrival) order, so there is no start-time index to keep
//! up on every insert (an older file's `dials_start` index is dropped). The dial id (ifp/1 `dedup` key) is the primary key, so a replayed dial is never
//! stored twice, even across restarts.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::{params, Connection, OptionalExtension};
use tokio::sync::oneshot;

use super::record::{Dial, DialOutcome, JsonText, Retention};
use super::DialLogError;

/// File name of the dial database inside the data folder.
pub const DB_FILE: &str = "dials.sqlite3";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS dials (
    id          TEXT PRIMARY KEY NOT NULL,
    phone       TEXT NOT NULL,
    call_id     TEXT NOT NULL,
    caller      TEXT NOT NULL,
    callee      TEXT NOT NULL,
    endpoint    TEXT NOT NULL,
    op          TEXT NOT NULL,
    request     TEXT NOT NULL,
    start_ms    INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL,
    outcome     TEXT NOT NULL,
    response    TEXT,
    error       TEXT,
    retention   TEXT NOT NULL,
    expires_ms  INTEGER
);
DROP INDEX IF EXISTS dials_start;
CREATE INDEX IF NOT EXISTS dials_expires ON dials(expires_ms) WHERE expires_ms IS NOT NULL;
";

fn storage(path: &Path, what: &str, e: rusqlite::Error) -> DialLogError {
    DialLogError::Storage(format!("{what} {}: {e}", path.display()))
}

/// Opens (creating if needed) the dial database in `dir`, in WAL mode.
pub(crate) fn open(dir: &Path) -> Result<(Connection, PathBuf), DialLogError> {
    std::fs::create_dir_all(dir).map_err(|e| {
        DialLogError::Storage(format!("creating data folder {}: {e}", dir.display()))
    })?;
    let path = dir.join(DB_FILE);
    let conn = Connection::open(&path).map_err(|e| storage(&path, "opening", e))?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .and_then(|_| conn.pragma_update(None, "synchronous", "NORMAL"))
        .and_then(|_| conn.execute_batch(SCHEMA))
        .map_err(|e| storage(&path, "preparing", e))?;
    Ok((conn, path))
}

/// Loads the `limit` dials stored last (by rowid: the order they arrived in, as the ring keeps
/// them), oldest first, for the ring.
pub(crate) fn load_newest(
    conn: &Connection,
    path: &Path,
    limit: usize,
) -> Result<Vec<Dial>, DialLogError> {
    let mut stmt = conn
        .prepare(
            "SELECT id, phone, call_id, caller, callee, endpoint, op, request, start_ms,
                    duration_ms, outcome, response, error, retention
             FROM dials ORDER BY rowid DESC LIMIT ?1",
        )
        .map_err(|e| storage(path, "reading", e))?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = stmt
        .query_map(params![limit], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, String>(6)?,
                r.get::<_, String>(7)?,
                r.get::<_, i64>(8)?,
                r.get::<_, i64>(9)?,
                r.get::<_, String>(10)?,
                r.get::<_, Option<String>>(11)?,
                r.get::<_, Option<String>>(12)?,
                r.get::<_, String>(13)?,
            ))
        })
        .map_err(|e| storage(path, "reading", e))?;
    let mut out = Vec::new();
    for row in rows {
        let (
            id,
            phone,
            call_id,
            caller,
            callee,
            endpoint,
            op,
            req,
            start,
            dur,
            outc,
            resp,
            err,
            ret,
        ) = row.map_err(|e| storage(path, "reading", e))?;
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
        let mut d = Dial {
            id: id.into(),
            phone: phone.into(),
            call_id: call_id.into(),
            caller: caller.into(),
            callee: callee.into(),
            endpoint: endpoint.into(),
            op: op.into(),
            request: JsonText::from_trusted(req),
            start_ms: start,
            duration_ms: u64::try_from(dur).unwrap_or(0),
            outcome,
            response: resp.map(JsonText::from_trusted),
            error: err.map(Into::into),
            retention,
            slow: false,
        };
        d.normalise();
        out.push(d);
    }
    out.reverse();
    Ok(out)
}

/// Whether a dial with this id is stored.
pub(crate) fn contains(conn: &Connection, id: &str) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT 1 FROM dials WHERE id = ?1")?
        .query_row(params![id], |_| Ok(()))
        .optional()
        .map(|o| o.is_some())
}

/// Calls `each` with every stored dial id (read from the primary-key index).
pub(crate) fn for_each_id(conn: &Connection, mut each: impl FnMut(&str)) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached("SELECT id FROM dials")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        if let rusqlite::types::ValueRef::Text(t) = row.get_ref(0)? {
            if let Ok(id) = std::str::from_utf8(t) {
                each(id);
            }
        }
    }
    Ok(())
}

/// Inserts `dials` in one transaction; ids already stored are ignored. Returns rows inserted.
/// Transient dials are skipped (they must never reach the file).
pub(crate) fn insert_batch(conn: &mut Connection, dials: &[Arc<Dial>]) -> rusqlite::Result<usize> {
    let tx = conn.transaction()?;
    let mut n = 0;
    {
        let mut stmt = tx.prepare_cached(
            "INSERT OR IGNORE INTO dials (id, phone, call_id, caller, callee, endpoint, op,
                request, start_ms, duration_ms, outcome, response, error, retention, expires_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        )?;
        for d in dials.iter().filter(|d| d.retention.persists()) {
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
            ])?;
        }
    }
    tx.commit()?;
    Ok(n)
}

/// Deletes rows whose retention has run out at `now_ms`. Returns rows deleted.
pub(crate) fn prune(conn: &Connection, now_ms: i64) -> rusqlite::Result<usize> {
    conn.execute(
        "DELETE FROM dials WHERE expires_ms IS NOT NULL AND expires_ms <= ?1",
        params![now_ms],
    )
}

/// Deletes every row. Returns rows deleted.
pub(crate) fn clear(conn: &Connection) -> rusqlite::Result<usize> {
    conn.execute("DELETE FROM dials", [])
}

/// Work for the writer thread.
pub(crate) enum WriterMsg {
    /// Insert these dials; afterwards mark `upto` (the last arrival number in the batch) written.
    Insert { dials: Vec<Arc<Dial>>, upto: u64 },
    /// Prune at `now_ms`, reply with rows deleted.
    Prune {
        now_ms: i64,
        reply: Option<oneshot::Sender<Result<usize, DialLogError>>>,
    },
    /// Delete all rows, reply with rows deleted.
    Clear {
        reply: oneshot::Sender<Result<usize, DialLogError>>,
    },
    /// Reply once everything sent before has been committed, with the first write error since the
    /// last flush, if any.
    Flush {
        reply: oneshot::Sender<Result<(), DialLogError>>,
    },
}

/// State the writer shares with the log actor.
#[derive(Debug, Default)]
pub(crate) struct WriterShared {
    /// Highest arrival number whose batch has been committed (or failed and been reported).
    pub written_upto: AtomicU64,
    /// Batches sent and not yet processed.
    pub in_flight: AtomicU64,
    /// Total rows committed.
    pub rows_written: AtomicU64,
    /// First write error since the last flush.
    pub error: Mutex<Option<String>>,
}

/// Runs the writer loop on the current (dedicated) thread until the sender side is dropped.
pub(crate) fn writer_loop(
    mut conn: Connection,
    path: PathBuf,
    rx: std::sync::mpsc::Receiver<WriterMsg>,
    shared: Arc<WriterShared>,
) {
    let record_error = |msg: String| {
        tracing::error!(target: "switchboard::dials", "{msg}");
        if let Ok(mut slot) = shared.error.lock() {
            slot.get_or_insert(msg);
        }
    };
    while let Ok(msg) = rx.recv() {
        match msg {
            WriterMsg::Insert { dials, upto } => {
                match insert_batch(&mut conn, &dials) {
                    Ok(n) => {
                        shared.rows_written.fetch_add(n as u64, Ordering::Relaxed);
                    }
                    Err(e) => record_error(format!(
                        "writing {} dials to {}: {e}",
                        dials.len(),
                        path.display()
                    )),
                }
                shared.written_upto.fetch_max(upto, Ordering::Release);
                shared.in_flight.fetch_sub(1, Ordering::AcqRel);
            }
            WriterMsg::Prune { now_ms, reply } => {
                let r = prune(&conn, now_ms).map_err(|e| storage(&path, "pruning", e));
                if let Err(e) = &r {
                    record_error(e.to_string());
                }
                if let Some(reply) = reply {
                    let _ = reply.send(r);
                }
            }
            WriterMsg::Clear { reply } => {
                let _ = reply.send(clear(&conn).map_err(|e| storage(&path, "clearing", e)));
            }
            WriterMsg::Flush { reply } => {
                let err = shared.error.lock().ok().and_then(|mut s| s.take());
                let _ = reply.send(match err {
                    Some(e) => Err(DialLogError::Storage(e)),
                    None => Ok(()),
                });
            }
        }
    }
}
