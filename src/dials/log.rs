//! The live dial log: the ring of recent dials, the SQLite writer and the subscribers behind one
//! lock, driven through a cloneable [`DialLogHandle`]. Ingest runs in the caller's task under
//! the lock; a tokio task of the log's own answers the other calls and runs the timers.
//!
//! Every phone-line call the phone reports (`phone-line.md`, "Operations") arrives here as a
//! [`Dial`], carried by an ifp/1 `event.*` message (`ifp1-notes.md`, "Events"). The log:
//!
//! 1. drops a dial whose id (the event's `dedup` key) it has already seen: in the ring, in a batch
//!    not yet written, or in SQLite (by its stored key, so a replay after a restart is also
//!    caught);
//! 2. holds the dial: pushes it into the bounded ring (evicting the oldest arrival when full) and
//!    queues it for every matching subscriber. A dial is *held* from this point;
//! 3. later, off the hot path, hands a batch of persisting dials (retention not `transient`) to a
//!    dedicated writer thread that inserts it in one SQLite transaction.
//!
//! Subscribers get batches at most once per interval (default 1/30 s); a subscriber whose bounded
//! queue is full never blocks the log: its dials wait and merge into its next batch, which says
//! how many were held back (`merged`) and how many were dropped because even the waiting list
//! overflowed (`skipped`).
//!
//! Queries and stats read the ring, which holds the newest `capacity` dials (by default 100 000;
//! at start the last `capacity` rows of SQLite, in arrival order). Older history stays in SQLite
//! until pruned but is not queried.

use std::collections::VecDeque;

use foldhash::{HashMap, HashMapExt as _, HashSet, HashSetExt as _};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::Connection;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Instant, MissedTickBehavior};
use ts_rs::TS;

use super::query::{run_query, run_stats, DialFilter, DialPage, Matcher, OpStats};
use super::record::Dial;
use super::store::{self, WriterMsg, WriterShared};
use super::DialLogError;

/// Settings of a [`DialLog`]. [`Default`] gives the documented defaults.
#[derive(Debug, Clone)]
pub struct DialLogConfig {
    /// Folder of the SQLite file (`dials.sqlite3`); `None` keeps the log in memory only.
    pub data_dir: Option<PathBuf>,
    /// Dials held in memory (the ring). Default 100 000.
    pub capacity: usize,
    /// Bound of the command channel to the log's task (queries, stats, subscribe, prune, clear,
    /// flush, status). Default 1024. A full channel makes those calls wait; ingest does not use
    /// the channel (it runs under the log's lock), and a subscriber never makes anything wait.
    pub command_queue: usize,
    /// Dials per SQLite transaction at most. Default 1000.
    pub db_batch_size: usize,
    /// Longest time a held dial waits before its batch is handed to the writer. Default 100 ms.
    pub db_flush_interval: Duration,
    /// How often rows and ring entries past their retention are pruned; `None` disables
    /// automatic pruning (and the prune at start). Default 10 minutes.
    pub prune_interval: Option<Duration>,
    /// Default shortest time between two batches to one subscriber. Default 1/30 s.
    pub batch_interval: Duration,
    /// Default bound of a subscriber's batch queue. Default 4.
    pub subscriber_queue: usize,
    /// Default bound of the dials waiting for one subscriber; beyond it the oldest waiting dials
    /// are dropped and counted as `skipped`. Default 10 000.
    pub subscriber_max_pending: usize,
}

impl Default for DialLogConfig {
    fn default() -> Self {
        Self {
            data_dir: None,
            capacity: 100_000,
            command_queue: 1024,
            db_batch_size: 1000,
            db_flush_interval: Duration::from_millis(100),
            prune_interval: Some(Duration::from_secs(600)),
            batch_interval: Duration::from_micros(33_334),
            subscriber_queue: 4,
            subscriber_max_pending: 10_000,
        }
    }
}

