//! SQLite persistence of the dial log: schema, batched inserts, pruning by retention label, and
//! the background writer thread that keeps SQLite off the log's hot path.
//!
//! Only dials whose ifp/1 retention label persists (`standard`, `extended`, `permanent`;
//! `ifp1-notes.md`, "Envelope", `labels.retention`) ever reach this file; `transient` dials are
//! filtered out before a batch is built, and `insert_batch` refuses them again. Each row keeps
//! `expires_ms` (start + the label's age, `NULL` for `permanent`) so pruning is one indexed
//! `DELETE`. Rows are read back in rowid (arrival) order, so there is no start-time index to keep
//! up on every insert (an older file's `dials_start` index is dropped). There is no index on the
//! dial id (ifp/1 `dedup` key) either: ids are random, so an index of them takes a write to a
//! random page per dial. Instead each row's 64-bit `id_key` is appended to `dial_keys`, which
//! the dial log reads whole at start and keeps in memory; its dedup treats a known key as a
//! replay, so a replayed dial is never stored twice, even across restarts.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::{params, Connection};
use tokio::sync::oneshot;

use super::record::{Dial, DialOutcome, JsonText, Retention};
use super::DialLogError;

/// File name of the dial database inside the data folder.
pub const DB_FILE: &str = "dials.sqlite3";

/// The schema version this code writes (`PRAGMA user_version`). Version 2 has no index on the
/// id: each dial's [`id_key`] goes to `dial_keys` (same rowid), appended in arrival order and
/// read back whole at start. Files of version 0/1 (`id TEXT PRIMARY KEY`) are migrated on open.
const SCHEMA_VERSION: i64 = 2;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS dials (
    id          TEXT NOT NULL,
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
CREATE TABLE IF NOT EXISTS dial_keys (
    k           INTEGER NOT NULL
);
DROP INDEX IF EXISTS dials_start;
CREATE INDEX IF NOT EXISTS dials_expires ON dials(expires_ms) WHERE expires_ms IS NOT NULL;
";

fn storage(path: &Path, what: &str, e: rusqlite::Error) -> DialLogError {
    DialLogError::Storage(format!("{what} {}: {e}", path.display()))
}

/// Opens (creating if needed) the dial database in `dir`, in WAL mode. On Unix the folder is
/// `0700` when created here and the database and its `-wal` and `-shm` files are `0600`
/// (SQLite gives the `-wal` and `-shm` files the database file's mode; files an earlier version
/// left `0644` are tightened).
pub(crate) fn open(dir: &Path) -> Result<(Connection, PathBuf), DialLogError> {
    crate::fsutil::create_private_dir_all(dir).map_err(|e| {
        DialLogError::Storage(format!("creating data folder {}: {e}", dir.display()))
    })?;
    let path = dir.join(DB_FILE);
    create_private(&path)
        .map_err(|e| DialLogError::Storage(format!("creating {}: {e}", path.display())))?;
    let mut conn = Connection::open(&path).map_err(|e| storage(&path, "opening", e))?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .and_then(|_| conn.pragma_update(None, "synchronous", "NORMAL"))
        .map_err(|e| storage(&path, "preparing", e))?;
    for suffix in ["-wal", "-shm"] {
        let mut side = path.clone().into_os_string();
        side.push(suffix);
        let side = PathBuf::from(side);
        match crate::fsutil::make_private_file(&side) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(DialLogError::Storage(format!(
                    "making {} private: {e}",
                    side.display()
                )))
            }
            _ => {}
        }
    }
    migrate(&mut conn).map_err(|e| storage(&path, "upgrading", e))?;
    conn.execute_batch(SCHEMA)
        .and_then(|_| conn.pragma_update(None, "user_version", SCHEMA_VERSION))
        .map_err(|e| storage(&path, "preparing", e))?;
    Ok((conn, path))
}

/// Creates the (empty) database file `path` when missing, exclusively and `0600` on Unix, so
/// SQLite never creates it under the umask; sets an existing one to `0600`.
fn create_private(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, crate::fsutil::PRIVATE_FILE_MODE);
    match options.open(path) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    // Whatever the umask made of it (or an earlier version left).
    crate::fsutil::make_private_file(path)
}

