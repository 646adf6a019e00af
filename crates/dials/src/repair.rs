//! A broken dial history at start: detect it, move it aside, start a fresh history and salvage
//! what rows can still be read into it.
//!
//! [`check`] opens the history file and runs SQLite's `PRAGMA quick_check(1)` (every page of
//! every table and index read once, without the cross-checks of the full integrity check), and
//! looks for a write-ahead log whose database file is gone. Only what SQLite reports as
//! corruption (`SQLITE_CORRUPT`, `SQLITE_NOTADB`, a `quick_check` finding) or a WAL without its
//! database counts as broken: a file that is locked, unreadable for its permissions or on a
//! failing disk is left where it is (the log then runs in memory only and says why), so a
//! passing fault never costs the history.
//!
//! [`repair`] moves a broken file and its `-wal` and `-shm` aside under a dated name
//! (`dials.sqlite3.broken-20260721T093000Z`, its `-wal` and `-shm` beside it, so SQLite still
//! reads the old file with its log), creates a fresh history with the log's own schema
//! ([`super::store::open`]) and copies every dial row it can still read from the old `dials`
//! table into it, in arrival (rowid) order, keeping the rowids. The bundled SQLite has no
//! recovery extension (`sqlite3_recover_*` lives in SQLite's `ext/recover`, which the
//! amalgamation rusqlite bundles does not include), so the salvage reads the table itself: a
//! rowid-ordered scan that, when a page fails, probes the rowids after the last good one one
//! by one until rows read again, and skips each row that does not decode into a dial (bad
//! outcome, retention or request JSON). Connection events are not salvaged (they are kept 30
//! days for the timeline only).
//!
//! What happened is written to [`RECOVERY_FILE`] beside the history (newest first, at most
//! [`KEPT_RECOVERIES`]) for the support bundle, and returned for the app's banner.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::{params, Connection, ErrorCode, OpenFlags};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::record::Dial;
use super::store::{self, DB_FILE};
use super::DialLogError;

/// File beside the history that lists the recoveries made ([`HistoryRecovery`], JSON array,
/// newest first).
pub const RECOVERY_FILE: &str = "dials-recovery.json";

/// Recoveries [`RECOVERY_FILE`] keeps.
pub const KEPT_RECOVERIES: usize = 10;

/// Most rowids probed one by one past unreadable pages in one salvage: bounds the time a
/// salvage of a badly damaged file takes (a point lookup is a few microseconds).
const MAX_PROBES: u64 = 4_000_000;

/// Dials inserted into the fresh history per transaction while salvaging.
const SALVAGE_BATCH: usize = 1000;

/// What [`check`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// No history yet, or one SQLite reads without a finding.
    Fine,
    /// The history is damaged; the text says how (SQLite's own words where it gave them).
    Broken(String),
}

/// One recovery of a broken history, as the banner and the support bundle show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct HistoryRecovery {
    /// When it was made (epoch ms, the desktop's clock).
    #[ts(type = "number")]
    pub at_ms: i64,
    /// What was wrong with the file (SQLite's finding).
    pub problem: String,
    /// Where the broken file was moved (its `-wal` and `-shm`, if any, beside it with those
    /// suffixes); kept for support, never read again by the app.
    pub moved_to: String,
    /// Dials copied from the broken file into the fresh history.
    #[ts(type = "number")]
    pub recovered: u64,
    /// How many dials the broken file listed (its `dial_keys` table), when that could be read.
    #[ts(type = "number | null")]
    pub listed: Option<u64>,
    /// Why the salvage stopped early or found nothing to read (the old file not opening at
    /// all, for one), if it did.
    pub salvage_error: Option<String>,
}

impl HistoryRecovery {
    /// One line for the banner and the logs: what was wrong, how many dials came back, where
    /// the old file is.
    pub fn summary(&self) -> String {
        let listed = match self.listed {
            Some(n) => format!(" of {n}"),
            None => String::new(),
        };
        let why = match &self.salvage_error {
            Some(e) => format!(" ({e})"),
            None => String::new(),
        };
        format!(
            "The dial history was damaged ({}). A fresh history was started and {}{listed} \
             dials were recovered into it{why}. The damaged file is kept at {}.",
            self.problem, self.recovered, self.moved_to
        )
    }
}