/// Batches the writer may have queued before the actor keeps further dials waiting itself.
const MAX_WRITER_BATCHES_IN_FLIGHT: u64 = 4;

/// What happened to one ingested dial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IngestVerdict {
    /// New: held in the ring, handed to subscribers, and (unless `transient`) queued for SQLite.
    Held,
    /// Its id was already seen (ifp/1 `acknowledged_duplicate`): not stored or counted again.
    Duplicate,
    /// Unusable (e.g. an empty id); the reason says what was wrong.
    Rejected(String),
}

/// Options of one subscription; `None` fields take the log's defaults.
#[derive(Debug, Clone, Default)]
pub struct SubscribeOptions {
    /// Shortest time between two batches.
    pub interval: Option<Duration>,
    /// Bound of the batch queue (at least 1).
    pub queue: Option<usize>,
    /// Bound of the dials waiting while the queue is full (at least 1).
    pub max_pending: Option<usize>,
}

/// New dials for one subscriber: `{ dials, merged, skipped }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[ts(export)]
pub struct DialBatch {
    /// New matching dials in arrival order (oldest first).
    pub dials: Vec<Arc<Dial>>,
    /// How many of `dials` were held back from an earlier batch because the subscriber's queue
    /// was full (they merged into this one).
    #[ts(type = "number")]
    pub merged: u64,
    /// Matching dials dropped for this subscriber since its last batch because too many were
    /// waiting; re-query to see them.
    #[ts(type = "number")]
    pub skipped: u64,
}

/// A live view: the snapshot at subscription time, then the batches.
///
/// Forward `batches` to the window (e.g. a Tauri `ipc::Channel`) in a loop; dropping the
/// receiver ends the subscription.
#[derive(Debug)]
pub struct Subscription {
    /// Dials matching the filter when the subscription started (the filter's `limit` and
    /// `offset` apply), newest first.
    pub snapshot: DialPage,
    /// Batches of dials held after the snapshot, matching the filter.
    pub batches: mpsc::Receiver<DialBatch>,
}

/// What [`DialLogHandle::clear`] removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClearScope {
    /// Empty the ring only (the window's view). SQLite keeps its rows: they come back at the next
    /// start, and replays of them are still recognised as duplicates.
    Memory,
    /// Empty the ring and delete every row of SQLite, `permanent` ones included.
    All,
}

/// Counts from a prune.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, TS)]
#[ts(export)]
pub struct PruneReport {
    /// Dials removed from the ring.
    #[ts(type = "number")]
    pub memory: u64,
    /// Rows deleted from SQLite.
    #[ts(type = "number")]
    pub stored: u64,
}

/// Counters of a running log.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, TS)]
#[ts(export)]
pub struct DialLogStatus {
    /// Dials in the ring.
    #[ts(type = "number")]
    pub held: u64,
    /// Ring capacity.
    #[ts(type = "number")]
    pub capacity: u64,
    /// Dials held since start.
    #[ts(type = "number")]
    pub ingested: u64,
    /// Replays dropped since start.
    #[ts(type = "number")]
    pub duplicates: u64,
    /// Dials evicted from the ring because it was full.
    #[ts(type = "number")]
    pub evicted: u64,
    /// Rows committed to SQLite since start.
    #[ts(type = "number")]
    pub rows_written: u64,
    /// Live subscribers.
    #[ts(type = "number")]
    pub subscribers: u64,
}

/// The writer's answer to a prune or clear: rows deleted.
type RowsReply = oneshot::Receiver<Result<usize, DialLogError>>;

enum Command {
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
    Shutdown {
        reply: oneshot::Sender<Option<oneshot::Receiver<()>>>,
    },
}

/// The dial log. Start one with [`DialLog::spawn`]; talk to it through the returned handle.
pub struct DialLog;

