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
use std::time::{Duration, Instant};

use rusqlite::{params, Connection};
use tokio::sync::oneshot;

use super::record::{Dial, DialOutcome, JsonText, Retention, Seq, SpecMark};
use super::DialLogError;

/// File name of the dial database inside the data folder.
pub const DB_FILE: &str = "dials.sqlite3";

/// The schema version this code writes (`PRAGMA user_version`). Version 2 has no index on the
/// id: each dial's [`id_key`] goes to `dial_keys` (same rowid), appended in arrival order and
/// read back whole at start. Files of version 0/1 (`id TEXT PRIMARY KEY`) are migrated on open.
/// Version 3 adds what history search needs: the dial's `session` and cached `spec` count,
/// the rowid as the timeline's sequence number (dials and connection events share it), the
/// full-text index `dial_fts` (request, response and error text; contentless), the field index
/// `dial_by` (`key` = a one-letter field tag, U+001F, the value), the `conn_events` table, and
/// `dial_meta.indexed_upto`: rows up to it are in both indexes and have `spec` set. Indexing runs
/// on the writer thread when it has nothing else to do ([`index_some`]; while dials arrive, one
/// chunk per [`INDEX_BUSY_EVERY`]: [`IndexPace`]), so committing a dial
/// (what acknowledgements wait for) costs no more than before; history queries match the rows
/// not yet indexed in Rust. Deleting a dial (retention, clear) deletes its index entries in the
/// same statement (trigger `dials_unindex`). A version 2 file gets the columns and tables added
/// on open and is indexed in the background.
/// Version 4 adds the column blocks (`dial_blocks`, `dial_dict`, `dial_meta.cols_upto`:
/// [`super::blocks`]), written with the other indexes; a version 3 file gets its blocks in the
/// background (its queries use the version 3 plans until they are complete).
const SCHEMA_VERSION: i64 = 4;

/// Field tags of `dial_by` keys: `<tag>\u{1f}<value>`.
pub(crate) mod tag {
    pub(crate) const OP: char = 'o';
    pub(crate) const CALLER: char = 'c';
    pub(crate) const CALLEE: char = 'e';
    pub(crate) const PHONE: char = 'p';
    pub(crate) const CALL: char = 'l';
    pub(crate) const SESSION: char = 's';
    pub(crate) const OUTCOME: char = 'u';
    pub(crate) const SPEC_BROKEN: char = 'x';
}

/// The `dial_by` key of `value` under field tag `t`.
pub(crate) fn by_key(t: char, value: &str) -> String {
    let mut k = String::with_capacity(value.len() + 2);
    k.push(t);
    k.push('\u{1f}');
    k.push_str(value);
    k
}

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
    expires_ms  INTEGER,
    session     TEXT NOT NULL DEFAULT '',
    spec        INTEGER
);
CREATE TABLE IF NOT EXISTS dial_keys (
    k           INTEGER NOT NULL
);
DROP INDEX IF EXISTS dials_start;
CREATE INDEX IF NOT EXISTS dials_expires ON dials(expires_ms) WHERE expires_ms IS NOT NULL;
";

