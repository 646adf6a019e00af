//! The actor: the ring of held dials and its id set, the interner, the subscribers, the
//! connection events held and the counters, with what ingest and each [`Command`] do to them.
//! It runs under [`Shared`]'s lock, in the log's task or (ingest) in the caller's.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use std::hash::BuildHasher as _;

use hashbrown::HashTable;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::super::config::{held_bytes, ClearScope, DialLogConfig, DialLogStatus, IngestVerdict};
use super::super::interning::Interner;
use super::super::subscribers::{Sub, Subscription};
#[cfg(doc)]
use super::{load, Shared};
use super::{Command, Db};
use crate::history::ConnectionEvent;
use crate::query::{run_query, run_stats, DialPage, Matcher};
use crate::record::{Arrival, Dial, Seq};
use crate::store::{self, WriterMsg};
use crate::DialLogError;

/// Connection events held in memory (the newest; the rest are in SQLite).
const HELD_CONNECTION_EVENTS: usize = 1000;

pub(super) struct Entry {
    pub(super) arrival: u64,
    pub(super) dial: Arc<Dial>,
    /// The id's hash in [`Actor::ids`], kept so evicting the entry does not hash the id again.
    pub(super) id_hash: u64,
    /// The id's stored key ([`store::id_key`]), kept for the same reason.
    pub(super) id_key: i64,
}

/// The log's state: the ring and its id set, the interner, the SQLite side (`Db`), the
/// subscribers and the counters.
pub(in crate::log) struct Actor {
    pub(in crate::log) cfg: DialLogConfig,
    pub(super) ring: VecDeque<Entry>,
    /// What the ring holds, as [`held_bytes`] counts it (at most `cfg.max_bytes`).
    pub(super) ring_bytes: usize,
    /// The ids of the dials in the ring, hashed with `id_hasher` (the hash is kept in each
    /// [`Entry`]).
    pub(super) ids: HashTable<Arc<str>>,
    pub(super) id_hasher: foldhash::fast::RandomState,
    pub(super) interner: Interner,
    pub(super) next_arrival: u64,
    /// Arrival number of the newest persisting dial handed to the SQLite side (0: none yet, or
    /// no SQLite).
    pub(in crate::log) stored_mark: u64,
    pub(super) db: Option<Db>,
    pub(super) subs: Vec<Sub>,
    pub(super) status: DialLogStatus,
    /// The newest connection events, oldest first.
    pub(super) conns: VecDeque<ConnectionEvent>,
    /// The deadline the log's task sleeps until (`None`: it waits for a command or a wake
    /// only), as it last read [`Actor::next_deadline`]. Ingest wakes the task only when its
    /// next deadline comes before this one ([`Actor::deadline_moved_earlier`]).
    pub(in crate::log) armed: Option<Instant>,
}

impl Actor {
    pub(super) fn new(cfg: DialLogConfig) -> Self {
        let status = DialLogStatus {
            capacity: cfg.capacity as u64,
            ..DialLogStatus::default()
        };
        Self {
            ring: VecDeque::with_capacity(cfg.capacity.min(1 << 20)),
            ring_bytes: 0,
            ids: HashTable::with_capacity(cfg.capacity.min(1 << 20)),
            id_hasher: foldhash::fast::RandomState::default(),
            interner: Interner::default(),
            next_arrival: 1,
            stored_mark: 0,
            db: None,
            subs: Vec::new(),
            status,
            conns: VecDeque::new(),
            armed: None,
            cfg,
        }
    }

    /// Puts the loaded ring (`dials`, oldest first, already stored: each one's arrival is its
    /// rowid) and the stored dials' keys older than the ring (`(phone key, dial key)`, newest
    /// first, at most the window of each phone) in place ([`load`]).
    pub(super) fn install(&mut self, dials: Vec<Dial>, keys: Vec<(i64, i64)>) {
        for d in dials {
            let arrival = d.seq.0;
            let id_hash = self.id_hasher.hash_one(&*d.id);
            let id_key = store::id_key(&d.id);
            self.push_ring(d, arrival, id_hash, id_key);
        }
        if let Some(db) = self.db.as_mut() {
            db.outside.prepend_newest_first(keys);
        }
    }

