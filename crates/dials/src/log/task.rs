//! The log's own task: the actor that holds the ring, the dedup sets and the subscribers, and
//! the loop that answers the handle's commands, runs the subscribers' and the writer's timers
//! and prunes. [`super::DialLogHandle::ingest_batch`] calls [`Actor::ingest`] directly under the
//! lock, in the caller's task; everything else arrives here as a [`Command`].
//!
//! SQLite itself is written on the writer thread ([`crate::store`]); the actor only
//! queues batches for it and keeps the ids it has handed over (`Db`) for dedup.
//!
//! The parts: `actor` (the ring, dedup and subscribers, and what each command does to them),
//! `db` (the actor's side of SQLite: the batch waiting for the writer and the stored ids' keys)
//! and `history_part` (the ring's share of a history page or of the stats over the history).

use foldhash::{HashMap, HashMapExt as _};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Instant, MissedTickBehavior};

use super::config::{ClearScope, DialLogConfig, DialLogStatus};
use super::subscribers::{SubscribeOptions, Subscription};
use crate::filter::CompiledQuery;
use crate::query::{DialFilter, DialPage, OpStats};
use crate::record::Dial;
use crate::store::{self, WriterShared};
use crate::DialLogError;

mod actor;
mod db;
mod history_part;
mod recent;

pub(in crate::log) use actor::Actor;
use db::Db;
pub(crate) use history_part::{MemPart, MemStats};

/// The writer's answer to a prune or clear: rows deleted.
type RowsReply = oneshot::Receiver<Result<usize, DialLogError>>;

/// What a [`super::DialLogHandle`] asks the log's task; each carries its reply channel.
pub(super) enum Command {
    Query {
        filter: DialFilter,
        reply: oneshot::Sender<DialPage>,
    },
    Stats {
        filter: DialFilter,
        reply: oneshot::Sender<Vec<OpStats>>,
    },
    Subscribe {
        filter: DialFilter,
        line: Option<Box<CompiledQuery>>,
        options: SubscribeOptions,
        reply: oneshot::Sender<Subscription>,
    },
    Prune {
        now_ms: i64,
        reply: oneshot::Sender<(u64, Option<RowsReply>)>,
    },
    Clear {
        scope: ClearScope,
        reply: oneshot::Sender<Option<RowsReply>>,
    },
    Flush {
        reply: oneshot::Sender<Option<oneshot::Receiver<Result<(), DialLogError>>>>,
    },
    Status {
        reply: oneshot::Sender<DialLogStatus>,
    },
    History {
        query: Box<CompiledQuery>,
        before: u64,
        limit: usize,
        count: bool,
        reply: oneshot::Sender<MemPart>,
    },
    HistoryStats {
        query: Box<CompiledQuery>,
        reply: oneshot::Sender<MemStats>,
    },
    Shutdown {
        reply: oneshot::Sender<Option<oneshot::Receiver<()>>>,
    },
}

