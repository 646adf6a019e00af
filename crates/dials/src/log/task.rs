//! The log's own task: the actor that holds the ring, the dedup sets and the subscribers, and
//! the loop that answers the handle's commands, runs the subscribers' and the writer's timers
//! and prunes. [`super::DialLogHandle::ingest_batch`] calls [`Actor::ingest`] directly under the
//! lock, in the caller's task; everything else arrives here as a [`Command`].
//!
//! SQLite itself is written on the writer thread ([`crate::store`]); the actor only
//! queues batches for it and keeps the ids it has handed over (`Db`) for dedup.

use std::collections::VecDeque;

use foldhash::{HashMap, HashMapExt as _, HashSet, HashSetExt as _};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Instant, MissedTickBehavior};

use super::config::{held_bytes, ClearScope, DialLogConfig, DialLogStatus, IngestVerdict};
use super::interning::Interner;
use super::subscribers::{Sub, SubscribeOptions, Subscription};
use crate::filter::CompiledQuery;
use crate::history::{
    count_in_memory, merge_newest_first, page_in_memory, ConnectionEvent, HistoryEntry, MemRow,
};
use crate::query::{run_query, run_stats, DialFilter, DialPage, Matcher, OpStats};
use crate::record::{Dial, Seq};
use crate::store::{self, WriterMsg, WriterShared};
use crate::DialLogError;

/// Batches the writer may have queued before the actor keeps further dials waiting itself.
const MAX_WRITER_BATCHES_IN_FLIGHT: u64 = 4;

/// Connection events held in memory (the newest; the rest are in SQLite).
const HELD_CONNECTION_EVENTS: usize = 1000;

/// The ring's part of a history page, and what the SQLite part needs to know.
#[derive(Debug, Default)]
pub(crate) struct MemPart {
    /// Matching rows held in memory that SQLite does not answer for (transient dials, rows not
    /// yet written and indexed, connection events held), newest first, at most `limit`.
    pub entries: Vec<HistoryEntry>,
    /// Whether more in-memory rows match below the last one.
    pub more: bool,
    /// How many in-memory rows (of those) match in all, when asked.
    pub count: u64,
    /// The oldest time held in memory.
    pub oldest_ms: Option<i64>,
    /// The newest sequence number given.
    pub newest_seq: u64,
    /// Stored rows up to this rowid are answered by SQL (written and indexed); 0 for none.
    pub sql_upto: u64,
    /// Stored rows above `sql_upto` and below this are not held in memory: SQLite has them
    /// but they are not indexed yet, so they are read and matched in Rust. Equal to
    /// `sql_upto + 1` when there are none.
    pub gap_below: u64,
}

