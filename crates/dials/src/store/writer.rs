//! The writer thread: owns the writing connection, takes batches, prunes, clears and flushes
//! in order, indexes when it has nothing else to do, and keeps a batch (rather than dropping
//! it) while the disk is full, so SQLite stays off the log's hot path and nothing is reported
//! durable that is not in the file.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::journal::{self, MoveError, JOURNAL_MAX_DIALS, JOURNAL_MIN_BATCH};
use super::IndexPace;
use super::{clear, index_some, indexed_upto, insert_batch, insert_connection, prune, storage};
use crate::record::Dial;
use crate::DialLogError;

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
    /// Rows up to this rowid have their column blocks ([`crate::blocks`]).
    pub cols_upto: AtomicU64,
    /// Set while a batch waits for room on a full disk (SQLite's `SQLITE_FULL`): the words
    /// the status, the tray and `switchboard status` show. Cleared once it is written. A watch
    /// so the app hears of a change when it happens instead of looking every so often (an
    /// idle app in the tray should not wake to ask).
    pub disk_full: tokio::sync::watch::Sender<Option<String>>,
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

/// What the writer knows of the journal ([`journal`]): the dials it holds, whether a body
/// that does not decode stopped its moves (the body stays for repair, and so does what
/// follows it, as the journal is moved in order), when it last moved a batch while dials kept
/// coming, and whether the WAL's checkpoints wait for the flood to pass.
#[derive(Debug)]
struct Journal {
    held: u64,
    stuck: bool,
    moved_busy_at: Option<Instant>,
    checkpoints: Checkpoints,
}

impl Journal {
    fn new(held: u64, checkpoints: Checkpoints) -> Self {
        Journal {
            held,
            stuck: false,
            moved_busy_at: None,
            checkpoints,
        }
    }

    /// Whether there is something the writer can move.
    fn movable(&self) -> bool {
        self.held > 0 && !self.stuck
    }

    /// A batch of `n` dials (`bytes` of them, as [`WriterMsg::Insert`] counts them) was
    /// journaled: the WAL's checkpoints wait until the journal is moved ([`Checkpoints`]).
    fn journaled(&mut self, conn: &Connection, n: usize, bytes: u64) {
        self.held += n as u64;
        if n > 0 {
            self.checkpoints.defer(conn);
            self.checkpoints.committed(conn, bytes);
        }
    }

    /// While dials keep coming (`pace`), how long the next move waits at `now`: the oldest
    /// batch is moved at most once every [`JOURNAL_BUSY_EVERY`], and at once when the quiet
    /// begins. `None`: move now.
    fn busy_wait(&self, pace: &IndexPace, now: Instant) -> Option<Duration> {
        let quiet_in = pace.quiet_in(now)?;
        let since = now.saturating_duration_since(self.moved_busy_at?);
        let move_in = JOURNAL_BUSY_EVERY
            .checked_sub(since)
            .filter(|w| !w.is_zero())?;
        Some(quiet_in.min(move_in))
    }

    /// Moves the oldest batch into rows (at `now`, with `pace` telling whether dials are still
    /// coming).
    fn move_oldest(
        &mut self,
        conn: &mut Connection,
        pace: &IndexPace,
        now: Instant,
    ) -> Result<(), MoveError> {
        if pace.quiet_in(now).is_some() {
            self.moved_busy_at = Some(now);
        }
        match journal::move_oldest(conn)? {
            Some(n) => self.held = self.held.saturating_sub(n as u64),
            None => self.held = 0,
        }
        self.settle(conn);
        Ok(())
    }

    /// Moves everything into rows.
    fn move_all(&mut self, conn: &mut Connection) -> Result<(), MoveError> {
        journal::move_all(conn)?;
        self.emptied(conn);
        Ok(())
    }

    /// The journal is empty (moved, or the file cleared).
    fn emptied(&mut self, conn: &Connection) {
        self.held = 0;
        self.stuck = false;
        self.settle(conn);
    }