/// Checks `config`, opens and loads the SQLite file when `config.data_dir` is set, starts the
/// writer thread and spawns [`run`]; returns the command channel and the shared state a
/// [`super::DialLogHandle`] is made of. See [`super::DialLog::spawn`] for the steps and errors.
pub(super) fn start(
    config: DialLogConfig,
) -> Result<(mpsc::Sender<Command>, Arc<Shared>), DialLogError> {
    if config.capacity == 0
        || config.command_queue == 0
        || config.db_batch_size == 0
        || config.db_batch_bytes == 0
        || config.max_unwritten_bytes == 0
    {
        return Err(DialLogError::Config(
            "capacity, command_queue, db_batch_size, db_batch_bytes and max_unwritten_bytes must be at least 1".into(),
        ));
    }
    let mut actor = Actor::new(config.clone());
    let committed = Arc::new(tokio::sync::watch::Sender::new(0u64));
    let mut writer = None;
    let mut reader = None;
    let mut to_load = None;
    if let Some(dir) = &config.data_dir {
        let (read, path) = store::open(dir)?;
        if config.prune_interval.is_some() {
            store::prune(&read, config.clock.now_ms_i64())
                .map_err(|e| DialLogError::Storage(format!("pruning {}: {e}", path.display())))?;
        }
        let marks = store::max_seq(&read).and_then(|m| {
            Ok((
                m,
                store::indexed_upto(&read)?,
                crate::blocks::cols_upto(&read)?,
            ))
        });
        let (max_seq, indexed, cols) =
            marks.map_err(|e| DialLogError::Storage(format!("reading {}: {e}", path.display())))?;
        // Sequence numbers go on from the highest stored (or indexed: a cleared file keeps its
        // mark) so a new row is never taken for an indexed one.
        let last = max_seq.max(indexed);
        actor.next_arrival = last + 1;
        let (write, _) = store::open(dir)?;
        let shared = Arc::new(WriterShared {
            committed: Arc::clone(&committed),
            written_upto: AtomicU64::new(last),
            indexed_upto: AtomicU64::new(indexed),
            cols_upto: AtomicU64::new(cols),
            ..WriterShared::default()
        });
        reader = Some(Arc::new(crate::history_sql::Reader {
            path: path.clone(),
            pool: std::sync::Mutex::new(Vec::new()),
            writer: Arc::clone(&shared),
        }));
        let (wtx, wrx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = oneshot::channel();
        let writer_shared = Arc::clone(&shared);
        writer = Some(Arc::clone(&shared));
        let writer_path = path.clone();
        std::thread::Builder::new()
            .name("dial-log-writer".into())
            .spawn(move || {
                // The writer's transactions must not push the link's threads off their CPU.
                mark_background("writer");
                store::writer_loop(write, writer_path, wrx, writer_shared);
                let _ = done_tx.send(());
            })
            .map_err(|e| DialLogError::Storage(format!("starting the writer thread: {e}")))?;
        drop(read);
        actor.db = Some(Db {
            writer: wtx,
            shared,
            pending: Vec::new(),
            pending_bytes: 0,
            pending_since: None,
            pending_upto: 0,
            evicted_unwritten: HashMap::new(),
            // Filled by the loader ([`Actor::install`]).
            outside: recent::RecentKeys::new(config.dedup_keys_per_phone),
            done: Some(done_rx),
        });
        to_load = Some(path);
    }
    let (tx, rx) = mpsc::channel(config.command_queue);
    let shared = Arc::new(Shared {
        actor: std::sync::Mutex::new(Some(actor)),
        wake: tokio::sync::Notify::new(),
        mark: AtomicU64::new(0),
        committed,
        writer,
        max_unwritten: config.max_unwritten_bytes as u64,
        reader,
        loaded: tokio::sync::watch::Sender::new(if to_load.is_some() {
            Load::Loading
        } else {
            Load::Ready
        }),
    });
    if let Some(path) = to_load {
        let (capacity, max_bytes) = (config.capacity, config.max_bytes);
        let per_phone = config.dedup_keys_per_phone;
        let loader = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("dial-log-loader".into())
            .spawn(move || {
                mark_background("loader");
                load(&loader, &path, capacity, max_bytes, per_phone);
            })
            .map_err(|e| DialLogError::Storage(format!("starting the loader thread: {e}")))?;
    }
    tokio::spawn(run(Arc::clone(&shared), rx));
    Ok((tx, shared))
}

/// Marks the calling thread (the log's `what`: writer or loader) as background work; a system
/// that refuses leaves it at normal priority, which is only slower for the link's threads.
fn mark_background(what: &str) {
    if let Err(e) = switchboard_wire::background::mark_background_thread() {
        tracing::debug!(target: "switchboard::dials", "the {what} runs at normal priority: {e}");
    }
}

/// Where the loader ([`load`]) is: the ring and the stored dials' keys are read from SQLite
/// after [`start`] returns, so the log answers history pages at once; ingest and the calls
/// that read the ring wait for [`Load::Ready`] ([`Shared::ready`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Load {
    /// Reading the newest dials and the stored keys.
    Loading,
    /// The ring and the dedup keys are in place (or there was nothing to load).
    Ready,
    /// Reading failed: the message names the file. Ingest refuses dials (its dedup could not
    /// see the stored ids), the ring's calls fail with it; history pages still work.
    Failed(String),
}