/// `path` with `suffix` appended to its name: SQLite's side files (`-wal`, `-shm`).
pub(crate) fn side(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

fn len_of(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.len())
}

/// Whether `e` is SQLite saying the file is damaged or not a database (as opposed to busy,
/// locked, out of memory, an I/O or permission error).
fn is_corruption(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
    )
}

/// Checks the dial history in `dir` (`PRAGMA quick_check(1)`; a WAL without its database).
///
/// # Errors
/// [`DialLogError::Storage`] naming the file when it cannot be checked for a reason that is not
/// damage (locked, permissions, I/O).
pub fn check(dir: &Path) -> Result<Health, DialLogError> {
    let path = dir.join(DB_FILE);
    let wal = side(&path, "-wal");
    let db_len = len_of(&path);
    if db_len.unwrap_or(0) == 0 {
        return Ok(match len_of(&wal) {
            Some(n) if n > 0 => Health::Broken(format!(
                "the database file is {} but its write-ahead log ({n} bytes) is there",
                if db_len.is_some() { "empty" } else { "missing" }
            )),
            _ => Health::Fine,
        });
    }
    let fail = |e: rusqlite::Error| -> Result<Health, DialLogError> {
        if is_corruption(&e) {
            Ok(Health::Broken(e.to_string()))
        } else {
            Err(DialLogError::Storage(format!(
                "checking {}: {e}",
                path.display()
            )))
        }
    };
    let conn = match Connection::open_with_flags(
        &path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    ) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let found: Result<Vec<String>, rusqlite::Error> = conn
        .prepare("PRAGMA quick_check(1)")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect());
    match found {
        Ok(lines) if lines.len() == 1 && lines[0] == "ok" => Ok(Health::Fine),
        // SQLite's finding spans lines ("*** in database main ***\nTree 2 page 18: ..."): one
        // line, for the banner, the logs and `switchboard status`.
        Ok(lines) => Ok(Health::Broken(format!(
            "quick_check: {}",
            lines
                .join("; ")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        ))),
        Err(e) => fail(e),
    }
}

/// The dated name a broken history in `dir` is moved to at `now_ms`: `dials.sqlite3.broken-`
/// and the UTC time (`20260721T093000Z`), with `-2`, `-3`, ... when that name is taken.
fn aside_name(dir: &Path, now_ms: i64) -> PathBuf {
    let p = switchboard_wire::timefmt::utc_parts(now_ms.div_euclid(1000), 0);
    let stamp = p.map_or_else(
        || "unknown-time".to_string(),
        |p| {
            format!(
                "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
                p.year, p.month, p.day, p.hour, p.minute, p.second
            )
        },
    );
    let base = format!("{DB_FILE}.broken-{stamp}");
    let mut name = dir.join(&base);
    let mut n = 2;
    while (name.exists() || side(&name, "-wal").exists()) && n < 10_000 {
        name = dir.join(format!("{base}-{n}"));
        n += 1;
    }
    name
}

/// Checks the history in `dir` and, when it is broken, moves it aside, starts a fresh history
/// and salvages what dials it can into it; records the recovery in [`RECOVERY_FILE`]. `None`
/// when the history was fine (or absent). Runs before the dial log opens the folder.
///
/// # Errors
/// [`DialLogError::Storage`] naming the file and step when the history cannot be checked for
/// a reason other than damage, or the broken file cannot be moved aside, or the fresh history
/// cannot be created. The broken file is then where it was (or aside, when only the fresh
/// history failed); nothing is deleted.
pub fn repair(dir: &Path, now_ms: i64) -> Result<Option<HistoryRecovery>, DialLogError> {
    let Health::Broken(problem) = check(dir)? else {
        return Ok(None);
    };
    let path = dir.join(DB_FILE);
    tracing::error!(target: "switchboard::dials", "dial history {} is damaged: {problem}", path.display());
    let aside = aside_name(dir, now_ms);
    let moved = |from: &Path, to: &Path| -> Result<(), DialLogError> {
        match std::fs::rename(from, to) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(DialLogError::Storage(format!(
                "moving the damaged {} aside to {}: {e}",
                from.display(),
                to.display()
            ))),
        }
    };
    // The database first, then its log and index: should a later move fail, the next start
    // finds a log without its database and moves it after the rest. A log whose database was
    // missing gets an empty database beside it, for SQLite to read the log's pages.
    moved(&path, &aside)?;
    moved(&side(&path, "-wal"), &side(&aside, "-wal"))?;
    moved(&side(&path, "-shm"), &side(&aside, "-shm"))?;
    if len_of(&aside).unwrap_or(0) == 0 {
        stand_in_for_log(&aside)?;
    }
    let _ = switchboard_wire::fsutil::make_private_file(&aside);
    let (mut fresh, _) = store::open(dir)?;
    let s = salvage(&aside, &mut fresh);
    drop(fresh);
    let recovery = HistoryRecovery {
        at_ms: now_ms,
        problem,
        moved_to: aside.display().to_string(),
        recovered: s.recovered,
        listed: s.listed,
        salvage_error: s.error,
    };
    tracing::warn!(target: "switchboard::dials", "{}", recovery.summary());
    if let Err(e) = record(dir, &recovery) {
        tracing::error!(target: "switchboard::dials", "recording the history recovery in {}: {e}", dir.join(RECOVERY_FILE).display());
    }
    Ok(Some(recovery))
}

