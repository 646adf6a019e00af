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

/// What the writer knows of the journal ([`journal`]): the dials it holds, and whether a body
/// that does not decode stopped its moves (the body stays for repair, and so does what
/// follows it, as the journal is moved in order).
#[derive(Debug, Default)]
struct Journal {
    held: u64,
    stuck: bool,
}

impl Journal {
    /// Whether there is something the writer can move.
    fn movable(&self) -> bool {
        self.held > 0 && !self.stuck
    }

    /// Moves the oldest batch into rows.
    fn move_oldest(&mut self, conn: &mut Connection) -> Result<(), MoveError> {
        match journal::move_oldest(conn)? {
            Some(n) => self.held = self.held.saturating_sub(n as u64),
            None => self.held = 0,
        }
        Ok(())
    }

    /// Moves everything into rows.
    fn move_all(&mut self, conn: &mut Connection) -> Result<(), MoveError> {
        journal::move_all(conn)?;
        self.held = 0;
        Ok(())
    }
}

/// Page cache of the writer's connection, in KiB: SQLite's default size. Inserts append (the
/// rows by rowid, their keys, the expiry index at a few places), so they touch few pages; a
/// larger cache only fills over the first minutes with pages the indexing pass read once, and
/// stays filled for the app's life (an app left in the tray all day holds it).
const WRITER_CACHE_KIB: i64 = 2 * 1024;
/// WAL bytes between automatic checkpoints (SQLite counts them in pages of the file's size).
const WRITER_CHECKPOINT_BYTES: i64 = 16 * 1024 * 1024;

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
    let tuned = conn
        .pragma_update(None, "cache_size", -WRITER_CACHE_KIB)
        .and_then(|_| conn.pragma_query_value(None, "page_size", |r| r.get::<_, i64>(0)))
        .and_then(|page| {
            conn.pragma_update(
                None,
                "wal_autocheckpoint",
                WRITER_CHECKPOINT_BYTES / page.max(512),
            )
        });
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
    let mut jr = Journal {
        held: journal::held(&conn).unwrap_or(0),
        stuck: false,
    };
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
                        // The journal is moved before anything is indexed (indexing takes the
                        // rows above its mark in order), one batch a turn so a new message is
                        // never kept waiting for more than one.
                        pace.indexed(Instant::now());
                        if let Err(e) = jr.move_oldest(&mut conn) {
                            move_failed(e, &mut jr.stuck);
                            to_index = false;
                        }
                        continue;
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
                                jr.held += n as u64;
                                // A stream that never pauses moves as it journals past the
                                // bound, so the journal stops growing.
                                if jr.held > JOURNAL_MAX_DIALS {
                                    if let Err(e) = jr.move_oldest(&mut conn) {
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
                    jr = Journal::default();
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