/// The in-memory part of the stats over the whole history: the dials SQLite does not answer
/// for (as [`MemPart`]) tallied, and where SQLite takes over.
#[derive(Debug, Default)]
pub(crate) struct MemStats {
    /// The matching dials held in memory that SQLite does not answer for.
    pub tally: crate::StatsTally,
    /// As [`MemPart::sql_upto`].
    pub sql_upto: u64,
    /// As [`MemPart::gap_below`].
    pub gap_below: u64,
}

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
                store::writer_loop(write, writer_path, wrx, writer_shared);
                let _ = done_tx.send(());
            })
            .map_err(|e| DialLogError::Storage(format!("starting the writer thread: {e}")))?;
        actor.db = Some(Db {
            read,
            writer: wtx,
            shared,
            pending: Vec::new(),
            pending_bytes: 0,
            pending_since: None,
            pending_upto: 0,
            evicted_unwritten: HashMap::new(),
            outside: HashSet::new(),
            // Filled by the loader ([`Actor::install`]); no rebuild before.
            outside_rebuild_at: usize::MAX,
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
        let loader = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("dial-log-loader".into())
            .spawn(move || load(&loader, &path, capacity, max_bytes))
            .map_err(|e| DialLogError::Storage(format!("starting the loader thread: {e}")))?;
    }
    tokio::spawn(run(Arc::clone(&shared), rx));
    Ok((tx, shared))
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

/// The loader thread: reads the newest `capacity` dials (within `max_bytes`) and every stored
/// dial's key ([`store::id_key`]) on a read-only connection of its own, then installs them
/// under the lock ([`Actor::install`]) and says so in [`Shared::loaded`]. Nothing is ingested
/// meanwhile (ingest waits), so what it read is still the whole stored set when it installs it.
fn load(shared: &Shared, path: &std::path::Path, capacity: usize, max_bytes: usize) {
    let read = || -> Result<(Vec<Dial>, HashSet<i64>), DialLogError> {
        let conn = Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| DialLogError::Storage(format!("opening {} to load: {e}", path.display())))?;
        let dials = store::load_newest(&conn, path, capacity, max_bytes)?;
        let mut keys = HashSet::new();
        store::for_each_id_key(&conn, |k| {
            keys.insert(k);
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

/// The log's state, shared by its task (commands, timers) and [`DialLogHandle::ingest_batch`],
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

struct Entry {
    arrival: u64,
    dial: Arc<Dial>,
}

struct Db {
    read: Connection,
    writer: std::sync::mpsc::Sender<WriterMsg>,
    shared: Arc<WriterShared>,
    pending: Vec<Arc<Dial>>,
    /// What `pending` counts in [`WriterShared::unwritten_bytes`].
    pending_bytes: u64,
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
    /// Stored rows up to this rowid are written and indexed: SQL answers for them.
    fn sql_upto(&self) -> u64 {
        self.shared.indexed_upto.load(Ordering::Acquire)
    }

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
        let bytes = std::mem::take(&mut self.pending_bytes);
        self.pending_since = None;
        self.shared.in_flight.fetch_add(1, Ordering::AcqRel);
        if self
            .writer
            .send(WriterMsg::Insert {
                dials,
                upto: self.pending_upto,
                bytes,
            })
            .is_err()
        {
            self.shared.in_flight.fetch_sub(1, Ordering::AcqRel);
            self.shared.sub_unwritten(bytes);
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

/// The log's state: the ring and its id set, the interner, the SQLite side (`Db`), the
/// subscribers and the counters.
pub(super) struct Actor {
    cfg: DialLogConfig,
    ring: VecDeque<Entry>,
    /// What the ring holds, as [`held_bytes`] counts it (at most `cfg.max_bytes`).
    ring_bytes: usize,
    ids: HashSet<Arc<str>>,
    interner: Interner,
    next_arrival: u64,
    /// Arrival number of the newest persisting dial handed to the SQLite side (0: none yet, or
    /// no SQLite).
    pub(super) stored_mark: u64,
    db: Option<Db>,
    subs: Vec<Sub>,
    status: DialLogStatus,
    /// The newest connection events, oldest first.
    conns: VecDeque<ConnectionEvent>,
}

impl Actor {
    fn new(cfg: DialLogConfig) -> Self {
        let status = DialLogStatus {
            capacity: cfg.capacity as u64,
            ..DialLogStatus::default()
        };
        Self {
            ring: VecDeque::with_capacity(cfg.capacity.min(1 << 20)),
            ring_bytes: 0,
            ids: HashSet::with_capacity(cfg.capacity.min(1 << 20)),
            interner: Interner::default(),
            next_arrival: 1,
            stored_mark: 0,
            db: None,
            subs: Vec::new(),
            status,
            conns: VecDeque::new(),
            cfg,
        }
    }

    /// Puts the loaded ring (`dials`, oldest first, already stored: each one's arrival is its
    /// rowid) and the stored dials' keys in place ([`load`]).
    fn install(&mut self, dials: Vec<Dial>, keys: HashSet<i64>) {
        for d in dials {
            let arrival = d.seq.0;
            self.push_ring(d, arrival);
        }
        if let Some(db) = self.db.as_mut() {
            let mut keys = keys;
            keys.extend(db.outside.drain());
            db.outside_rebuild_at = (keys.len() * 2).max(self.cfg.capacity);
            db.outside = keys;
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

    /// Hands the waiting batch to the writer now if the writer has room (ingest waiting for
    /// room, [`Shared::room_for_ingest`]).
    pub(super) fn hand_to_writer(&mut self) {
        if let Some(db) = self.db.as_mut() {
            db.send_pending(true);
        }
    }

    pub(super) fn flush_due(&mut self, now: Instant) {
        self.subs.retain_mut(|s| s.try_flush(now));
        let (batch, interval) = (self.cfg.db_batch_size, self.cfg.db_flush_interval);
        let batch_bytes = self.cfg.db_batch_bytes as u64;
        if let Some(db) = self.db.as_mut() {
            let due = db.pending.len() >= batch
                || db.pending_bytes >= batch_bytes
                || db.pending_since.is_some_and(|t| t + interval <= now);
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
                line,
                options,
                reply,
            } => {
                let snapshot = match &line {
                    // A line's view pages its history with `history`: no snapshot rows.
                    Some(_) => DialPage::default(),
                    None => run_query(self.ring.iter().map(|e| &e.dial), &filter),
                };
                let (tx, batches) =
                    mpsc::channel(options.queue.unwrap_or(self.cfg.subscriber_queue).max(1));
                self.subs.push(Sub {
                    filter,
                    line,
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
                if let Some(db) = self.db.as_ref() {
                    s.rows_written = db.shared.rows_written.load(Ordering::Relaxed);
                    s.unwritten_bytes = db.shared.unwritten_bytes.load(Ordering::Acquire);
                    s.peak_unwritten_bytes = db.shared.peak_unwritten_bytes.load(Ordering::Acquire);
                    s.disk_full = switchboard_wire::sync::lock(&db.shared.disk_full).clone();
                }
                let _ = reply.send(s);
            }
            Command::Shutdown { reply } => {
                let _ = reply.send(self.shutdown());
            }
            Command::History {
                query,
                before,
                limit,
                count,
                reply,
            } => {
                let _ = reply.send(self.history_part(&query, before, limit, count));
            }
            Command::HistoryStats { query, reply } => {
                let _ = reply.send(self.history_stats_part(&query));
            }
        }
    }

    /// Stored rows SQL answers for (up to `sql_upto`) and the first rowid above the
    /// not-yet-indexed gap SQLite holds outside the ring (see [`MemPart`]).
    fn sql_bounds(&self) -> (u64, u64) {
        let sql_upto = self.db.as_ref().map_or(0, |db| db.sql_upto());
        let ring_floor = self.ring.front().map_or(self.next_arrival, |e| e.arrival);
        let gap_below = if self.db.is_some() {
            ring_floor.max(sql_upto + 1)
        } else {
            sql_upto + 1
        };
        (sql_upto, gap_below)
    }

    /// The in-memory part of the stats over the whole history (see [`MemStats`]).
    fn history_stats_part(&self, q: &CompiledQuery) -> MemStats {
        let (sql_upto, gap_below) = self.sql_bounds();
        let mut tally = crate::StatsTally::default();
        if q.dials {
            for e in &self.ring {
                let mine = !e.dial.retention.persists() || e.arrival > sql_upto;
                if mine && q.matches_dial(&e.dial) {
                    tally.add_dial(&e.dial);
                }
            }
        }
        MemStats {
            tally,
            sql_upto,
            gap_below,
        }
    }

    /// Holds a connection event: gives it the next sequence number, keeps it in memory and
    /// queues it for SQLite.
    pub(super) fn record_connection(&mut self, mut ev: ConnectionEvent) -> u64 {
        let seq = self.next_arrival;
        self.next_arrival += 1;
        ev.seq = seq;
        if self.conns.len() >= HELD_CONNECTION_EVENTS {
            self.conns.pop_front();
        }
        if let Some(db) = self.db.as_mut() {
            let _ = db.writer.send(WriterMsg::Connection(ev.clone()));
        }
        self.conns.push_back(ev);
        seq
    }

    /// The in-memory part of a history page (see [`MemPart`]).
    fn history_part(&self, q: &CompiledQuery, before: u64, limit: usize, count: bool) -> MemPart {
        let (sql_upto, gap_below) = self.sql_bounds();
        // Dials SQLite does not answer for: transient ones, and any above `sql_upto`.
        let mine = |e: &&Entry| !e.dial.retention.persists() || e.arrival > sql_upto;
        let dials = self
            .ring
            .iter()
            .rev()
            .filter(mine)
            .map(|e| MemRow::Dial(&e.dial));
        let (d, d_more) = page_in_memory(dials, q, before, limit);
        let conns = self.conns.iter().rev().map(MemRow::Connection);
        let (c, c_more) = page_in_memory(conns, q, before, limit);
        let mut entries = merge_newest_first(d, c);
        let more = d_more || c_more || entries.len() > limit;
        entries.truncate(limit);
        let count = if count {
            count_in_memory(
                self.ring.iter().filter(mine).map(|e| MemRow::Dial(&e.dial)),
                q,
            ) + if self.db.is_none() {
                count_in_memory(self.conns.iter().map(MemRow::Connection), q)
            } else {
                // Held connection events are written at once: SQLite counts them.
                0
            }
        } else {
            0
        };
        let oldest_ms = self
            .ring
            .iter()
            .map(|e| e.dial.start_ms)
            .chain(self.conns.iter().map(|c| c.at_ms))
            .min();
        MemPart {
            entries,
            more,
            count,
            oldest_ms,
            newest_seq: self.next_arrival.saturating_sub(1),
            sql_upto,
            gap_below,
        }
    }

    pub(super) fn ingest(&mut self, mut dial: Dial) -> IngestVerdict {
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
        dial.session = self.interner.intern(&dial.session);
        let arrival = self.next_arrival;
        self.next_arrival += 1;
        dial.seq = Seq(arrival);
        let dial = self.push_ring(dial, arrival);
        self.status.ingested += 1;
        if !self.subs.is_empty() {
            for s in &mut self.subs {
                if Matcher::new(&s.filter).matches(&dial)
                    && s.line.as_ref().map_or(true, |l| l.matches_dial(&dial))
                {
                    s.push(&dial);
                }
            }
        }
        if dial.retention.persists() {
            if let Some(db) = self.db.as_mut() {
                let bytes = held_bytes(&dial) as u64;
                db.pending.push(dial);
                db.pending_bytes += bytes;
                db.shared.add_unwritten(bytes);
                db.pending_upto = arrival;
                self.stored_mark = arrival;
                db.pending_since.get_or_insert_with(Instant::now);
            }
        }
        IngestVerdict::Held
    }

    fn push_ring(&mut self, dial: Dial, arrival: u64) -> Arc<Dial> {
        let dial = Arc::new(dial);
        let size = held_bytes(&dial);
        while self.ring.len() >= self.cfg.capacity
            || (!self.ring.is_empty() && self.ring_bytes.saturating_add(size) > self.cfg.max_bytes)
        {
            match self.ring.pop_front() {
                Some(old) => {
                    self.forget(old);
                    self.status.evicted += 1;
                }
                None => break,
            }
        }
        self.ids.insert(Arc::clone(&dial.id));
        self.ring_bytes = self.ring_bytes.saturating_add(size);
        self.ring.push_back(Entry {
            arrival,
            dial: Arc::clone(&dial),
        });
        dial
    }

    /// Drops a ring entry's id from the in-memory dedup set, remembering it while its write is
    /// still pending so a replay in that window is still caught.
    fn forget(&mut self, e: Entry) {
        self.ring_bytes = self.ring_bytes.saturating_sub(held_bytes(&e.dial));
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
        self.conns.retain(|c| {
            c.at_ms
                .saturating_add(crate::history::CONNECTION_EVENT_MAX_AGE_MS)
                > now_ms
        });
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
        self.ring_bytes = 0;
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
                if !db.pending.is_empty() {
                    // Cleared before they were written: they count as done, so the durable
                    // watermark (and the acknowledgements waiting on it) moves past them.
                    db.shared.in_flight.fetch_add(1, Ordering::AcqRel);
                    let moved = db.writer.send(WriterMsg::Insert {
                        dials: Vec::new(),
                        upto: db.pending_upto,
                        bytes: 0,
                    });
                    if moved.is_err() {
                        db.shared.in_flight.fetch_sub(1, Ordering::AcqRel);
                    }
                }
                db.shared
                    .sub_unwritten(std::mem::take(&mut db.pending_bytes));
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