/// A stored dial's phone key and its own ([`store::id_key`] of each).
type PhoneKey = (i64, i64);

/// The loader thread: reads the newest `capacity` dials (within `max_bytes`) and, for the
/// stored dials older than those, the newest `per_phone` keys ([`store::id_key`]) of each
/// phone, on a read-only connection of its own, then installs them under the lock
/// ([`Actor::install`]) and says so in [`Shared::loaded`]. Nothing is ingested meanwhile
/// (ingest waits), so what it read is still the newest of the stored set when it installs it.
fn load(
    shared: &Shared,
    path: &std::path::Path,
    capacity: usize,
    max_bytes: usize,
    per_phone: usize,
) {
    let read = || -> Result<(Vec<Dial>, Vec<PhoneKey>), DialLogError> {
        let conn = Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| DialLogError::Storage(format!("opening {} to load: {e}", path.display())))?;
        let dials = store::load_newest(&conn, path, capacity, max_bytes)?;
        // The ring's own dials are found by id; the keys are for the ones before it.
        let below = dials.first().map_or(u64::MAX, |d| d.seq.0);
        let mut taken: HashMap<i64, usize> = HashMap::new();
        let mut keys = Vec::new();
        store::for_each_key_newest_first(&conn, below, |phone, key| {
            let n = taken.entry(phone).or_insert(0);
            if *n < per_phone {
                *n += 1;
                keys.push((phone, key));
            }
        })
        .map_err(|e| {
            DialLogError::Storage(format!("reading the dial keys of {}: {e}", path.display()))
        })?;
        Ok((dials, keys))
    };
    let state = match read() {
        Ok((dials, keys)) => {
            if let Some(a) = shared.lock().as_mut() {
                a.install(dials, keys);
            }
            Load::Ready
        }
        Err(e) => {
            tracing::error!(target: "switchboard::dials", "loading the dial log: {e}");
            Load::Failed(e.to_string())
        }
    };
    shared.loaded.send_replace(state);
}

/// The log's state, shared by its task (commands, timers) and [`super::DialLogHandle::ingest_batch`],
/// which works under the lock in the caller's task: a dial is held and handed to subscribers
/// without a hop to another task. `None` once shut down.
pub(super) struct Shared {
    pub(super) actor: std::sync::Mutex<Option<Actor>>,
    /// Tells the task to look at its timers again after an ingest (a batch may now be due).
    pub(super) wake: tokio::sync::Notify,
    /// Arrival number of the newest persisting dial held so far ([`Actor::stored_mark`]), set
    /// under the lock by every ingest: every dial held before it is durable once
    /// [`Shared::committed`] reaches it. Stays 0 for a log in memory only.
    pub(super) mark: AtomicU64,
    /// The writer's durable watermark ([`WriterShared::committed`]); never moves for a log in
    /// memory only (its mark stays 0, so everything is durable "once held").
    pub(super) committed: Arc<tokio::sync::watch::Sender<u64>>,
    /// The writer's side (`None` for a log in memory only): its count of unwritten bytes is
    /// read without the lock by ingest, which waits for room ([`Shared::room_for_ingest`]).
    pub(super) writer: Option<Arc<WriterShared>>,
    /// [`DialLogConfig::max_unwritten_bytes`].
    pub(super) max_unwritten: u64,
    /// Read connections for history pages (`None` for a log in memory only).
    pub(super) reader: Option<Arc<crate::history_sql::Reader>>,
    /// Whether the ring and the dedup keys are loaded ([`load`]).
    pub(super) loaded: tokio::sync::watch::Sender<Load>,
}

