//! The dial file's tables and versions: opening (and creating, private) the file, moving an
//! older version's tables to the current schema, and the keys the field index and the dedup
//! use. Every table's shape is here, so a reader of the other parts knows what they touch.

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection};

#[cfg(doc)]
use super::index::{index_some, IndexPace, INDEX_BUSY_EVERY};
use super::{storage, DB_FILE};
use crate::DialLogError;

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
/// [`crate::blocks`]), written with the other indexes; a version 3 file gets its blocks in the
/// background (its queries use the version 3 plans until they are complete).
/// Version 5 adds `dial_keys.p`, the [`id_key`] of each dial's phone, so the log can keep the
/// newest keys of each phone in memory rather than every key; rows of older files have none
/// (`NULL`) and share one window. It also adds `dials.arrived_ms`, when the dial reached the
/// desktop (`NULL` for older rows: the filter's time terms then judge their start).
/// Version 6 adds `dial_journal`, batches committed whole during a flood and moved into `dials`
/// after it ([`super::journal`]); opening a file moves what a crash left there.
const SCHEMA_VERSION: i64 = 6;

/// Page size of a new dial file, in bytes. A dial row is ~0.6-1 KiB of text: with SQLite's
/// default 4 KiB pages a flood of dials spends a quarter of the writer's time on per-page work
/// (B-tree balancing, page cache, WAL frame headers and checksums); 16 KiB pages took the
/// writer from 3.45 to 2.77 us a dial in the live-dials bench, with history search unchanged
/// (`docs/performance.md`). The cost is at a trickle: each commit writes whole pages, so a
/// commit of one dial puts ~4 x 16 KiB in the WAL instead of ~4 x 4 KiB.
pub(crate) const PAGE_BYTES: i64 = 16 * 1024;

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
    spec        INTEGER,
    arrived_ms  INTEGER
);
CREATE TABLE IF NOT EXISTS dial_keys (
    k           INTEGER NOT NULL,
    p           INTEGER
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

/// Opens (creating if needed) the dial database in `dir`, in WAL mode, and moves what its
/// journal holds into rows ([`super::journal`]: a crash between a flood and its move). On Unix
/// the folder is `0700` when created here and the database and its `-wal` and `-shm` files are
/// `0600` (SQLite gives the `-wal` and `-shm` files the database file's mode; files an earlier
/// version left `0644` are tightened).
///
/// # Errors
/// [`DialLogError::Storage`] naming the file and the step: creating, opening, upgrading or
/// preparing it, or moving its journal (a journal row whose body does not decode is named with
/// the dial and byte where it breaks; it stays in the file for repair).
pub fn open(dir: &Path) -> Result<(Connection, PathBuf), DialLogError> {
    switchboard_wire::fsutil::create_private_dir_all(dir).map_err(|e| {
        DialLogError::Storage(format!("creating data folder {}: {e}", dir.display()))
    })?;
    let path = dir.join(DB_FILE);
    create_private(&path)
        .map_err(|e| DialLogError::Storage(format!("creating {}: {e}", path.display())))?;
    let mut conn = Connection::open(&path).map_err(|e| storage(&path, "opening", e))?;
    // A new file gets larger pages (they take effect when its first table is written, and
    // cannot change afterwards in WAL mode: a file made with 4 KiB pages keeps them).
    let new_file: i64 = conn
        .pragma_query_value(None, "page_count", |r| r.get(0))
        .map_err(|e| storage(&path, "opening", e))?;
    if new_file == 0 {
        conn.pragma_update(None, "page_size", PAGE_BYTES)
            .map_err(|e| storage(&path, "preparing", e))?;
    }
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
        .and_then(|_| add_columns(&conn))
        .and_then(|_| conn.execute_batch(SCHEMA_V3))
        .and_then(|_| conn.execute_batch(crate::blocks::SCHEMA))
        .and_then(|_| conn.execute_batch(super::journal::SCHEMA))
        .and_then(|_| conn.pragma_update(None, "user_version", SCHEMA_VERSION))
        .map_err(|e| storage(&path, "preparing", e))?;
    // Batches a crash left in the journal become rows before anything reads the file.
    super::journal::move_all(&mut conn).map_err(|e| e.into_storage(&path))?;
    Ok((conn, path))
}

/// Adds the version 3 columns (`session`, `spec`) to a version 2 `dials` table and the version 5
/// columns (`dials.arrived_ms`, `dial_keys.p`); nothing when they are there.
fn add_columns(conn: &Connection) -> rusqlite::Result<()> {
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
    if !have.contains("arrived_ms") {
        conn.execute_batch("ALTER TABLE dials ADD COLUMN arrived_ms INTEGER;")?;
    }
    let has_phone_key: bool = conn.query_row(
        "SELECT count(*) FROM pragma_table_info('dial_keys') WHERE name = 'p'",
        [],
        |r| r.get::<_, i64>(0).map(|n| n > 0),
    )?;
    if !has_phone_key {
        conn.execute_batch("ALTER TABLE dial_keys ADD COLUMN p INTEGER;")?;
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
        let mut read = tx.prepare("SELECT rowid, id, phone FROM dials_v1 ORDER BY rowid")?;
        let mut key = tx.prepare("INSERT INTO dial_keys (rowid, k, p) VALUES (?1, ?2, ?3)")?;
        let mut rows = read.query([])?;
        while let Some(row) = rows.next()? {
            let rowid: i64 = row.get(0)?;
            let id: String = row.get(1)?;
            let phone: String = row.get(2)?;
            key.execute(params![rowid, id_key(&id), id_key(&phone)])?;
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::record::{Retention, Seq};
    use crate::store::insert_batch;
    use std::sync::Arc;

    fn page_size(conn: &Connection) -> i64 {
        conn.pragma_query_value(None, "page_size", |r| r.get(0))
            .unwrap()
    }

    fn dials(n: u64) -> Vec<Arc<crate::record::Dial>> {
        (0..n)
            .map(|i| {
                let mut d = switchboard_domain::dial::sample::sample_dial(i, 2, 1_800_000_000_000);
                d.retention = Retention::Standard;
                d.seq = Seq(i + 1);
                Arc::new(d)
            })
            .collect()
    }

    /// A new file is made with [`PAGE_BYTES`] pages and keeps them when opened again.
    #[test]
    fn a_new_file_gets_large_pages() {
        let dir = tempfile::tempdir().unwrap();
        let (mut conn, path) = open(dir.path()).unwrap();
        assert_eq!(page_size(&conn), PAGE_BYTES);
        insert_batch(&mut conn, &dials(50)).unwrap();
        drop(conn);
        let (conn, _) = open(dir.path()).unwrap();
        assert_eq!(page_size(&conn), PAGE_BYTES);
        let n: i64 = conn
            .query_row("SELECT count(*) FROM dials", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 50);
        // The header says so too (bytes 16-17, big-endian; what another reader sees).
        let header = std::fs::read(&path).unwrap();
        assert_eq!(
            i64::from(u16::from_be_bytes([header[16], header[17]])),
            PAGE_BYTES
        );
    }

    /// A file an earlier version made with SQLite's default 4 KiB pages opens with them, its
    /// dials intact, and takes new dials (a WAL file's page size cannot change in place).
    #[test]
    fn a_file_with_small_pages_keeps_them_and_its_dials() {
        let dir = tempfile::tempdir().unwrap();
        {
            let path = dir.path().join(DB_FILE);
            let c = Connection::open(&path).unwrap();
            c.pragma_update(None, "page_size", 4096).unwrap();
            c.pragma_update(None, "journal_mode", "WAL").unwrap();
            c.execute_batch("CREATE TABLE t (x INTEGER); DROP TABLE t;")
                .unwrap();
            assert_eq!(page_size(&c), 4096);
        }
        let (mut conn, _) = open(dir.path()).unwrap();
        assert_eq!(page_size(&conn), 4096);
        insert_batch(&mut conn, &dials(20)).unwrap();
        drop(conn);
        let (conn, _) = open(dir.path()).unwrap();
        assert_eq!(page_size(&conn), 4096);
        let n: i64 = conn
            .query_row("SELECT count(*) FROM dials", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 20);
    }
}