impl DialLog {
    /// Opens the SQLite file (when `config.data_dir` is set), prunes it (when automatic pruning
    /// is on), loads the newest `capacity` dials into the ring, and spawns the actor task on the
    /// current tokio runtime and the writer on its own thread.
    ///
    /// Must be called from inside a tokio runtime. Loading is synchronous (about a second for
    /// 100 000 dials).
    ///
    /// # Errors
    /// [`DialLogError::Storage`] when the folder or file cannot be created, opened or read, or
    /// holds rows this version cannot read; [`DialLogError::Config`] for a zero capacity or queue.
    pub fn spawn(config: DialLogConfig) -> Result<DialLogHandle, DialLogError> {
        if config.capacity == 0 || config.command_queue == 0 || config.db_batch_size == 0 {
            return Err(DialLogError::Config(
                "capacity, command_queue and db_batch_size must be at least 1".into(),
            ));
        }
        let mut actor = Actor::new(config.clone());
        if let Some(dir) = &config.data_dir {
            let (read, path) = store::open(dir)?;
            if config.prune_interval.is_some() {
                store::prune(&read, now_epoch_ms()).map_err(|e| {
                    DialLogError::Storage(format!("pruning {}: {e}", path.display()))
                })?;
            }
            let loaded = store::load_newest(&read, &path, config.capacity)?;
            let (write, _) = store::open(dir)?;
            let shared = Arc::new(WriterShared::default());
            let (wtx, wrx) = std::sync::mpsc::channel();
            let (done_tx, done_rx) = oneshot::channel();
            let writer_shared = Arc::clone(&shared);
            let writer_path = path.clone();
            std::thread::Builder::new()
                .name("dial-log-writer".into())
                .spawn(move || {
                    store::writer_loop(write, writer_path, wrx, writer_shared);
                    let _ = done_tx.send(());
                })
                .map_err(|e| DialLogError::Storage(format!("starting the writer thread: {e}")))?;
            for d in loaded {
                // Already stored: arrival 0 is always "written".
                actor.push_ring(d, 0);
            }
            actor.db = Some(Db {
                read,
                writer: wtx,
                shared,
                pending: Vec::new(),
                pending_since: None,
                pending_upto: 0,
                evicted_unwritten: HashMap::new(),
                outside: HashSet::new(),
                outside_rebuild_at: 0,
                done: Some(done_rx),
            });
            if let Some(db) = actor.db.as_mut() {
                db.rebuild_outside(config.capacity);
            }
        }
        let (tx, rx) = mpsc::channel(config.command_queue);
        let shared = Arc::new(Shared {
            actor: std::sync::Mutex::new(Some(actor)),
            wake: tokio::sync::Notify::new(),
        });
        tokio::spawn(run(Arc::clone(&shared), rx));
        Ok(DialLogHandle { tx, shared })
    }
}

/// The log's state, shared by its task (commands, timers) and [`DialLogHandle::ingest_batch`],
/// which works under the lock in the caller's task: a dial is held and handed to subscribers
/// without a hop to another task. `None` once shut down.
struct Shared {
    actor: std::sync::Mutex<Option<Actor>>,
    /// Tells the task to look at its timers again after an ingest (a batch may now be due).
    wake: tokio::sync::Notify,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Actor>> {
        self.actor.lock().unwrap_or_else(|p| p.into_inner())
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
        let deadline = match shared.lock().as_ref() {
            Some(a) => a.next_deadline(),
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
                    let n = a.prune(now_epoch_ms(), None);
                    tracing::debug!(target: "switchboard::dials", "pruned {n} dials from memory");
                }
            }
        }
        if let Some(a) = shared.lock().as_mut() {
            a.flush_due(Instant::now());
        }
    }
}

/// Cloneable handle to a running [`DialLog`]. Ingest runs in the caller's task under the log's
/// lock; every other call is a message to the log's task. Calls fail with
/// [`DialLogError::Closed`] once the log has shut down.
#[derive(Clone)]
pub struct DialLogHandle {
    tx: mpsc::Sender<Command>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for DialLogHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DialLogHandle").finish_non_exhaustive()
    }
}

