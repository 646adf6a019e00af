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
//! random page per dial. Instead each row's 64-bit `id_key` (and its phone's) is appended to
//! `dial_keys`, whose newest keys of each phone the dial log reads at start and keeps in memory
//! (a bounded window a phone); its dedup treats a known key as a replay, so a resent dial is
//! not stored twice, even across restarts.
//!
//! The parts, one concept a file: `schema` (tables, versions, opening and migrating a file),
//! `rows` (reading and writing dials and connection events, pruning), `journal` (batches
//! committed whole during a flood, moved into rows after it), `index` (the history indexes,
//! built behind the writes) and `writer` (the thread that owns the writing connection).

use std::path::Path;

use crate::DialLogError;

mod index;
pub(crate) mod journal;
mod rows;
mod schema;
mod writer;

pub(crate) use index::{index_some, IndexPace};
pub use rows::load_newest;
pub(crate) use rows::{
    clear, dial_cols_of, dial_from_row, for_each_key_newest_first, indexed_upto, insert_batch,
    insert_connection, max_seq, prune, DIAL_COLS,
};
pub use schema::open;
pub(crate) use schema::{by_key, id_key, tag};
pub(crate) use writer::{writer_loop, WriterMsg, WriterShared};

/// File name of the dial database inside the data folder.
pub const DB_FILE: &str = "dials.sqlite3";

/// Every dial the file's journal holds now ([`journal`]: batches a flood committed whole, not
/// moved into rows yet), in arrival order: for a reader beside a running log (a tool, a test)
/// that counts what is stored, which is the rows and these. `path` names the file in errors.
///
/// # Errors
/// [`DialLogError::Storage`] when the journal cannot be read or a body does not decode (naming
/// the row, the dial and the byte).
pub fn journaled_dials(
    conn: &rusqlite::Connection,
    path: &Path,
) -> Result<Vec<crate::record::Dial>, DialLogError> {
    let mut out = Vec::new();
    journal::each_between(conn, path, 0, u64::MAX, |d| out.push(d))?;
    Ok(out)
}

/// A [`DialLogError::Storage`] naming the step (`what`), the file and SQLite's error.
pub(crate) fn storage(path: &Path, what: &str, e: rusqlite::Error) -> DialLogError {
    DialLogError::Storage(format!("{what} {}: {e}", path.display()))
}