/// Writes one page of zeros (the page size the log beside it names) as the database `aside`
/// whose log alone is left: SQLite deletes the log of an empty database file, but reads the
/// log of a one-page one, and every page the log holds (page 1 with the schema among them)
/// comes from the log; pages it does not hold read as damaged and are skipped by the salvage.
fn stand_in_for_log(aside: &Path) -> Result<(), DialLogError> {
    let wal = side(aside, "-wal");
    let header = std::fs::read(&wal)
        .map(|b| b.get(8..12).map(|s| [s[0], s[1], s[2], s[3]]))
        .map_err(|e| DialLogError::Storage(format!("reading {}: {e}", wal.display())))?;
    let size = header.map_or(4096, u32::from_be_bytes);
    // A page size SQLite allows (a power of two, 512 to 65 536), else the default.
    let size = if size.is_power_of_two() && (512..=65_536).contains(&size) {
        size
    } else {
        4096
    };
    std::fs::write(aside, vec![0u8; size as usize]).map_err(|e| {
        DialLogError::Storage(format!("creating {} beside its log: {e}", aside.display()))
    })
}

/// Adds `r` to the front of [`RECOVERY_FILE`] in `dir` (atomically; a file that does not
/// parse is replaced).
fn record(dir: &Path, r: &HistoryRecovery) -> std::io::Result<()> {
    let mut all = recoveries(dir).unwrap_or_default();
    all.insert(0, r.clone());
    all.truncate(KEPT_RECOVERIES);
    let bytes = serde_json::to_vec_pretty(&all).map_err(std::io::Error::other)?;
    switchboard_wire::fsutil::write_atomic(&dir.join(RECOVERY_FILE), &bytes)
}

/// The recoveries recorded in `dir`'s [`RECOVERY_FILE`], newest first; empty when there is
/// none.
///
/// # Errors
/// [`RecoveriesError`] when the file exists but cannot be read or parsed (naming it).
pub fn recoveries(dir: &Path) -> Result<Vec<HistoryRecovery>, RecoveriesError> {
    let path = dir.join(RECOVERY_FILE);
    match std::fs::read(&path) {
        Ok(b) => {
            serde_json::from_slice(&b).map_err(|source| RecoveriesError::Parse { path, source })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(RecoveriesError::Read { path, source }),
    }
}

/// The record of recoveries ([`RECOVERY_FILE`]) could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecoveriesError {
    /// The file is there but unreadable.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not the list this app writes.
    #[error("{}: {source}", path.display())]
    Parse {
        /// The file.
        path: std::path::PathBuf,
        /// Where and why.
        source: serde_json::Error,
    },
}

/// What [`salvage`] got out of a broken file.
#[derive(Debug, Default)]
struct Salvage {
    recovered: u64,
    listed: Option<u64>,
    error: Option<String>,
}