impl DialLogHandle {
    async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<T>) -> Command,
    ) -> Result<T, DialLogError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(make(reply))
            .await
            .map_err(|_| DialLogError::Closed)?;
        rx.await.map_err(|_| DialLogError::Closed)
    }

    /// Ingests one dial (see the module docs for what happens). The dial's `slow` flag is
    /// recomputed.
    ///
    /// # Errors
    /// [`DialLogError::Closed`] when the log has shut down.
    pub async fn ingest(&self, dial: Dial) -> Result<IngestVerdict, DialLogError> {
        let mut v = self.ingest_batch(vec![dial]).await?;
        v.pop().ok_or(DialLogError::Closed)
    }

    /// Ingests several dials in order with one message; one verdict per dial, same order.
    ///
    /// # Errors
    /// [`DialLogError::Closed`] when the log has shut down.
    pub async fn ingest_batch(&self, dials: Vec<Dial>) -> Result<Vec<IngestVerdict>, DialLogError> {
        let verdicts = {
            let mut guard = self.shared.lock();
            let actor = guard.as_mut().ok_or(DialLogError::Closed)?;
            let verdicts = dials.into_iter().map(|d| actor.ingest(d)).collect();
            actor.flush_due(Instant::now());
            verdicts
        };
        self.shared.wake.notify_one();
        Ok(verdicts)
    }

    /// The page of held dials matching `filter`, newest first.
    ///
    /// # Errors
    /// [`DialLogError::Closed`] when the log has shut down.
    pub async fn query(&self, filter: DialFilter) -> Result<DialPage, DialLogError> {
        self.ask(|reply| Command::Query { filter, reply }).await
    }

    /// Per-op stats over the held dials matching `filter` (its `limit`/`offset` ignored).
    ///
    /// # Errors
    /// [`DialLogError::Closed`] when the log has shut down.
    pub async fn stats(&self, filter: DialFilter) -> Result<Vec<OpStats>, DialLogError> {
        self.ask(|reply| Command::Stats { filter, reply }).await
    }

    /// Starts a live view of `filter`: a snapshot, then batches of new matching dials.
    ///
    /// # Errors
    /// [`DialLogError::Closed`] when the log has shut down.
    pub async fn subscribe(
        &self,
        filter: DialFilter,
        options: SubscribeOptions,
    ) -> Result<Subscription, DialLogError> {
        self.ask(|reply| Command::Subscribe {
            filter,
            options,
            reply,
        })
        .await
    }

    /// Removes dials past their retention at `now_ms` (epoch ms) from the ring and from SQLite
    /// (after writing every dial held so far). The periodic prune does the same with the clock.
    ///
    /// # Errors
    /// [`DialLogError::Closed`]; [`DialLogError::Storage`] when SQLite fails.
    pub async fn prune(&self, now_ms: i64) -> Result<PruneReport, DialLogError> {
        let (memory, db) = self.ask(|reply| Command::Prune { now_ms, reply }).await?;
        let stored = match db {
            Some(rx) => rx.await.map_err(|_| DialLogError::Closed)?? as u64,
            None => 0,
        };
        Ok(PruneReport { memory, stored })
    }

    /// Clears the log (see [`ClearScope`]). Returns the SQLite rows deleted (0 for `Memory`).
    ///
    /// # Errors
    /// [`DialLogError::Closed`]; [`DialLogError::Storage`] when SQLite fails.
    pub async fn clear(&self, scope: ClearScope) -> Result<u64, DialLogError> {
        match self.ask(|reply| Command::Clear { scope, reply }).await? {
            Some(rx) => Ok(rx.await.map_err(|_| DialLogError::Closed)?? as u64),
            None => Ok(0),
        }
    }

    /// Waits until every dial held so far is committed to SQLite.
    ///
    /// # Errors
    /// [`DialLogError::Closed`]; [`DialLogError::Storage`] with the first write error since the
    /// last flush (the failed batch is not retried).
    pub async fn flush(&self) -> Result<(), DialLogError> {
        match self.ask(|reply| Command::Flush { reply }).await? {
            Some(rx) => rx.await.map_err(|_| DialLogError::Closed)?,
            None => Ok(()),
        }
    }

    /// Exports the dials matching `filter` (its `limit`/`offset` honoured; leave them unset for
    /// all) to `path` as JSON Lines, newest first, atomically. Returns the lines written.
    ///
    /// # Errors
    /// [`DialLogError::Closed`]; [`DialLogError::Export`] naming the file when writing fails.
    pub async fn export_jsonl(
        &self,
        filter: DialFilter,
        path: PathBuf,
    ) -> Result<u64, DialLogError> {
        let page = self.query(filter).await?;
        let n = tokio::task::spawn_blocking(move || {
            super::jsonl::export_jsonl_file(&page.dials, &path)
        })
        .await
        .map_err(|_| DialLogError::Closed)??;
        Ok(n)
    }

    /// Counters of the log.
    ///
    /// # Errors
    /// [`DialLogError::Closed`] when the log has shut down.
    pub async fn status(&self) -> Result<DialLogStatus, DialLogError> {
        self.ask(|reply| Command::Status { reply }).await
    }

    /// Writes everything held, stops the actor and waits for the writer to finish. Other handles
    /// get [`DialLogError::Closed`] afterwards; subscribers' receivers end.
    ///
    /// # Errors
    /// [`DialLogError::Closed`] when the log had already shut down.
    pub async fn shutdown(&self) -> Result<(), DialLogError> {
        if let Some(done) = self.ask(|reply| Command::Shutdown { reply }).await? {
            let _ = done.await;
        }
        Ok(())
    }
}