impl Shared {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Option<Actor>> {
        switchboard_wire::sync::lock(&self.actor)
    }

    /// Waits until the persisting dials held and not yet written are within
    /// [`DialLogConfig::max_unwritten_bytes`] (at once for a log in memory only, and once the
    /// writer has stopped: nothing would make room then). While waiting it hands the waiting
    /// batch to the writer whenever the writer has room, so the wait always ends with the
    /// writer's progress; it looks again at least every 50 ms.
    pub(super) async fn room_for_ingest(&self) {
        let Some(w) = &self.writer else {
            return;
        };
        loop {
            let progressed = w.progress.notified();
            tokio::pin!(progressed);
            progressed.as_mut().enable();
            if w.unwritten_bytes.load(Ordering::Acquire) <= self.max_unwritten
                || w.stopped.load(Ordering::Acquire)
            {
                return;
            }
            match self.lock().as_mut() {
                Some(a) => a.hand_to_writer(),
                None => return,
            }
            let _ = tokio::time::timeout(Duration::from_millis(50), progressed).await;
        }
    }

    /// Waits until the loader has put the ring and the stored dials' keys in place.
    ///
    /// # Errors
    /// [`DialLogError::Storage`] when loading failed.
    pub(super) async fn ready(&self) -> Result<(), DialLogError> {
        let mut rx = self.loaded.subscribe();
        loop {
            match &*rx.borrow_and_update() {
                Load::Ready => return Ok(()),
                Load::Failed(e) => return Err(DialLogError::Storage(e.clone())),
                Load::Loading => {}
            }
            if rx.changed().await.is_err() {
                return Err(DialLogError::Closed);
            }
        }
    }

    pub(super) fn reader(&self) -> Option<Arc<crate::history_sql::Reader>> {
        self.reader.clone()
    }
}

/// The log's task: commands, the subscribers' and the writer's timers, periodic pruning.
async fn run(shared: Arc<Shared>, mut rx: mpsc::Receiver<Command>) {
    let prune_interval = shared.lock().as_ref().and_then(|a| a.cfg.prune_interval);
    let mut prune_tick = prune_interval.map(|p| {
        let mut t = tokio::time::interval_at(Instant::now() + p, p);
        t.set_missed_tick_behavior(MissedTickBehavior::Delay);
        t
    });
    loop {
        let deadline = match shared.lock().as_mut() {
            Some(a) => {
                a.armed = a.next_deadline();
                a.armed
            }
            None => return,
        };
        tokio::select! {
            cmd = rx.recv() => match cmd {
                Some(Command::Shutdown { reply }) => {
                    let done = shared.lock().take().and_then(|mut a| a.shutdown());
                    let _ = reply.send(done);
                    return;
                }
                Some(cmd) => {
                    if let Some(a) = shared.lock().as_mut() {
                        a.handle(cmd);
                    }
                }
                None => {
                    if let Some(mut a) = shared.lock().take() {
                        a.shutdown();
                    }
                    return;
                }
            },
            () = tokio::time::sleep_until(deadline.unwrap_or_else(far_future)), if deadline.is_some() => {}
            () = shared.wake.notified() => {}
            _ = async {
                match prune_tick.as_mut() {
                    Some(t) => t.tick().await,
                    None => std::future::pending().await,
                }
            } => {
                if let Some(a) = shared.lock().as_mut() {
                    let now = a.cfg.clock.now_ms_i64();
                    let n = a.prune(now, None);
                    tracing::debug!(target: "switchboard::dials", "pruned {n} dials from memory");
                }
            }
        }
        if let Some(a) = shared.lock().as_mut() {
            a.flush_due(Instant::now());
        }
    }
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400)
}