/// Opens the broken file `old` to read: read only first; read-write when SQLite needs to
/// rebuild the WAL index of an aside file it cannot open read only (it is the app's own copy).
/// `writable_schema` is set (nothing is written) because SQLite otherwise refuses a file
/// shorter than its header says, which a truncated file is.
fn open_old(old: &Path) -> rusqlite::Result<Connection> {
    let ro = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let rw = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let tolerant = |c: Connection| -> rusqlite::Result<Connection> {
        c.pragma_update(None, "writable_schema", true)?;
        c.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
            r.get::<_, i64>(0)
        })?;
        Ok(c)
    };
    match Connection::open_with_flags(old, ro).and_then(tolerant) {
        Ok(c) => Ok(c),
        Err(e) if is_corruption(&e) => Err(e),
        Err(_) => Connection::open_with_flags(old, rw).and_then(tolerant),
    }
}

/// Copies every readable, decodable dial of `old`'s `dials` table and journal into `fresh`
/// (see the module doc). Never fails: what went wrong is in [`Salvage::error`].
fn salvage(old: &Path, fresh: &mut Connection) -> Salvage {
    let mut out = Salvage::default();
    let conn = match open_old(old) {
        Ok(c) => c,
        Err(e) => {
            out.error = Some(format!("the damaged file cannot be read: {e}"));
            return out;
        }
    };
    out.listed = conn
        .query_row("SELECT count(*) FROM dial_keys", [], |r| r.get::<_, i64>(0))
        .ok()
        .and_then(|n| u64::try_from(n).ok());
    // The highest rowid the file knows of, from whichever table still answers.
    let upper = [
        "SELECT max(rowid) FROM dials",
        "SELECT max(rowid) FROM dial_keys",
    ]
    .iter()
    .filter_map(|q| {
        conn.query_row(q, [], |r| r.get::<_, Option<i64>>(0))
            .ok()
            .flatten()
    })
    .max();
    let mut seen: HashSet<Arc<str>> = HashSet::new();
    let mut batch: Vec<Arc<Dial>> = Vec::with_capacity(SALVAGE_BATCH);
    let mut first_error: Option<String> = None;
    let mut keep = |d: Dial, batch: &mut Vec<Arc<Dial>>, out: &mut Salvage| {
        if seen.insert(Arc::clone(&d.id)) {
            batch.push(Arc::new(d));
        }
        if batch.len() >= SALVAGE_BATCH {
            flush(fresh, batch, out);
        }
    };
    let mut after: i64 = 0;
    let mut probes: u64 = 0;
    loop {
        match scan(&conn, old, after, &mut |d| keep(d, &mut batch, &mut out)) {
            Ok(()) => break,
            Err((last, e)) => {
                after = after.max(last);
                first_error.get_or_insert(e);
            }
        }
        // Probe the rowids after the last good one until a row reads again.
        let Some(top) = upper.or_else(|| after.checked_add(1 << 20)) else {
            break;
        };
        let mut found = false;
        while after < top && probes < MAX_PROBES {
            after += 1;
            probes += 1;
            if let Ok(Some(d)) = point(&conn, old, after) {
                keep(d, &mut batch, &mut out);
                found = true;
                break;
            }
        }
        if !found {
            if probes >= MAX_PROBES {
                out.error = Some(format!(
                    "stopped after probing {MAX_PROBES} unreadable rowids"
                ));
            }
            break;
        }
    }
    // Batches committed during a flood and not moved into rows yet (a file of schema version 6
    // and later): every body that still decodes, its dials checked as a row's are.
    if let Ok(mut stmt) = conn.prepare("SELECT first, body FROM dial_journal ORDER BY first") {
        let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?)));
        match rows {
            Ok(rows) => {
                for row in rows {
                    let decoded = row.map_err(|e| e.to_string()).and_then(|(first, body)| {
                        store::journal::decode(u64::try_from(first).unwrap_or(0), &body)
                    });
                    match decoded {
                        Ok(dials) => {
                            out.listed = Some(out.listed.unwrap_or(0) + dials.len() as u64);
                            for d in dials {
                                if json_intact(&d) {
                                    keep(d, &mut batch, &mut out);
                                }
                            }
                        }
                        Err(e) => {
                            first_error.get_or_insert(e);
                        }
                    }
                }
            }
            Err(e) => {
                first_error.get_or_insert(e.to_string());
            }
        }
    }
    flush(fresh, &mut batch, &mut out);
    if out.error.is_none() && out.recovered == 0 {
        out.error = first_error.map(|e| format!("no dial row could be read: {e}"));
    }
    out
}