/// The current time in epoch milliseconds.
pub(crate) fn now_epoch_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

struct Entry {
    arrival: u64,
    dial: Arc<Dial>,
}

struct Db {
    read: Connection,
    writer: std::sync::mpsc::Sender<WriterMsg>,
    shared: Arc<WriterShared>,
    pending: Vec<Arc<Dial>>,
    pending_since: Option<Instant>,
    pending_upto: u64,
    /// Persisting dials that left the ring before the writer committed them: id -> arrival.
    evicted_unwritten: HashMap<Arc<str>, u64>,
    /// Keys ([`store::id_key`], 64-bit hashes) of every stored id that is not in the ring (and
    /// maybe of some in the ring or pruned since): the dedup check for ids in SQLite. Two
    /// different ids share a key with probability about 2^-64 per pair, so treating a known key
    /// as a replay wrongly drops about one dial in 10^13 for a million stored; the file has no id
    /// index to keep up instead ([`store`]).
    outside: HashSet<i64>,
    /// `outside` is rebuilt from SQLite when it grows past this (stale hashes of pruned rows).
    outside_rebuild_at: usize,
    done: Option<oneshot::Receiver<()>>,
}

impl Db {
    fn written_upto(&self) -> u64 {
        self.shared.written_upto.load(Ordering::Acquire)
    }

    /// Hands the waiting batch to the writer (unless `only_if_room` and the writer is busy).
    fn send_pending(&mut self, only_if_room: bool) {
        if self.pending.is_empty() {
            return;
        }
        if only_if_room
            && self.shared.in_flight.load(Ordering::Acquire) >= MAX_WRITER_BATCHES_IN_FLIGHT
        {
            return;
        }
        let dials = std::mem::take(&mut self.pending);
        self.pending_since = None;
        self.shared.in_flight.fetch_add(1, Ordering::AcqRel);
        if self
            .writer
            .send(WriterMsg::Insert {
                dials,
                upto: self.pending_upto,
            })
            .is_err()
        {
            self.shared.in_flight.fetch_sub(1, Ordering::AcqRel);
            tracing::error!(target: "switchboard::dials", "the dial writer thread has stopped");
        }
        let upto = self.written_upto();
        self.evicted_unwritten.retain(|_, a| *a > upto);
    }

