//! The actor's side of SQLite: the batch of persisting dials waiting for the writer thread,
//! and the dedup keys of the ids stored or on their way there (the file keeps no index of ids,
//! so the log remembers the newest of each phone's 64-bit keys instead: [`RecentKeys`]).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use foldhash::HashMap;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::recent::RecentKeys;
use crate::record::Dial;
use crate::store::{WriterMsg, WriterShared};

/// Batches the writer may have queued before the actor keeps further dials waiting itself.
const MAX_WRITER_BATCHES_IN_FLIGHT: u64 = 4;

pub(super) struct Db {
    pub(super) writer: std::sync::mpsc::Sender<WriterMsg>,
    pub(super) shared: Arc<WriterShared>,
    pub(super) pending: Vec<Arc<Dial>>,
    /// What `pending` counts in [`WriterShared::unwritten_bytes`].
    pub(super) pending_bytes: u64,
    pub(super) pending_since: Option<Instant>,
    pub(super) pending_upto: u64,
    /// Persisting dials that left the ring before the writer committed them: id -> arrival.
    pub(super) evicted_unwritten: HashMap<Arc<str>, u64>,
    /// Keys ([`crate::store::id_key`], 64-bit hashes) of each phone's newest stored ids that are not
    /// in the ring: the dedup check for ids in SQLite. Two different ids share a key with
    /// probability about 2^-64 per pair, so treating a known key as a replay wrongly drops
    /// about one dial in 10^13 for a million kept; the file has no id index to keep up instead
    /// ([`store`]).
    pub(super) outside: RecentKeys,
    pub(super) done: Option<oneshot::Receiver<()>>,
}

impl Db {
    /// Stored rows up to this rowid are written and indexed: SQL answers for them.
    pub(super) fn sql_upto(&self) -> u64 {
        self.shared.indexed_upto.load(Ordering::Acquire)
    }

    pub(super) fn written_upto(&self) -> u64 {
        self.shared.written_upto.load(Ordering::Acquire)
    }

    /// Hands the waiting batch to the writer (unless `only_if_room` and the writer is busy).
    pub(super) fn send_pending(&mut self, only_if_room: bool) {
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

    /// Whether `id` (not in the ring; `key` is its [`crate::store::id_key`]) is stored or on its way
    /// to SQLite.
    pub(super) fn seen(&self, id: &str, key: i64) -> bool {
        self.evicted_unwritten.contains_key(id) || self.outside.contains(key)
    }
}