    /// Once the journal is empty, or stuck (it will not be moved until repaired), the
    /// checkpoints the flood put off run.
    fn settle(&mut self, conn: &Connection) {
        if self.held == 0 || self.stuck {
            self.checkpoints.resume(conn);
        }
    }
}

/// The WAL's automatic checkpoints: every [`WRITER_CHECKPOINT_BYTES`] normally; while the
/// journal holds a flood, only past [`FLOOD_CHECKPOINT_BYTES`], with one checkpoint once the
/// journal has been moved. A checkpoint copies every page written since the last one from the
/// WAL into the file, which during a flood was a quarter of the writer's time; put off, it is
/// paid after the flood, with the journal's moves.
///
/// What a power cut may lose stays as it was. With `synchronous=NORMAL` a commit survives the
/// app being killed at once, but reaches the disk only when the WAL is synced, which SQLite
/// does at each checkpoint: so every [`WRITER_CHECKPOINT_BYTES`] of dials. While checkpoints
/// wait, the WAL is synced as often (`fsync`, not the copy into the file), on a thread of its
/// own so the writer goes on committing meanwhile (an acknowledgement never waited for a sync).
#[derive(Debug)]
struct Checkpoints {
    /// `wal_autocheckpoint` values (pages of the file's size): normal, during a flood.
    normal_pages: i64,
    flood_pages: i64,
    deferred: bool,
    /// The WAL file, synced while checkpoints wait.
    wal: PathBuf,
    /// Dial bytes committed since the WAL was last synced (while checkpoints wait), and how
    /// many make a sync due.
    unsynced: u64,
    sync_every: u64,
    /// WAL syncs started while checkpoints waited (for the tests).
    syncs: u64,
    /// The sync under way, if any.
    syncing: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl Checkpoints {
    /// For the dial file at `db` whose pages are `page_bytes` long.
    fn new(page_bytes: i64, db: &std::path::Path) -> Self {
        let page = page_bytes.max(512);
        Checkpoints {
            normal_pages: WRITER_CHECKPOINT_BYTES / page,
            flood_pages: FLOOD_CHECKPOINT_BYTES / page,
            deferred: false,
            wal: crate::repair::side(db, "-wal"),
            unsynced: 0,
            sync_every: WRITER_CHECKPOINT_BYTES.unsigned_abs(),
            syncs: 0,
            syncing: None,
        }
    }

    fn defer(&mut self, conn: &Connection) {
        if self.deferred {
            return;
        }
        self.deferred = true;
        self.unsynced = 0;
        if let Err(e) = conn.pragma_update(None, "wal_autocheckpoint", self.flood_pages) {
            tracing::warn!(target: "switchboard::dials", "putting off WAL checkpoints during a flood: {e}");
        }
    }

    /// `bytes` of dials were committed: while checkpoints wait, the WAL is synced every
    /// `sync_every` of them (once the last sync has ended). A sync that failed ends the wait
    /// (SQLite's checkpoints, with their own syncs, take over).
    fn committed(&mut self, conn: &Connection, bytes: u64) {
        if !self.deferred {
            return;
        }
        self.unsynced = self.unsynced.saturating_add(bytes);
        if self.unsynced < self.sync_every {
            return;
        }
        if self.syncing.as_ref().is_some_and(|h| !h.is_finished()) {
            return;
        }
        if let Err(e) = self.sync_ended() {
            tracing::warn!(target: "switchboard::dials", "syncing {}: {e}; checkpoints resume", self.wal.display());
            self.resume(conn);
            return;
        }
        let wal = self.wal.clone();
        let started = std::thread::Builder::new()
            .name("dial-wal-sync".into())
            .spawn(move || {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&wal)
                    .and_then(|f| f.sync_data())
            });
        match started {
            Ok(h) => {
                self.syncing = Some(h);
                self.unsynced = 0;
                self.syncs += 1;
            }
            Err(e) => {
                tracing::warn!(target: "switchboard::dials", "starting a WAL sync: {e}; checkpoints resume");
                self.resume(conn);
            }
        }
    }