    /// Rebuilds `outside` from SQLite's `dial_keys` (every stored id), plus the evicted dials
    /// whose write may still be on its way.
    fn rebuild_outside(&mut self, capacity: usize) {
        let mut outside = HashSet::new();
        let read = store::for_each_id_key(&self.read, |k| {
            outside.insert(k);
        });
        match read {
            Ok(()) => {
                outside.extend(self.evicted_unwritten.keys().map(|id| store::id_key(id)));
                self.outside_rebuild_at = (outside.len() * 2).max(capacity);
                self.outside = outside;
            }
            Err(e) => {
                // Keep the old (larger, still complete) set and try again later.
                tracing::warn!(target: "switchboard::dials", "reading the stored dial ids failed: {e}");
                self.outside_rebuild_at = self.outside.len() * 2;
            }
        }
    }

    /// Whether `id` (not in the ring) is stored or on its way to SQLite.
    fn seen(&self, id: &str) -> bool {
        self.evicted_unwritten.contains_key(id) || self.outside.contains(&store::id_key(id))
    }
}

struct Sub {
    filter: DialFilter,
    tx: mpsc::Sender<DialBatch>,
    interval: Duration,
    last_sent: Option<Instant>,
    pending: VecDeque<Arc<Dial>>,
    /// How many of the oldest `pending` dials already missed a send because the queue was full.
    held_back: usize,
    skipped: u64,
    max_pending: usize,
}

impl Sub {
    /// When the waiting dials are due, as seen at `now`: a subscriber that never got a batch is
    /// due at once (`now` itself, so the check in [`Sub::try_flush`] passes on the real clock).
    fn due_at(&self, now: Instant) -> Option<Instant> {
        if self.pending.is_empty() {
            return None;
        }
        Some(match self.last_sent {
            Some(t) => t + self.interval,
            None => now,
        })
    }

    fn push(&mut self, d: &Arc<Dial>) {
        if self.pending.len() >= self.max_pending {
            self.pending.pop_front();
            self.held_back = self.held_back.saturating_sub(1);
            self.skipped += 1;
        }
        self.pending.push_back(Arc::clone(d));
    }