/// Tables and triggers of version 3, after `dials` has its version 3 columns.
const SCHEMA_V3: &str = "
CREATE TABLE IF NOT EXISTS dial_meta (
    k           TEXT PRIMARY KEY,
    v           INTEGER NOT NULL
);
INSERT OR IGNORE INTO dial_meta (k, v) VALUES ('indexed_upto', 0);
CREATE VIRTUAL TABLE IF NOT EXISTS dial_fts USING fts5(
    request, response, error,
    content = '', contentless_delete = 1,
    tokenize = \"unicode61 remove_diacritics 0 tokenchars '_'\"
);
CREATE TABLE IF NOT EXISTS dial_by (
    key         TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    PRIMARY KEY (key, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS conn_events (
    seq         INTEGER PRIMARY KEY,
    phone       TEXT NOT NULL,
    label       TEXT NOT NULL,
    at_ms       INTEGER NOT NULL,
    event       TEXT NOT NULL,
    detail      TEXT NOT NULL,
    expires_ms  INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS conn_events_expires ON conn_events(expires_ms);
CREATE TRIGGER IF NOT EXISTS dials_unindex AFTER DELETE ON dials BEGIN
    DELETE FROM dial_fts WHERE rowid = old.rowid;
    DELETE FROM dial_by WHERE seq = old.rowid AND key IN (
        'o' || char(31) || old.op, 'c' || char(31) || old.caller,
        'e' || char(31) || old.callee, 'p' || char(31) || old.phone,
        'l' || char(31) || old.call_id, 's' || char(31) || old.session,
        'u' || char(31) || old.outcome, 'x' || char(31));
END;
";

fn storage(path: &Path, what: &str, e: rusqlite::Error) -> DialLogError {
    DialLogError::Storage(format!("{what} {}: {e}", path.display()))
}

/// Opens (creating if needed) the dial database in `dir`, in WAL mode. On Unix the folder is
/// `0700` when created here and the database and its `-wal` and `-shm` files are `0600`
/// (SQLite gives the `-wal` and `-shm` files the database file's mode; files an earlier version
/// left `0644` are tightened).
pub fn open(dir: &Path) -> Result<(Connection, PathBuf), DialLogError> {
    switchboard_wire::fsutil::create_private_dir_all(dir).map_err(|e| {
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
        match switchboard_wire::fsutil::make_private_file(&side) {
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
        .and_then(|_| add_v3_columns(&conn))
        .and_then(|_| conn.execute_batch(SCHEMA_V3))
        .and_then(|_| conn.execute_batch(super::blocks::SCHEMA))
        .and_then(|_| conn.pragma_update(None, "user_version", SCHEMA_VERSION))
        .map_err(|e| storage(&path, "preparing", e))?;
    Ok((conn, path))
}

/// Adds the version 3 columns (`session`, `spec`) to a version 2 `dials` table; nothing when
/// they are there.
fn add_v3_columns(conn: &Connection) -> rusqlite::Result<()> {
    let mut have = std::collections::HashSet::new();
    {
        let mut stmt = conn.prepare("SELECT name FROM pragma_table_info('dials')")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            have.insert(r.get::<_, String>(0)?);
        }
    }
    if !have.contains("session") {
        conn.execute_batch("ALTER TABLE dials ADD COLUMN session TEXT NOT NULL DEFAULT '';")?;
    }
    if !have.contains("spec") {
        conn.execute_batch("ALTER TABLE dials ADD COLUMN spec INTEGER;")?;
    }
    Ok(())
}

/// Creates the (empty) database file `path` when missing, exclusively and `0600` on Unix, so
/// SQLite never creates it under the umask; sets an existing one to `0600`.
fn create_private(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(
        &mut options,
        switchboard_wire::fsutil::PRIVATE_FILE_MODE,
    );
    match options.open(path) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    // Whatever the umask made of it (or an earlier version left).
    switchboard_wire::fsutil::make_private_file(path)
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
    if version >= 2 || !has_table {
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

/// The columns [`dial_from_row`] reads, in its order (table alias `d`).
pub(crate) const DIAL_COLS: &str = "d.rowid, d.id, d.phone, d.call_id, d.caller, d.callee, \
    d.endpoint, d.op, d.request, d.start_ms, d.duration_ms, d.outcome, d.response, d.error, \
    d.retention, d.session, d.spec";

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

/// The highest sequence number stored (dials and connection events), 0 when none.
pub(crate) fn max_seq(conn: &Connection) -> rusqlite::Result<u64> {
    let n: i64 = conn.query_row(
        "SELECT max(coalesce((SELECT max(rowid) FROM dials), 0),
                    coalesce((SELECT max(seq) FROM conn_events), 0))",
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
/// must never reach the file). A dial's spec count goes in with it when something already
/// asked for it (the live table's row, a filter, the stats: [`SpecMark::get`]), so
/// [`index_some`] reads it back instead of parsing and checking the dial's JSON again; the
/// insert never runs the check itself (acknowledgements wait for it). The dial log never
/// hands the writer a dial whose id is stored (its dedup checks the ring, the writes on their
/// way and this file), so there is no uniqueness constraint to check on every insert.
pub(crate) fn insert_batch(conn: &mut Connection, dials: &[Arc<Dial>]) -> rusqlite::Result<usize> {
    let tx = conn.transaction()?;
    let mut n = 0;
    {
        let mut stmt = tx.prepare_cached(
            "INSERT INTO dials (id, phone, call_id, caller, callee, endpoint, op, request,
                start_ms, duration_ms, outcome, response, error, retention, expires_ms, session,
                rowid, spec)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                ?17, ?18)",
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
                &*d.session,
                // The log's sequence number; a dial built outside a log (0) takes the next rowid.
                (d.seq.0 > 0).then(|| i64::try_from(d.seq.0).unwrap_or(i64::MAX)),
                d.spec.get().map(i64::from),
            ])?;
            key.execute(params![id_key(&d.id)])?;
        }
    }
    tx.commit()?;
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
    /// Rows up to this rowid are in the column blocks ([`super::blocks`]).
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
    dict: &mut super::blocks::Dict,
) -> Result<IndexMarks, DialLogError> {
    let st = |e| storage(path, "indexing", e);
    let tx = conn.transaction().map_err(st)?;
    let from = indexed_upto(&tx).map_err(st)?;
    let cols = super::blocks::cols_upto(&tx).map_err(st)?;
    if cols < from {
        let mut app = super::blocks::Appender::default();
        let last = app
            .read_columns(&tx, dict, cols + 1, from, BLOCKS_CATCH_UP_CHUNK)
            .map_err(st)?;
        app.flush(&tx).map_err(st)?;
        let upto = last.unwrap_or(from);
        super::blocks::set_cols_upto(&tx, upto).map_err(st)?;
        tx.commit().map_err(st)?;
        return Ok(IndexMarks {
            indexed_upto: from,
            cols_upto: upto,
            more: true,
        });
    }
    let mut last = from;
    let mut n = 0i64;
    let mut app = super::blocks::Appender::default();
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
        super::blocks::set_cols_upto(&tx, last).map_err(st)?;
    }
    tx.commit().map_err(st)?;
    Ok(IndexMarks {
        indexed_upto: last,
        cols_upto: last.max(cols),
        more: n == INDEX_CHUNK,
    })
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
            super::blocks::BLOCK_SHIFT
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
        let upto = super::blocks::cols_upto(&tx)?;
        super::blocks::rebuild(&tx, &blocks, upto)?;
    }
    tx.commit()?;
    Ok(n)
}

/// Deletes every row. Returns rows deleted.
pub(crate) fn clear(conn: &Connection) -> rusqlite::Result<usize> {
    let tx = conn.unchecked_transaction()?;
    tx.execute("DELETE FROM dial_keys", [])?;
    tx.execute("DELETE FROM conn_events", [])?;
    tx.execute("DELETE FROM dial_blocks", [])?;
    let n = tx.execute("DELETE FROM dials", [])?;
    tx.commit()?;
    Ok(n)
}

/// Work for the writer thread.
pub(crate) enum WriterMsg {
    /// Insert these dials; afterwards mark `upto` (the last arrival number in the batch) written
    /// and, when the transaction committed, durable. An empty batch only moves the marks (dials
    /// cleared before they were written). `bytes` is what the batch counts in
    /// [`WriterShared::unwritten_bytes`]; the writer takes it off once the dials are dropped.
    Insert {
        dials: Vec<Arc<Dial>>,
        upto: u64,
        bytes: u64,
    },
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
    Connection(crate::history::ConnectionEvent),
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
    /// Bytes ([`crate::log::held_bytes`]) of the persisting dials held and not yet
    /// written: waiting in the actor's batch or queued to the writer. Ingest waits while it is
    /// past [`crate::DialLogConfig::max_unwritten_bytes`].
    pub unwritten_bytes: AtomicU64,
    /// The highest `unwritten_bytes` has been since start.
    pub peak_unwritten_bytes: AtomicU64,
    /// Notified (all waiters) each time the writer finished a batch, and when it stops.
    pub progress: tokio::sync::Notify,
    /// Set when the writer thread ended (nothing will be written any more: ingest stops
    /// waiting for room).
    pub stopped: std::sync::atomic::AtomicBool,
    /// Rows up to this rowid are indexed for history search ([`index_some`]).
    pub indexed_upto: AtomicU64,
    /// Rows up to this rowid have their column blocks ([`super::blocks`]).
    pub cols_upto: AtomicU64,
    /// Set while a batch waits for room on a full disk (SQLite's `SQLITE_FULL`): the words
    /// the status, the tray and `switchboard status` show. Cleared once it is written.
    pub disk_full: Mutex<Option<String>>,
}

impl WriterShared {
    /// Counts `bytes` more unwritten.
    pub(crate) fn add_unwritten(&self, bytes: u64) {
        let now = self.unwritten_bytes.fetch_add(bytes, Ordering::AcqRel) + bytes;
        self.peak_unwritten_bytes.fetch_max(now, Ordering::AcqRel);
    }

    /// Counts `bytes` fewer unwritten (written, failed, or cleared before writing).
    pub(crate) fn sub_unwritten(&self, bytes: u64) {
        let _ = self
            .unwritten_bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| {
                Some(b.saturating_sub(bytes))
            });
    }
}

/// Page cache of the writer's connection, in KiB.
const WRITER_CACHE_KIB: i64 = 8 * 1024;
/// WAL pages between automatic checkpoints (4 KiB pages: 16 MiB).
const WRITER_CHECKPOINT_PAGES: i64 = 4096;

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

/// First and longest wait between tries of a batch while the disk is full.
const FULL_RETRY_FIRST: Duration = Duration::from_millis(100);
const FULL_RETRY_MAX: Duration = Duration::from_secs(2);

/// Whether `e` is SQLite saying the disk (or the file system's quota) is full.
pub(crate) fn is_disk_full(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull)
}