    /// Waits for the sync under way, if any, and gives its result.
    fn sync_ended(&mut self) -> std::io::Result<()> {
        match self.syncing.take().map(|h| h.join()) {
            None | Some(Ok(Ok(()))) => Ok(()),
            Some(Ok(Err(e))) => Err(e),
            Some(Err(_)) => Err(std::io::Error::other("the WAL sync thread panicked")),
        }
    }

    fn resume(&mut self, conn: &Connection) {
        if !self.deferred {
            return;
        }
        self.deferred = false;
        // The checkpoint syncs the WAL again; the sync under way only has to end first.
        if let Err(e) = self.sync_ended() {
            tracing::warn!(target: "switchboard::dials", "syncing {}: {e}", self.wal.display());
        }
        let done = conn
            .pragma_update(None, "wal_autocheckpoint", self.normal_pages)
            .and_then(|_| conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())));
        // Not a write error: what the WAL holds is committed, and the next checkpoint takes it.
        if let Err(e) = done {
            tracing::warn!(target: "switchboard::dials", "checkpointing the WAL after a flood: {e}");
        }
    }
}

/// Page cache of the writer's connection, in KiB: SQLite's default size. Inserts append (the
/// rows by rowid, their keys, the expiry index at a few places), so they touch few pages; a
/// larger cache only fills over the first minutes with pages the indexing pass read once, and
/// stays filled for the app's life (an app left in the tray all day holds it).
const WRITER_CACHE_KIB: i64 = 2 * 1024;
/// WAL bytes between automatic checkpoints (SQLite counts them in pages of the file's size).
/// Also the size the WAL file is cut back to after a checkpoint (`journal_size_limit`), so a
/// flood's WAL does not stay on disk.
const WRITER_CHECKPOINT_BYTES: i64 = 16 * 1024 * 1024;
/// WAL bytes between automatic checkpoints while the journal holds a flood ([`Checkpoints`]):
/// about [`JOURNAL_MAX_DIALS`] dials of the usual few hundred bytes, so a flood up to the
/// journal's bound is checkpointed once, after it.
const FLOOD_CHECKPOINT_BYTES: i64 = 256 * 1024 * 1024;
/// While dials keep coming, the journal's oldest batch is moved at most this often: a batch is
/// hundreds of dials and moving one costs about what writing its rows did, so moving one per
/// index tick (100 ms) took the writer a quarter more time during a flood. The rest is moved
/// when the quiet begins, and past [`JOURNAL_MAX_DIALS`] after each batch.
const JOURNAL_BUSY_EVERY: Duration = Duration::from_secs(1);

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
    // WAL checkpoints every WRITER_CHECKPOINT_BYTES rather than every 1000 pages (fewer
    // fsyncs), whatever the file's page size.
    let page = conn.pragma_query_value(None, "page_size", |r| r.get::<_, i64>(0));
    let checkpoints = Checkpoints::new(*page.as_ref().unwrap_or(&4096), &path);
    let tuned = page
        .and_then(|_| conn.pragma_update(None, "cache_size", -WRITER_CACHE_KIB))
        .and_then(|_| conn.pragma_update(None, "wal_autocheckpoint", checkpoints.normal_pages))
        .and_then(|_| conn.pragma_update(None, "journal_size_limit", WRITER_CHECKPOINT_BYTES));
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
    let mut dict = crate::blocks::Dict::default();
    // Messages that came while a batch waited for room, in their order.
    let mut deferred: std::collections::VecDeque<WriterMsg> = std::collections::VecDeque::new();
    // The sender side was dropped while a batch waited for room.
    let mut closing = false;
    // The file was opened with its journal moved, but a move may have failed.
    let mut jr = Journal::new(journal::held(&conn).unwrap_or(0), checkpoints);
    let move_failed = |e: MoveError, stuck: &mut bool| {
        if let MoveError::Sql(e) = &e {
            if is_disk_full(e) {
                // Only delayed, like indexing: it runs again after the next batch.
                tracing::warn!(target: "switchboard::dials", "moving the dial journal: {e}");
                return;
            }
        }
        *stuck = true;
        let msg = e.into_storage(&path).to_string();
        tracing::error!(target: "switchboard::dials", "{msg}");
        switchboard_wire::sync::lock(&shared.error).get_or_insert(msg);
    };
    loop {
        if jr.stuck {
            jr.settle(&conn);
        }
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
                    } else if jr.movable() {
                        let now = Instant::now();
                        if let Some(wait) = jr.busy_wait(&pace, now) {
                            match rx.recv_timeout(wait) {
                                Ok(m) => m,
                                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
                                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                            }
                        } else {
                            // The journal is moved before anything is indexed (indexing takes
                            // the rows above its mark in order), one batch a turn so a new
                            // message is never kept waiting for more than one.
                            pace.indexed(now);
                            if let Err(e) = jr.move_oldest(&mut conn, &pace, now) {
                                move_failed(e, &mut jr.stuck);
                                to_index = false;
                            }
                            continue;
                        }
                    } else if jr.held > 0 {
                        to_index = false;
                        continue;
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
                // A flood's batches are committed whole to the journal (one row a batch); a
                // small batch with the journal empty goes straight to rows. A dial built
                // outside a log (seq 0) takes the next rowid, so the journal is moved first.
                let outside_log = dials.iter().any(|d| d.seq.0 == 0 && d.retention.persists());
                let to_journal =
                    !outside_log && !jr.stuck && (jr.held > 0 || dials.len() >= JOURNAL_MIN_BATCH);
                if outside_log && jr.movable() {
                    if let Err(e) = jr.move_all(&mut conn) {
                        move_failed(e, &mut jr.stuck);
                    }
                }
                loop {
                    let written = if to_journal {
                        journal::journal_batch(&mut conn, &dials)
                    } else {
                        insert_batch(&mut conn, &dials)
                    };
                    match written {
                        Ok(n) => {
                            if to_journal {
                                jr.journaled(&conn, n, bytes);
                                // A stream that never pauses moves as it journals past the
                                // bound, so the journal stops growing.
                                if jr.held > JOURNAL_MAX_DIALS {
                                    let now = Instant::now();
                                    if let Err(e) = jr.move_oldest(&mut conn, &pace, now) {
                                        move_failed(e, &mut jr.stuck);
                                    }
                                }
                            }
                            shared.rows_written.fetch_add(n as u64, Ordering::Relaxed);
                            if shared.disk_full.send_if_modified(|v| v.take().is_some()) {
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
                            let mut first = false;
                            shared.disk_full.send_if_modified(|v| {
                                first = v.is_none();
                                let changed = v.as_deref() != Some(msg.as_str());
                                if changed {
                                    *v = Some(msg.clone());
                                }
                                changed
                            });
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
                // Journaled dials expire like the others: moved first, then pruned.
                if jr.movable() {
                    if let Err(e) = jr.move_all(&mut conn) {
                        move_failed(e, &mut jr.stuck);
                    }
                }
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
                if r.is_ok() {
                    jr.emptied(&conn);
                }
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
    // A clean stop leaves no journal behind (the next start would move it, but an older build
    // opening the file would not see it).
    if jr.movable() {
        if let Err(e) = jr.move_all(&mut conn) {
            move_failed(e, &mut jr.stuck);
        }
    }
    shared.stopped.store(true, Ordering::Release);
    shared.progress.notify_waiters();
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::store::index::INDEX_QUIET;
    use crate::store::journal::tests::samples;
    use crate::store::open;

    const MS: Duration = Duration::from_millis(1);

    fn autocheckpoint(conn: &Connection) -> i64 {
        conn.pragma_query_value(None, "wal_autocheckpoint", |r| r.get(0))
            .unwrap()
    }

    fn len(path: &std::path::Path) -> u64 {
        std::fs::metadata(path).unwrap().len()
    }

    #[test]
    fn a_flood_in_the_journal_puts_off_checkpoints_until_it_is_moved() {
        let dir = tempfile::tempdir().unwrap();
        let (mut conn, path) = open(dir.path()).unwrap();
        let page: i64 = conn
            .pragma_query_value(None, "page_size", |r| r.get(0))
            .unwrap();
        // A normal threshold of 16 pages, so that a few batches pass it.
        // The WAL synced every 64 KiB of dials, so that the flood below is synced as it goes.
        let checkpoints = Checkpoints {
            normal_pages: 16,
            sync_every: 64 * 1024,
            ..Checkpoints::new(page, &path)
        };
        conn.pragma_update(None, "wal_autocheckpoint", 16).unwrap();
        let mut jr = Journal::new(0, checkpoints);

        // Without the journal's say, SQLite checkpoints as it goes: the file grows.
        let before = len(&path);
        journal::journal_batch(&mut conn, &samples(1, 300)).unwrap();
        assert!(
            len(&path) > before,
            "the checkpoint copied the batch into the file"
        );
        jr.move_all(&mut conn).unwrap();

        // Journaled batches: the WAL takes them, the file does not change until the move.
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        let before = len(&path);
        for k in 0..4 {
            let batch = samples(301 + k * 300, 300);
            let bytes: u64 = batch.iter().map(|d| crate::log::held_bytes(d) as u64).sum();
            let n = journal::journal_batch(&mut conn, &batch).unwrap();
            jr.journaled(&conn, n, bytes);
            // Each sync ended before the next batch, so each one due was started.
            jr.checkpoints.sync_ended().unwrap();
        }
        // Synced as a checkpoint would have, without the copy.
        assert!(jr.checkpoints.syncs >= 2, "{:?}", jr.checkpoints);
        assert_eq!(jr.held, 1200);
        assert_eq!(autocheckpoint(&conn), FLOOD_CHECKPOINT_BYTES / page);
        assert_eq!(len(&path), before, "no checkpoint ran during the flood");
        // Past the normal threshold: without the deferral a checkpoint would have run.
        assert!(
            len(&jr.checkpoints.wal) > 16 * page as u64,
            "the WAL holds the flood"
        );

        // Moved: the threshold is back and one checkpoint put the pages in the file.
        jr.move_all(&mut conn).unwrap();
        assert_eq!(jr.held, 0);
        assert_eq!(autocheckpoint(&conn), 16);
        assert!(
            len(&path) > before + 16 * page as u64,
            "the checkpoint after the flood copied it into the file"
        );
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM dials", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 1500);
    }

    #[test]
    fn while_dials_keep_coming_the_journal_moves_at_most_once_a_second() {
        let t0 = Instant::now();
        let jr = |moved: Option<Instant>| Journal {
            moved_busy_at: moved,
            ..Journal::new(
                1000,
                Checkpoints::new(4096, std::path::Path::new("dials.db")),
            )
        };
        let mut pace = IndexPace::default();
        pace.inserted(t0);
        // Never moved while busy: now.
        assert_eq!(jr(None).busy_wait(&pace, t0 + MS), None);
        // Moved 10 ms ago, dials still coming: until the quiet begins (90 ms), which is sooner
        // than the next busy move.
        pace.inserted(t0 + 10 * MS);
        assert_eq!(
            jr(Some(t0)).busy_wait(&pace, t0 + 10 * MS),
            Some(INDEX_QUIET)
        );
        // Near the second's end, dials coming: until the second is over.
        pace.inserted(t0 + 950 * MS);
        assert_eq!(jr(Some(t0)).busy_wait(&pace, t0 + 960 * MS), Some(40 * MS));
        // A second after the last busy move: now.
        assert_eq!(jr(Some(t0)).busy_wait(&pace, t0 + 1000 * MS), None);
        // Quiet: now, whenever the last move was.
        assert_eq!(
            jr(Some(t0 + 900 * MS)).busy_wait(&pace, t0 + 950 * MS + INDEX_QUIET),
            None
        );
    }
}