/// The index key of a dial id: its 64-bit FNV-1a hash as a signed integer. It is stored, so it
/// must never change (unlike the in-memory hashers, which may). Two ids may share a key; lookups
/// compare the id too.
pub(crate) fn id_key(id: &str) -> i64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let h = id
        .bytes()
        .fold(OFFSET, |h, b| (h ^ u64::from(b)).wrapping_mul(PRIME));
    i64::from_ne_bytes(h.to_ne_bytes())
}

/// Moves a file written before version 2 (id text as the primary key) to the current schema,
/// rows and their order (rowid) kept, in one transaction. Nothing to do for a new or current
/// file.
fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let has_table: bool = conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'dials'",
        [],
        |r| r.get::<_, i64>(0).map(|n| n > 0),
    )?;
    if version >= SCHEMA_VERSION || !has_table {
        return Ok(());
    }
    let tx = conn.transaction()?;
    tx.execute_batch("ALTER TABLE dials RENAME TO dials_v1;")?;
    tx.execute_batch(SCHEMA)?;
    {
        let mut read = tx.prepare("SELECT rowid, id FROM dials_v1 ORDER BY rowid")?;
        let mut key = tx.prepare("INSERT INTO dial_keys (rowid, k) VALUES (?1, ?2)")?;
        let mut rows = read.query([])?;
        while let Some(row) = rows.next()? {
            let rowid: i64 = row.get(0)?;
            let id: String = row.get(1)?;
            key.execute(params![rowid, id_key(&id)])?;
        }
        tx.execute_batch(
            "INSERT INTO dials (rowid, id, phone, call_id, caller, callee, endpoint, op, request,
                start_ms, duration_ms, outcome, response, error, retention, expires_ms)
             SELECT rowid, id, phone, call_id, caller, callee, endpoint, op, request, start_ms,
                duration_ms, outcome, response, error, retention, expires_ms
             FROM dials_v1 ORDER BY rowid;",
        )?;
    }
    tx.execute_batch("DROP TABLE dials_v1;")?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()
}

/// Loads the `limit` dials stored last (by rowid: the order they arrived in, as the ring keeps
/// them), oldest first, for the ring.
pub(crate) fn load_newest(
    conn: &Connection,
    path: &Path,
    limit: usize,
    max_bytes: usize,
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
    let mut bytes = 0usize;
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
            spec: Default::default(),
            session: "".into(),
            seq: Default::default(),
        };
        d.normalise();
        // Newest first: stop once the ring's byte budget is reached (the newest one always).
        let size = crate::dials::log::held_bytes(&d);
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

/// Calls `each` with the [`id_key`] of every stored dial (from `dial_keys`, a few bytes a row).
pub(crate) fn for_each_id_key(
    conn: &Connection,
    mut each: impl FnMut(i64),
) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached("SELECT k FROM dial_keys")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        each(row.get(0)?);
    }
    Ok(())
}

/// Inserts `dials` in one transaction. Returns rows inserted. Transient dials are skipped (they
/// must never reach the file). The dial log never hands the writer a dial whose id is stored
/// (its dedup checks the ring, the writes on their way and this file), so there is no
/// uniqueness constraint to check on every insert.
pub(crate) fn insert_batch(conn: &mut Connection, dials: &[Arc<Dial>]) -> rusqlite::Result<usize> {
    let tx = conn.transaction()?;
    let mut n = 0;
    {
        let mut stmt = tx.prepare_cached(
            "INSERT INTO dials (id, phone, call_id, caller, callee, endpoint, op, request,
                start_ms, duration_ms, outcome, response, error, retention, expires_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        )?;
        let mut key =
            tx.prepare_cached("INSERT INTO dial_keys (rowid, k) VALUES (last_insert_rowid(), ?1)")?;
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
            key.execute(params![id_key(&d.id)])?;
        }
    }
    tx.commit()?;
    Ok(n)
}