    pub(super) fn next_deadline(&self) -> Option<Instant> {
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

    /// Whether the log's task must be woken to sleep until an earlier deadline than the one it
    /// armed; if so, that deadline is taken as armed. Why: ingest runs on its caller's task,
    /// and waking the log's task after every batch made a tokio worker wake (on a 2-CPU
    /// machine, often the other CPU) for a timer that had not moved.
    pub(in crate::log) fn deadline_moved_earlier(&mut self) -> bool {
        let next = self.next_deadline();
        let earlier = match (next, self.armed) {
            (Some(n), Some(a)) => n < a,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if earlier {
            self.armed = next;
        }
        earlier
    }

    /// Hands the waiting batch to the writer now if the writer has room (ingest waiting for
    /// room, [`Shared::room_for_ingest`]).
    pub(in crate::log) fn hand_to_writer(&mut self) {
        if let Some(db) = self.db.as_mut() {
            db.send_pending(true);
        }
    }

    pub(in crate::log) fn flush_due(&mut self, now: Instant) {
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

    pub(super) fn handle(&mut self, cmd: Command) {
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
                    s.disk_full = db.shared.disk_full.borrow().clone();
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

    /// Holds a connection event: gives it the next sequence number, keeps it in memory and
    /// queues it for SQLite.
    pub(in crate::log) fn record_connection(&mut self, mut ev: ConnectionEvent) -> u64 {
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

    /// Holds `dial` (and queues it for SQLite when it persists), unless it is a replay or has
    /// no id. `now_ms` (epoch milliseconds by the log's clock) is its time of arrival when
    /// whoever built it did not know it.
    pub(in crate::log) fn ingest(&mut self, mut dial: Dial, now_ms: i64) -> IngestVerdict {
        if dial.id.is_empty() {
            return IngestVerdict::Rejected("dial id (the event's dedup key) is empty".into());
        }
        // Each key of the id is computed once here and kept with the entry.
        let id_hash = self.id_hasher.hash_one(&*dial.id);
        let id_key = store::id_key(&dial.id);
        if self.ids.find(id_hash, |k| **k == *dial.id).is_some()
            || self.db.as_ref().is_some_and(|db| db.seen(&dial.id, id_key))
        {
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
        // The desktop's time of arrival, unless whoever built the dial already knew it.
        if dial.arrived.is_unknown() {
            dial.arrived = Arrival(Some(now_ms));
        }
        let dial = self.push_ring(dial, arrival, id_hash, id_key);
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

    fn push_ring(&mut self, dial: Dial, arrival: u64, id_hash: u64, id_key: i64) -> Arc<Dial> {
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
        let hasher = &self.id_hasher;
        self.ids
            .insert_unique(id_hash, Arc::clone(&dial.id), |k| hasher.hash_one(&**k));
        self.ring_bytes = self.ring_bytes.saturating_add(size);
        self.ring.push_back(Entry {
            arrival,
            dial: Arc::clone(&dial),
            id_hash,
            id_key,
        });
        dial
    }

    /// Drops a ring entry's id from the in-memory dedup set, remembering it while its write is
    /// still pending so a replay in that window is still caught.
    fn forget(&mut self, e: Entry) {
        self.ring_bytes = self.ring_bytes.saturating_sub(held_bytes(&e.dial));
        if let Ok(found) = self.ids.find_entry(e.id_hash, |k| **k == *e.dial.id) {
            found.remove();
        }
        if let Some(db) = self.db.as_mut() {
            if e.dial.retention.persists() {
                if e.arrival > db.written_upto() {
                    db.evicted_unwritten
                        .insert(Arc::clone(&e.dial.id), e.arrival);
                }
                db.outside.insert(store::id_key(&e.dial.phone), e.id_key);
            }
        }
    }

    pub(super) fn prune(
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

    pub(super) fn shutdown(&mut self) -> Option<oneshot::Receiver<()>> {
        self.flush_due(Instant::now() + Duration::from_secs(3600));
        self.subs.clear();
        let mut db = self.db.take()?;
        db.send_pending(false);
        db.done.take()
        // `db` drops here: the writer's channel closes and the thread ends after its queue.
    }
}