/// Inserts `batch` into `fresh` (ids and order kept) and counts it; an insert error ends the
/// salvage's writing (recorded once).
fn flush(fresh: &mut Connection, batch: &mut Vec<Arc<Dial>>, out: &mut Salvage) {
    if batch.is_empty() {
        return;
    }
    match store::insert_batch(fresh, batch) {
        Ok(n) => out.recovered += n as u64,
        Err(e) => {
            out.error
                .get_or_insert(format!("writing recovered dials to the fresh history: {e}"));
        }
    }
    batch.clear();
}

/// A dial from a salvaged row: as the log reads it, and its JSON texts checked again (a
/// damaged page can hold text that is no longer JSON).
fn salvaged(r: &rusqlite::Row<'_>, old: &Path) -> Option<Dial> {
    let d = store::dial_from_row(r, old).ok()?;
    json_intact(&d).then_some(d)
}

/// Whether a salvaged dial's request and response are still JSON.
fn json_intact(d: &Dial) -> bool {
    super::record::JsonText::parse(d.request.as_str()).is_ok()
        && d.response
            .as_ref()
            .map_or(true, |r| super::record::JsonText::parse(r.as_str()).is_ok())
}

/// Reads the rows above rowid `after` in order, calling `each` with each decodable one.
/// `Err((last good rowid, message))` when stepping fails (an unreadable page).
fn scan(
    conn: &Connection,
    old: &Path,
    after: i64,
    each: &mut dyn FnMut(Dial),
) -> Result<(), (i64, String)> {
    let mut last = after;
    let cols = store::dial_cols_of(conn);
    let mut stmt = conn
        .prepare(&format!(
            "SELECT {cols} FROM dials d WHERE d.rowid > ?1 ORDER BY d.rowid"
        ))
        .map_err(|e| (last, e.to_string()))?;
    let mut rows = stmt
        .query(params![after])
        .map_err(|e| (last, e.to_string()))?;
    loop {
        match rows.next() {
            Ok(Some(r)) => {
                if let Ok(id) = r.get::<_, i64>(0) {
                    last = last.max(id);
                }
                if let Some(d) = salvaged(r, old) {
                    each(d);
                }
            }
            Ok(None) => return Ok(()),
            Err(e) => return Err((last, e.to_string())),
        }
    }
}

/// The dial at rowid `id`, if it reads and decodes.
fn point(conn: &Connection, old: &Path, id: i64) -> rusqlite::Result<Option<Dial>> {
    let cols = store::dial_cols_of(conn);
    let mut stmt =
        conn.prepare_cached(&format!("SELECT {cols} FROM dials d WHERE d.rowid = ?1"))?;
    let mut rows = stmt.query(params![id])?;
    Ok(match rows.next()? {
        Some(r) => salvaged(r, old),
        None => None,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::record::{Retention, Seq};

    #[test]
    fn the_salvage_takes_journaled_dials_as_well_as_rows() {
        let old_dir = tempfile::tempdir().unwrap();
        let (mut old, old_path) = store::open(old_dir.path()).unwrap();
        let dials: Vec<Arc<Dial>> = (1..=43)
            .map(|i| {
                let mut d = switchboard_domain::dial::sample::sample_dial(i, 2, 1_800_000_000_000);
                d.retention = Retention::Permanent;
                d.seq = Seq(i);
                d.normalise();
                Arc::new(d)
            })
            .collect();
        store::insert_batch(&mut old, &dials[..3]).unwrap();
        store::journal::journal_batch(&mut old, &dials[3..]).unwrap();
        // A damaged body after the good one: named, the rest kept.
        old.execute(
            "INSERT INTO dial_journal (first, last, n, body) VALUES (100, 101, 2, x'01ff')",
            [],
        )
        .unwrap();
        drop(old);
        let fresh_dir = tempfile::tempdir().unwrap();
        let (mut fresh, _) = store::open(fresh_dir.path()).unwrap();
        let s = salvage(&old_path, &mut fresh);
        assert_eq!(s.recovered, 43, "{s:?}");
        let n: i64 = fresh
            .query_row("SELECT count(*) FROM dials", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 43);
        let last: String = fresh
            .query_row("SELECT id FROM dials WHERE rowid = 43", [], |r| r.get(0))
            .unwrap();
        assert_eq!(last, &*dials[42].id, "rowids kept");
    }
}