/// Deletes rows whose retention has run out at `now_ms`. Returns rows deleted.
pub(crate) fn prune(conn: &Connection, now_ms: i64) -> rusqlite::Result<usize> {
    let tx = conn.unchecked_transaction()?;
    tx.execute(
        "DELETE FROM dial_keys WHERE rowid IN
            (SELECT rowid FROM dials WHERE expires_ms IS NOT NULL AND expires_ms <= ?1)",
        params![now_ms],
    )?;
    let n = tx.execute(
        "DELETE FROM dials WHERE expires_ms IS NOT NULL AND expires_ms <= ?1",
        params![now_ms],
    )?;
    tx.commit()?;
    Ok(n)
}

/// Deletes every row. Returns rows deleted.
pub(crate) fn clear(conn: &Connection) -> rusqlite::Result<usize> {
    let tx = conn.unchecked_transaction()?;
    tx.execute("DELETE FROM dial_keys", [])?;
    let n = tx.execute("DELETE FROM dials", [])?;
    tx.commit()?;
    Ok(n)
}

/// Work for the writer thread.
pub(crate) enum WriterMsg {
    /// Insert these dials; afterwards mark `upto` (the last arrival number in the batch) written
    /// and, when the transaction committed, durable. An empty batch only moves the marks (dials
    /// cleared before they were written).
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
    /// Store one connection event (its `seq` is its rowid).
    Connection(crate::dials::history::ConnectionEvent),
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
    /// Highest arrival number up to which every persisting dial is committed (the durable
    /// watermark acknowledgements wait for). It stops at the last batch before a failed write:
    /// what follows a failure is never reported durable in this run.
    pub committed: Arc<tokio::sync::watch::Sender<u64>>,
    /// Batches sent and not yet processed.
    pub in_flight: AtomicU64,
    /// Total rows committed.
    pub rows_written: AtomicU64,
    /// First write error since the last flush.
    pub error: Mutex<Option<String>>,
}

/// Page cache of the writer's connection, in KiB.
const WRITER_CACHE_KIB: i64 = 8 * 1024;
/// WAL pages between automatic checkpoints (4 KiB pages: 16 MiB).
const WRITER_CHECKPOINT_PAGES: i64 = 4096;

/// Runs the writer loop on the current (dedicated) thread until the sender side is dropped.
pub(crate) fn writer_loop(
    mut conn: Connection,
    path: PathBuf,
    rx: std::sync::mpsc::Receiver<WriterMsg>,
    shared: Arc<WriterShared>,
) {
    // The writer's page cache holds the id index's pages (ids are random, so inserts touch
    // pages all over it); WAL checkpoints every WRITER_CHECKPOINT_PAGES pages rather than every
    // 1000 (fewer fsyncs).
    let tuned = conn
        .pragma_update(None, "cache_size", -WRITER_CACHE_KIB)
        .and_then(|_| conn.pragma_update(None, "wal_autocheckpoint", WRITER_CHECKPOINT_PAGES));
    if let Err(e) = tuned {
        tracing::warn!(target: "switchboard::dials", "tuning the dial writer's connection: {e}");
    }
    let record_error = |msg: String| {
        tracing::error!(target: "switchboard::dials", "{msg}");
        crate::sync::lock(&shared.error).get_or_insert(msg);
    };
    // Once a batch failed, no later arrival counts as durable (the failed dials are not in the
    // file, and the watermark is a single number).
    let mut failed = false;
    while let Ok(msg) = rx.recv() {
        match msg {
            WriterMsg::Insert { dials, upto } => {
                match insert_batch(&mut conn, &dials) {
                    Ok(n) => {
                        shared.rows_written.fetch_add(n as u64, Ordering::Relaxed);
                        if !failed {
                            shared.committed.send_if_modified(|w| {
                                let newer = upto > *w;
                                if newer {
                                    *w = upto;
                                }
                                newer
                            });
                        }
                    }
                    Err(e) => {
                        failed = true;
                        record_error(format!(
                            "writing {} dials to {}: {e}",
                            dials.len(),
                            path.display()
                        ));
                    }
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
            WriterMsg::Connection(_ev) => {}
            WriterMsg::Flush { reply } => {
                let err = crate::sync::lock(&shared.error).take();
                let _ = reply.send(match err {
                    Some(e) => Err(DialLogError::Storage(e)),
                    None => Ok(()),
                });
            }
        }
    }
}