/// Runs the writer loop on the current (dedicated) thread until the sender side is dropped.
///
/// A batch that fails because the disk is full ([`is_disk_full`]) is not dropped: the writer
/// keeps it and tries it again (every [`FULL_RETRY_FIRST`], doubling to [`FULL_RETRY_MAX`])
/// until it is written, so nothing after it is reported durable meanwhile (acknowledgements
/// wait, and the log stops taking dials once its unwritten bytes reach their limit) and
/// writing resumes by itself once there is room. Meanwhile [`WriterShared::disk_full`] says
/// so; a flush is answered at once with that error; other messages wait their turn. Any other
/// write error drops the batch, is reported, and ends durability for the run as before.
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
        switchboard_wire::sync::lock(&shared.error).get_or_insert(msg);
    };
    // Once a batch failed, no later arrival counts as durable (the failed dials are not in the
    // file, and the watermark is a single number).
    let mut failed = false;
    // Whether rows may be waiting to be indexed (checked when the queue is empty).
    let mut to_index = true;
    let mut pace = IndexPace::default();
    let mut dict = super::blocks::Dict::default();
    // Messages that came while a batch waited for room, in their order.
    let mut deferred: std::collections::VecDeque<WriterMsg> = std::collections::VecDeque::new();
    // The sender side was dropped while a batch waited for room.
    let mut closing = false;
    loop {
        let msg = if let Some(m) = deferred.pop_front() {
            m
        } else if closing {
            break;
        } else if to_index {
            match rx.try_recv() {
                Ok(m) => m,
                Err(std::sync::mpsc::TryRecvError::Empty) => {
                    if let Some(wait) = pace.wait(Instant::now()) {
                        // Dials are arriving: the next chunk waits, unless a message comes.
                        match rx.recv_timeout(wait) {
                            Ok(m) => m,
                            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
                            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                        }
                    } else {
                        pace.indexed(Instant::now());
                        match index_some(&mut conn, &path, &mut dict) {
                            Ok(marks) => {
                                shared.cols_upto.store(marks.cols_upto, Ordering::Release);
                                shared
                                    .indexed_upto
                                    .store(marks.indexed_upto, Ordering::Release);
                                to_index = marks.more;
                            }
                            Err(e) => {
                                dict.forget();
                                // A full disk only delays indexing (it runs again after the
                                // next insert; queries match unindexed rows meanwhile): logged,
                                // not a write error. SQLite's text for SQLITE_FULL.
                                let text = e.to_string();
                                if text.contains("database or disk is full") {
                                    tracing::warn!(target: "switchboard::dials", "{text}");
                                } else {
                                    record_error(text);
                                }
                                to_index = false;
                            }
                        }
                        continue;
                    }
                }
                Err(std::sync::mpsc::TryRecvError::Disconnected) => break,
            }
        } else {
            match rx.recv() {
                Ok(m) => m,
                Err(_) => break,
            }
        };
        match msg {
            WriterMsg::Insert { dials, upto, bytes } => {
                pace.inserted(Instant::now());
                let mut wait = FULL_RETRY_FIRST;
                loop {
                    match insert_batch(&mut conn, &dials) {
                        Ok(n) => {
                            shared.rows_written.fetch_add(n as u64, Ordering::Relaxed);
                            if switchboard_wire::sync::lock(&shared.disk_full)
                                .take()
                                .is_some()
                            {
                                tracing::warn!(target: "switchboard::dials", "{} has room again: dial history writing resumed", path.display());
                            }
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
                        Err(e) if is_disk_full(&e) && !closing => {
                            let folder = path.parent().unwrap_or(&path);
                            let msg = format!(
                                "the disk holding {} is full: {} dials wait in memory and are \
                                 not acknowledged to the phone until there is room ({e})",
                                folder.display(),
                                dials.len()
                            );
                            let first = switchboard_wire::sync::lock(&shared.disk_full)
                                .replace(msg.clone())
                                .is_none();
                            // Logged, not kept as the flush's error: once written, nothing was
                            // lost (a flush meanwhile is answered with it, below).
                            if first {
                                tracing::error!(target: "switchboard::dials", "{msg}");
                            }
                            match rx.recv_timeout(wait) {
                                Ok(WriterMsg::Flush { reply }) => {
                                    let err = switchboard_wire::sync::lock(&shared.error)
                                        .take()
                                        .unwrap_or(msg);
                                    let _ = reply.send(Err(DialLogError::Storage(err)));
                                }
                                Ok(other) => deferred.push_back(other),
                                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                                // One last try, then the batch is reported lost below.
                                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                                    closing = true;
                                }
                            }
                            wait = (wait * 2).min(FULL_RETRY_MAX);
                            continue;
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
                    break;
                }
                shared.written_upto.fetch_max(upto, Ordering::Release);
                shared.in_flight.fetch_sub(1, Ordering::AcqRel);
                // The dials' memory goes with the batch (the ring may still hold some).
                drop(dials);
                shared.sub_unwritten(bytes);
                shared.progress.notify_waiters();
                to_index = true;
            }
            WriterMsg::Prune { now_ms, reply } => {
                let r = prune(&conn, now_ms).map_err(|e| storage(&path, "pruning", e));
                // Ids a failed prune added are rolled back.
                dict.forget();
                if let Err(e) = &r {
                    record_error(e.to_string());
                }
                if let Some(reply) = reply {
                    let _ = reply.send(r);
                }
            }
            WriterMsg::Clear { reply } => {
                let r = clear(&conn).map_err(|e| storage(&path, "clearing", e));
                if let Ok(upto) = indexed_upto(&conn) {
                    shared.indexed_upto.store(upto, Ordering::Release);
                }
                let _ = reply.send(r);
            }
            WriterMsg::Connection(ev) => {
                if let Err(e) = insert_connection(&conn, &ev) {
                    record_error(format!(
                        "writing a connection event to {}: {e}",
                        path.display()
                    ));
                }
            }
            WriterMsg::Flush { reply } => {
                let err = switchboard_wire::sync::lock(&shared.error).take();
                let _ = reply.send(match err {
                    Some(e) => Err(DialLogError::Storage(e)),
                    None => Ok(()),
                });
            }
        }
    }
    shared.stopped.store(true, Ordering::Release);
    shared.progress.notify_waiters();
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

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
        let mut dict = super::super::blocks::Dict::default();
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