    /// Tries to send the waiting dials; `false` when the receiver is gone.
    fn try_flush(&mut self, now: Instant) -> bool {
        if !self.due_at(now).is_some_and(|t| t <= now) {
            return true;
        }
        let batch = DialBatch {
            dials: self.pending.drain(..).collect(),
            merged: self.held_back as u64,
            skipped: self.skipped,
        };
        self.last_sent = Some(now);
        match self.tx.try_send(batch) {
            Ok(()) => {
                self.held_back = 0;
                self.skipped = 0;
                true
            }
            Err(mpsc::error::TrySendError::Full(batch)) => {
                self.pending = batch.dials.into();
                self.held_back = self.pending.len();
                true
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }
}

/// Shares repeated strings (phone, caller, callee, endpoint, op) between dials.
#[derive(Default)]
struct Interner {
    set: HashSet<Arc<str>>,
    purge_at: usize,
}

impl Interner {
    fn intern(&mut self, s: &Arc<str>) -> Arc<str> {
        if let Some(found) = self.set.get(&**s) {
            return Arc::clone(found);
        }
        if self.set.len() >= self.purge_at.max(1024) {
            // Forget strings no dial uses any more, so peer-chosen strings cannot pile up.
            self.set.retain(|a| Arc::strong_count(a) > 1);
            self.purge_at = self.set.len() * 2;
        }
        self.set.insert(Arc::clone(s));
        Arc::clone(s)
    }
}

struct Actor {
    cfg: DialLogConfig,
    ring: VecDeque<Entry>,
    ids: HashSet<Arc<str>>,
    interner: Interner,
    next_arrival: u64,
    db: Option<Db>,
    subs: Vec<Sub>,
    status: DialLogStatus,
}

impl Actor {
    fn new(cfg: DialLogConfig) -> Self {
        let status = DialLogStatus {
            capacity: cfg.capacity as u64,
            ..DialLogStatus::default()
        };
        Self {
            ring: VecDeque::with_capacity(cfg.capacity.min(1 << 20)),
            ids: HashSet::with_capacity(cfg.capacity.min(1 << 20)),
            interner: Interner::default(),
            next_arrival: 1,
            db: None,
            subs: Vec::new(),
            status,
            cfg,
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        let now = Instant::now();
        let subs = self.subs.iter().filter_map(|s| s.due_at(now)).min();
        let db = self
            .db
            .as_ref()
            .and_then(|db| db.pending_since.map(|t| t + self.cfg.db_flush_interval));
        match (subs, db) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn flush_due(&mut self, now: Instant) {
        self.subs.retain_mut(|s| s.try_flush(now));
        let (batch, interval) = (self.cfg.db_batch_size, self.cfg.db_flush_interval);
        if let Some(db) = self.db.as_mut() {
            let due =
                db.pending.len() >= batch || db.pending_since.is_some_and(|t| t + interval <= now);
            if due {
                db.send_pending(true);
                if !db.pending.is_empty() {
                    // Writer busy: try again one interval later.
                    db.pending_since = Some(now);
                }
            }
        }
    }

    fn handle(&mut self, cmd: Command) {
        match cmd {
            Command::Query { filter, reply } => {
                let _ = reply.send(run_query(self.ring.iter().map(|e| &e.dial), &filter));
            }
            Command::Stats { filter, reply } => {
                let _ = reply.send(run_stats(self.ring.iter().map(|e| &e.dial), &filter));
            }
            Command::Subscribe {
                filter,
                options,
                reply,
            } => {
                let snapshot = run_query(self.ring.iter().map(|e| &e.dial), &filter);
                let (tx, batches) =
                    mpsc::channel(options.queue.unwrap_or(self.cfg.subscriber_queue).max(1));
                self.subs.push(Sub {
                    filter,
                    tx,
                    interval: options.interval.unwrap_or(self.cfg.batch_interval),
                    last_sent: None,
                    pending: VecDeque::new(),
                    held_back: 0,
                    skipped: 0,
                    max_pending: options
                        .max_pending
                        .unwrap_or(self.cfg.subscriber_max_pending)
                        .max(1),
                });
                let _ = reply.send(Subscription { snapshot, batches });
            }
            Command::Prune { now_ms, reply } => {
                let (tx, rx) = oneshot::channel();
                let memory = self.prune(now_ms, Some(tx));
                let rx = self.db.is_some().then_some(rx);
                let _ = reply.send((memory, rx));
            }
            Command::Clear { scope, reply } => {
                let rx = self.clear(scope);
                let _ = reply.send(rx);
            }
            Command::Flush { reply } => {
                let rx = self.db.as_mut().map(|db| {
                    db.send_pending(false);
                    let (tx, rx) = oneshot::channel();
                    let _ = db.writer.send(WriterMsg::Flush { reply: tx });
                    rx
                });
                let _ = reply.send(rx);
            }
            Command::Status { reply } => {
                let mut s = self.status.clone();
                s.held = self.ring.len() as u64;
                s.subscribers = self.subs.len() as u64;
                s.rows_written = self
                    .db
                    .as_ref()
                    .map_or(0, |db| db.shared.rows_written.load(Ordering::Relaxed));
                let _ = reply.send(s);
            }
            Command::Shutdown { reply } => {
                let _ = reply.send(self.shutdown());
            }
        }
    }

    fn ingest(&mut self, mut dial: Dial) -> IngestVerdict {
        if dial.id.is_empty() {
            return IngestVerdict::Rejected("dial id (the event's dedup key) is empty".into());
        }
        if self.ids.contains(&*dial.id) || self.db.as_ref().is_some_and(|db| db.seen(&dial.id)) {
            self.status.duplicates += 1;
            return IngestVerdict::Duplicate;
        }
        dial.normalise();
        dial.phone = self.interner.intern(&dial.phone);
        dial.caller = self.interner.intern(&dial.caller);
        dial.callee = self.interner.intern(&dial.callee);
        dial.endpoint = self.interner.intern(&dial.endpoint);
        dial.op = self.interner.intern(&dial.op);
        let arrival = self.next_arrival;
        self.next_arrival += 1;
        let dial = self.push_ring(dial, arrival);
        self.status.ingested += 1;
        if !self.subs.is_empty() {
            for s in &mut self.subs {
                if Matcher::new(&s.filter).matches(&dial) {
                    s.push(&dial);
                }
            }
        }
        if dial.retention.persists() {
            if let Some(db) = self.db.as_mut() {
                db.pending.push(dial);
                db.pending_upto = arrival;
                db.pending_since.get_or_insert_with(Instant::now);
            }
        }
        IngestVerdict::Held
    }

    fn push_ring(&mut self, dial: Dial, arrival: u64) -> Arc<Dial> {
        let dial = Arc::new(dial);
        while self.ring.len() >= self.cfg.capacity {
            match self.ring.pop_front() {
                Some(old) => {
                    self.forget(old);
                    self.status.evicted += 1;
                }
                None => break,
            }
        }
        self.ids.insert(Arc::clone(&dial.id));
        self.ring.push_back(Entry {
            arrival,
            dial: Arc::clone(&dial),
        });
        dial
    }

    /// Drops a ring entry's id from the in-memory dedup set, remembering it while its write is
    /// still pending so a replay in that window is still caught.
    fn forget(&mut self, e: Entry) {
        self.ids.remove(&*e.dial.id);
        if let Some(db) = self.db.as_mut() {
            if e.dial.retention.persists() {
                if e.arrival > db.written_upto() {
                    db.evicted_unwritten
                        .insert(Arc::clone(&e.dial.id), e.arrival);
                }
                db.outside.insert(store::id_key(&e.dial.id));
                if db.outside.len() > db.outside_rebuild_at {
                    db.rebuild_outside(self.cfg.capacity);
                }
            }
        }
    }

    fn prune(
        &mut self,
        now_ms: i64,
        reply: Option<oneshot::Sender<Result<usize, DialLogError>>>,
    ) -> u64 {
        let before = self.ring.len();
        let ring = std::mem::take(&mut self.ring);
        let mut kept = VecDeque::with_capacity(ring.len());
        for e in ring {
            if e.dial.expired_at(now_ms) {
                self.forget(e);
            } else {
                kept.push_back(e);
            }
        }
        self.ring = kept;
        if let Some(db) = self.db.as_mut() {
            db.send_pending(false);
            let _ = db.writer.send(WriterMsg::Prune { now_ms, reply });
        }
        (before - self.ring.len()) as u64
    }

    fn clear(
        &mut self,
        scope: ClearScope,
    ) -> Option<oneshot::Receiver<Result<usize, DialLogError>>> {
        let ring = std::mem::take(&mut self.ring);
        match scope {
            ClearScope::Memory => {
                for e in ring {
                    self.forget(e);
                }
                None
            }
            ClearScope::All => {
                self.ids.clear();
                for s in &mut self.subs {
                    s.pending.clear();
                    s.held_back = 0;
                }
                let db = self.db.as_mut()?;
                db.pending.clear();
                db.pending_since = None;
                db.evicted_unwritten.clear();
                db.outside.clear();
                let (tx, rx) = oneshot::channel();
                let _ = db.writer.send(WriterMsg::Clear { reply: tx });
                Some(rx)
            }
        }
    }

    fn shutdown(&mut self) -> Option<oneshot::Receiver<()>> {
        self.flush_due(Instant::now() + Duration::from_secs(3600));
        self.subs.clear();
        let mut db = self.db.take()?;
        db.send_pending(false);
        db.done.take()
        // `db` drops here: the writer's channel closes and the thread ends after its queue.
    }
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400)
}
